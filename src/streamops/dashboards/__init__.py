"""Grafana dashboards and alert rules as code, Prometheus rules (`streamops[dashboards]`), and
the Streamlit ops console (`streamops.dashboards.console`, `streamops[console]`)."""

from streamops.core.public_names import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {"build_files": "build", "write_files": "build"})
