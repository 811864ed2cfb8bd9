"""The link from a summary sentence to the Provenance page, and the release it names.

The hover of a cited sentence (dashboard.cited_sentences) links to
`provenance?release=N&sentence=S`: N is the audit entry of the release (dashboard.trail), S the
offset of the sentence in the summary. A link opens a new browser session, which holds no result,
so the Provenance page reopens release N from the audit trail, exactly as stored
(dashboard.stored_result), when this session does not hold it: only for the person it was released
to or a reviewer, and never recorded again (it is the same release). The page then lists the
sentence's statements with their values, fact rows and KB documents, and traces its first number.
No id of a statement is written in the link or shown in the released text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from engine.types import Result

RELEASE = "release"
SENTENCE = "sentence"
#: the Provenance page's URL path (dashboard/app.py), relative to the app's base path
PAGE = "provenance"


def href(release: int | None, sentence: int) -> str:
    """The Provenance link of the sentence starting at offset `sentence` of release `release`."""
    params: dict[str, int] = {} if release is None else {RELEASE: release}
    params[SENTENCE] = sentence
    return f"{PAGE}?{urlencode(params)}"


def _int(value: Any) -> int | None:
    try:
        n = int(str(value))
    except ValueError:
        return None
    return n if n >= 0 else None


def requested(params: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """(release, sentence) of a link's query parameters; None for one absent or not a number."""
    return _int(params.get(RELEASE, "")), _int(params.get(SENTENCE, ""))


def may_open(entry: Any, user: str, roles: frozenset[str]) -> bool:
    """Whether this person may reopen the stored release `entry` (an audit entry): a result
    released to them, or any release for a reviewer; only result releases (ask) qualify."""
    if entry is None or entry.action != "ask" or not isinstance(entry.result, dict):
        return False
    return entry.user == user or "reviewer" in roles


def open_release(entry_id: int) -> tuple[Result | None, str]:
    """Release `entry_id` as a Result of this session (current, and known to the audit trail as
    that release), or (None, why not) in plain words."""
    from dashboard import session, stored_result, trail
    from engine.audit.errors import AuditError

    try:
        entry = trail.store().get(entry_id)
    except AuditError as e:
        return None, f"the audit trail is unavailable ({e})"
    ident = trail.identity()
    if not may_open(entry, ident.user, ident.roles):
        return None, f"release #{entry_id} is not a result released to you"
    result = stored_result.result_from_json(entry.result)
    if result is None:
        return None, f"release #{entry_id} is stored in a shape this version does not read"
    trail.adopt_release(result, entry_id)
    session.store_result(result.plan, result.backend or entry.backend or "", result)
    return result, ""
