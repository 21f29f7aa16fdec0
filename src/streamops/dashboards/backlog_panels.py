"""A stream's backlog in its four dimensions, as the fleet and the stream dashboards both draw it.

Versions, files, bytes and seconds answer different questions (how many commits, how much work,
how old), so each gets its own panel; defining them once keeps the two dashboards reading the
same series under the same words.
"""

from __future__ import annotations

from streamops.core.extras import require

require("dashboards", __name__)

from grafana_foundation_sdk.builders.dashboard import Dashboard

from streamops.dashboards import panels, promql
from streamops.monitor.metric_catalog import BACKLOG_BYTES, BACKLOG_FILES, BACKLOG_SECONDS, BACKLOG_VERSIONS, MetricSpec

BACKLOG_DIMENSIONS: tuple[tuple[str, str, str, MetricSpec], ...] = (
    ("Backlog (seconds)", "Age of the oldest unprocessed source commit (0 when caught up).", "s", BACKLOG_SECONDS),
    ("Backlog (versions)", "Source Delta versions not yet processed.", "none", BACKLOG_VERSIONS),
    ("Backlog (files)", "Source files not yet processed.", "none", BACKLOG_FILES),
    ("Backlog (bytes)", "Source bytes not yet processed.", "bytes", BACKLOG_BYTES),
)
"""Title, description, unit and metric of each panel, in the order they are laid out."""


def with_backlog_panels(builder: Dashboard, scope: promql.Scope, widths: tuple[int, int, int, int]) -> Dashboard:
    """`builder` with one time series per dimension, one line per stream in `scope`."""
    for (title, description, unit, spec), width in zip(BACKLOG_DIMENSIONS, widths):
        builder = builder.with_panel(
            panels.series_panel(title, description, unit, promql.per_stream(spec, scope), "{{stream}}", width)
        )
    return builder
