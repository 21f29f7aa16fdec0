"""How urgent each stream status is, defined once: the order every list follows (worst first)
and the colour every view paints it, so `streamops status`, the console and the Grafana
dashboards cannot disagree about what needs a human.

Colours carry meaning and only that: red is "a human must act now", orange is "watch it",
everything else stays quiet. They are named as Streamlit and Grafana both name them; each view
spells the neutral `gray` its own way.
"""

from __future__ import annotations

from typing import Literal, get_args

StreamStatus = Literal["ok", "idle", "lagging", "stalled", "failed", "stopped"]
"""What a stream is doing, judged by `status_rules`; the exporter's `streamops_stream_status`
stateset has one state per value."""
STREAM_STATUSES: tuple[str, ...] = get_args(StreamStatus)
StatusColor = Literal["red", "orange", "gray", "green", "blue"]

SEVERITY: tuple[StreamStatus, ...] = ("failed", "stalled", "lagging", "stopped", "ok", "idle")
"""Worst first: the order of the fleet table, the status summary and the console's filters."""
ATTENTION: tuple[StreamStatus, ...] = ("failed", "stalled")
"""A human must act now: shown red and listed above everything else."""
WARNING: tuple[StreamStatus, ...] = ("lagging",)
"""Watch it: shown orange."""
STATUS_COLOR: dict[StreamStatus, StatusColor] = {
    "failed": "red",
    "stalled": "red",
    "lagging": "orange",
    "stopped": "gray",
    "ok": "green",
    "idle": "blue",
}


def status_color(status: str) -> StatusColor:
    """The colour of `status`; a status this version does not know stays neutral."""
    return STATUS_COLOR.get(status, "gray")  # type: ignore[arg-type]
