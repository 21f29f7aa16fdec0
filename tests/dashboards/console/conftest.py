"""Helpers to open the console with Streamlit's AppTest on a lake (the real lake the console's
tests read is the session's `built_lake`, tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamops.core.lake_layout import LakeLayout
from streamops.dashboards.console import APP_PATH, LAKE_ENV


@pytest.fixture
def console(monkeypatch):
    """Opens the console app (AppTest) on a lake: `console(lake).run()`; caches start empty."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    def open_on(lake: LakeLayout | Path) -> AppTest:
        root = lake.root if isinstance(lake, LakeLayout) else lake
        monkeypatch.setenv(LAKE_ENV, str(root))
        st.cache_data.clear()
        st.cache_resource.clear()
        return AppTest.from_file(str(APP_PATH), default_timeout=60)

    return open_on
