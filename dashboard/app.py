"""Dashboard entry point (placeholder until the dashboard issue lands)."""

import streamlit as st

st.set_page_config(page_title="MA-RAG", layout="wide")
st.title("MA-RAG clinician dashboard")
st.info("The dashboard pages are under construction.")
