"""The agents of the pipeline: domain (motor, adl, nonmotor, qol), comparison, cohort, final.

Each agent computes its facts in code (common.py, comparison.py, cohort.py, final.py) and builds the
LLM request that asks only for prose around those facts.
"""
