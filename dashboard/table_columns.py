"""How the pages show a table: labels instead of snake_case, whole numbers for ids and visits,
scores with their decimals, blanks instead of None, and a help text per known column
(st.column_config). Display only: the frames themselves (dashboard.tables) and their CSV exports
keep their column names and values.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

#: column -> (label, format or None for text, help)
COLUMNS: dict[str, tuple[str, str | None, str]] = {
    "patient": ("Patient", "%d", "Patient id (proj_id) in the knowledge base"),
    "visit": ("Visit", "%d", "Visit number of the patient's assessment"),
    "from_visit": ("From visit", "%d", "The visit the change is measured from"),
    "date": ("Date", None, "Assessment date"),
    "instrument": ("Instrument", None, "MDS-UPDRS or PDQ-8"),
    "domain": ("Domain", None, "Part of the instrument"),
    "score": ("Score", "%g", "Domain score (sum of its items)"),
    "delta": ("Change", "%+g", "Change from the previous selected visit"),
    "cumulative": ("Since first", "%+g", "Change from the patient's first selected visit"),
    "change": ("Verdict", None, "Against the domain's MCID: improved, worsened or stable"),
    "missing": ("Missing items", "%d", "Items missing from the domain sum (partial when > 0)"),
    "missing_items": ("Missing items", "%d", "Items missing from the domain sum"),
    "condition": ("Condition", None, "Medication state at the assessment, when recorded"),
    "profile": ("Profile", None, "The item profile the session was read with"),
    "doc_id": ("KB document", None, "The knowledge-base document the row comes from"),
    "items": ("Items", None, "Item scores as JSON"),
    "rank": ("Rank", "%d", "Position in the ranking"),
    "value": ("Value", "%g", "The ranked statistic's value"),
    "visits": ("Assessments", "%d", "Assessments the statistic uses"),
    "n_patients": ("Patients", "%d", "Patients the statistic covers"),
    "slope_per_visit": ("Slope per assessment", "%.2f", "Least-squares slope per assessment"),
    "slope_per_year": ("Slope per year", "%.2f", "Least-squares slope per year of follow-up"),
    "slope_visit": ("Slope per assessment", "%.2f", "Least-squares slope per assessment"),
    "slope_year": (
        "Slope per year",
        "%.2f",
        "Least-squares slope per year (blank: too few "
        "assessments or too short a span for a rate per year)",
    ),
    "n_visits": ("Assessments", "%d", "Assessments the statistic uses"),
    "first_visit": ("First visit", "%d", "The first assessment of the change"),
    "last_visit": ("Last visit", "%d", "The latest assessment of the change"),
    "relevance": ("Relevance", "%.3f", "Fused search score (BM25, dense and concept ranks)"),
    "why": ("Why", None, "Why the session matched: concepts, words, ranks"),
    "abs_slope": ("Absolute slope", "%.2f", "Size of the slope, either direction"),
    "distance": ("Distance", "%.3f", "Distance between the two patients' feature vectors"),
    "file": ("File", None, "Source file"),
    "row": ("Row", "%d", "Line of the source file"),
    "rule": ("Rule", None, "The validation rule"),
    "usable scores": ("Usable scores", "%d", "Scores of the ranked domain without a caveat"),
    "why not ranked": ("Why not ranked", None, "The ranking rule the patient does not meet"),
}


def column_config(df: pd.DataFrame, *, formats: bool = True) -> dict[str, Any]:
    """st.column_config for every column of `df`: known ones by COLUMNS, others by their name
    with underscores as spaces; `formats=False` keeps the values as given (a Styler's)."""
    out: dict[str, Any] = {}
    for col in df.columns:
        label, fmt, help_text = COLUMNS.get(
            str(col), (str(col).replace("_", " ").capitalize(), None, "")
        )
        if not formats:
            out[col] = st.column_config.Column(label, help=help_text or None)
            continue
        numeric = fmt is not None and pd.api.types.is_numeric_dtype(df[col])
        if numeric:
            out[col] = st.column_config.NumberColumn(label, format=fmt, help=help_text or None)
        else:
            out[col] = st.column_config.TextColumn(label, help=help_text or None)
    return out


def display_frame(df: pd.DataFrame) -> pd.DataFrame:
    """`df` for the screen: None / NaN in text columns as blanks."""
    out = df.copy()
    for col in out.columns:
        if not pd.api.types.is_numeric_dtype(out[col]):
            out[col] = out[col].map(lambda v: "" if v is None or v != v else v)
    return out


def show_table(data: Any, **kw: Any) -> None:
    """st.dataframe with labels, formats and help (a DataFrame or a pandas Styler)."""
    from pandas.io.formats.style import Styler

    if isinstance(data, Styler):  # its own formats (blanks, whole numbers) are kept
        st.dataframe(data, column_config=column_config(data.data, formats=False), **kw)
        return
    df = data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)
    st.dataframe(display_frame(df), column_config=column_config(df), **kw)
