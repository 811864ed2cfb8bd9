"""Knowledge-base side of the product: instrument profiles, ingest and validation of session CSVs,
the synthetic cohort, per-visit documents and the persistent Chroma store.

Nothing in this package reads configuration or the environment: callers pass paths and options.
"""
