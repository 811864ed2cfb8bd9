"""The router (route_after_retrieve): a pure function from the intent to the next node.

No language model: the closed set of intents maps to exactly one branch.
"""

from __future__ import annotations

from engine.state import NodeContext, State

ROUTES: dict[str, str] = {
    "comparison": "comparison_agent",
    "trajectory": "domain_agents",
    "single_session": "domain_agents",
    "cohort": "cohort_agent",
}


def route_after_retrieve(intent: str) -> str:
    """comparison -> comparison agent; trajectory/single_session -> domain agents; cohort -> cohort."""
    try:
        return ROUTES[intent]
    except KeyError:
        raise ValueError(
            f"unknown intent {intent!r}; expected one of {', '.join(ROUTES)}"
        ) from None


def route_node(state: State, _ctx: NodeContext) -> dict:
    """The router node: the next node for the state's intent (the node interface passes a context
    it does not need)."""
    return {"next_node": route_after_retrieve(state.intent)}
