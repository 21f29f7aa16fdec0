"""What every console page shares: opening the lake, the sidebar, and how values read.

Colours carry meaning and only that (monitor/status_severity.py): red is "a human must act now"
(failed, stalled, errors), orange is "watch it" (lagging, warnings), everything else stays quiet.
"""

from __future__ import annotations

import re
from pathlib import Path

import streamlit as st

from streamops.core.exceptions import StreamopsError
from streamops.core.lake_layout import LakeLayout
from streamops.dashboards.console import lake_reads
from streamops.monitor.status_severity import status_color

SEVERITY_MARKDOWN_COLOR = {"error": "red", "warning": "orange", "info": "blue"}
PAGE_DIR = Path(__file__).parent


def page_path(name: str) -> str:
    """A page script of the console (they live beside this module), as `st.switch_page` takes it."""
    return str(PAGE_DIR / name)


def open_lake() -> LakeLayout:
    """The console's lake, with the sidebar drawn; stops the page with one line if it is unusable."""
    try:
        lake = lake_reads.console_lake()
    except StreamopsError as error:
        st.error(str(error))
        st.stop()
    with st.sidebar:
        st.caption("Lake (read-only)")
        st.code(str(lake.root), language=None)
        if st.button("Refresh now", help=f"Reads are cached for {lake_reads.CACHE_SECONDS} s"):
            st.cache_data.clear()
        st.caption(f"Data is re-read at most every {lake_reads.CACHE_SECONDS} s.")
    return lake


MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>:$])")


def plain(text: str) -> str:
    """Text from the lake (exception messages, reasons) shown literally inside Streamlit markdown:
    no link, image, colour directive or formatting can be smuggled in through a record."""
    return MARKDOWN_SPECIALS.sub(r"\\\1", text)


def code_span(text: str) -> str:
    """Text from the lake (a path, a topic) as inline code: nothing inside a code span formats,
    so only a backtick, which would end it, is replaced."""
    return "`" + text.replace("`", "'") + "`"


def status_badge(status: str) -> str:
    return f":{status_color(status)}[**{status.upper()}**]"


def severity_badge(severity: str | None) -> str:
    if severity is None:
        return ":green[**HEALTHY**]"
    return f":{SEVERITY_MARKDOWN_COLOR[severity]}[**{severity.upper()}**]"
