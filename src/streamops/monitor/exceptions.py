"""Errors the monitor raises for conditions a user can fix."""

from __future__ import annotations

from streamops.core.exceptions import StreamopsError


class MonitorError(StreamopsError):
    """The monitor cannot do what was asked (bad setting, port in use, monitor not started)."""


class ProgressLogNotFoundError(MonitorError):
    """`streamops status` was pointed at a lake whose progress log does not exist (yet)."""


class ProgressEventError(MonitorError):
    """A recorded listener event is not the JSON Spark writes for that event."""
