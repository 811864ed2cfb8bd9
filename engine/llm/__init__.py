"""LLM backends behind one small interface (`engine.llm.base.LLM`)."""
