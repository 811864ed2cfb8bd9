"""Thin Streamlit pages served by dashboard/app.py through st.navigation (not auto-discovered)."""
