"""The exported report of a run: one model (model.py) built once from a Result, and two writers
that render only that model (markdown_writer.py, html_writer.py). dashboard/export.py is the
entry point the pages call."""
