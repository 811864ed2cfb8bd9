"""The MA-RAG engine: plan, retrieve, route, agents, final agent, grounding, LLM backends, CLI."""
