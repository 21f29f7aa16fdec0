"""The Streamlit ops console (`streamops console`). Importing this package loads no Streamlit:
it only checks that the `console` extra is installed."""

from __future__ import annotations

from pathlib import Path

from streamops.core.extras import require

require("console", __name__)

LAKE_ENV = "STREAMOPS_CONSOLE_LAKE"
"""How `streamops console` tells the app which lake to show."""
APP_PATH = Path(__file__).with_name("app.py")
"""The entry script `streamlit run` is given."""
