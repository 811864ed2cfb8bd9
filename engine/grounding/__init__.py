"""Grounding: every number in generated text is checked in code against the run's ledger."""
