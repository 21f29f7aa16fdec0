"""Event times: a synthetic clock for reproducible runs, the wall clock for paced ones.

Formatting a timestamp per event is a measurable share of generation time, so the
`YYYY-MM-DDTHH:MM:SS.` prefix is built once per second and only the milliseconds change.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

from streamops.pipeline.exceptions import PipelineConfigError

DEFAULT_START_TIME = "2026-01-01T00:00:00Z"


def parse_start_time(text: str) -> datetime:
    """An ISO-8601 instant; one without an offset is taken as UTC."""
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise PipelineConfigError(f"--start-time `{text}` is not ISO-8601: use e.g. {DEFAULT_START_TIME}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


class _MillisFormatter:
    def __init__(self) -> None:
        self._second = -1
        self._prefix = ""

    def __call__(self, epoch_ms: int) -> str:
        second, millis = divmod(epoch_ms, 1000)
        if second != self._second:
            self._second = second
            self._prefix = datetime.fromtimestamp(second, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.")
        return f"{self._prefix}{millis:03d}Z"


class SyntheticClock:
    """Line `ordinal` of `total` happens `ordinal / total` of the way through `span_seconds`."""

    def __init__(self, start: datetime, span_seconds: float, total: int) -> None:
        self._start_ms = round(start.timestamp() * 1000)
        self._span_ms = round(span_seconds * 1000)
        self._total = max(total, 1)
        self._format = _MillisFormatter()

    def __call__(self, ordinal: int) -> str:
        return self._format(self._start_ms + ordinal * self._span_ms // self._total)


class WallClock:
    """The time the event is generated: what freshness (event time to commit) is measured from."""

    def __init__(self) -> None:
        self._format = _MillisFormatter()

    def __call__(self, ordinal: int) -> str:
        return self._format(time.time_ns() // 1_000_000)
