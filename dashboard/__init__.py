"""Streamlit dashboard: entry point, thin pages, pure Plotly chart builders."""
