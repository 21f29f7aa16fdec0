"""The streamops ops console: `streamops console --lake DIR` runs this file with Streamlit.

Each view is its own page script beside this file (run by Streamlit as `__main__`), so a view
has its own URL (`/stream?stream=silver_g0001`) an on-call engineer can paste into a ticket.
The console only reads: it writes nothing to the lake and binds 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import streamlit as st

from streamops.dashboards.console.page_shell import page_path

PAGES = (
    ("fleet_view.py", "Fleet", "fleet", ":material/monitoring:"),
    ("stream_view.py", "Stream", "stream", ":material/timeline:"),
    ("schema_view.py", "Schemas", "schemas", ":material/schema:"),
    ("quarantine_view.py", "Quarantine", "quarantine", ":material/block:"),
    ("expectations_view.py", "Expectations", "expectations", ":material/rule:"),
    ("groups_view.py", "Event groups", "groups", ":material/account_tree:"),
    ("cdc_view.py", "Change data capture", "cdc", ":material/sync_alt:"),
)

st.set_page_config(page_title="streamops console", page_icon=":material/monitoring:", layout="wide")
pages = [
    st.Page(page_path(file), title=title, url_path=url, icon=icon, default=index == 0)
    for index, (file, title, url, icon) in enumerate(PAGES)
]
st.navigation(pages, position="top").run()
