"""How long a Delta table keeps what a lagging stream still has to read.

Two table properties bound it (Delta's defaults when unset):

- `delta.deletedFileRetentionDuration` (1 week): VACUUM may delete a data file once it has been
  removed from the table for this long, whether or not a stream has read it yet;
- `delta.logRetentionDuration` (30 days): log cleanup may drop commit JSONs older than this, and a
  stream positioned before them cannot restart.

Values are Delta's calendar intervals (`interval 7 days`, `interval 1 week 12 hours`); months and
years are refused, as Delta refuses them for these properties (their length varies).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from streamops.core.exceptions import StreamopsError

DELETED_FILE_RETENTION_KEY = "delta.deletedFileRetentionDuration"
LOG_RETENTION_KEY = "delta.logRetentionDuration"
DEFAULT_DELETED_FILE_RETENTION_SECONDS = 7 * 24 * 3600.0
DEFAULT_LOG_RETENTION_SECONDS = 30 * 24 * 3600.0

_UNIT_SECONDS = {
    "nanosecond": 1e-9,
    "microsecond": 1e-6,
    "millisecond": 1e-3,
    "second": 1.0,
    "minute": 60.0,
    "hour": 3600.0,
    "day": 86400.0,
    "week": 604800.0,
}
_PART = re.compile(r"([+-]?\d+(?:\.\d+)?)\s*([a-z]+?)s?\b")


class RetentionSettingError(StreamopsError):
    """A retention property holds something that is not a Delta interval."""


def interval_seconds(text: str, key: str = "interval") -> float:
    """Seconds in a Delta calendar interval such as `interval 1 week 2 days` (`interval` optional)."""
    value = text.strip().lower()
    value = value[len("interval") :].strip() if value.startswith("interval") else value
    parts = _PART.findall(value)
    if not parts or _PART.sub("", value).strip():
        raise RetentionSettingError(
            f"{key}={text!r} is not a Delta interval: write it as `interval 7 days` (units up to weeks)"
        )
    total = 0.0
    for number, unit in parts:
        if unit not in _UNIT_SECONDS:
            raise RetentionSettingError(
                f"{key}={text!r} uses the unit `{unit}`: use seconds, minutes, hours, days or weeks"
            )
        total += float(number) * _UNIT_SECONDS[unit]
    return total


@dataclass(frozen=True)
class TableRetention:
    """A table's two retention periods, in seconds."""

    deleted_files_seconds: float = DEFAULT_DELETED_FILE_RETENTION_SECONDS
    log_seconds: float = DEFAULT_LOG_RETENTION_SECONDS

    @classmethod
    def from_configuration(cls, configuration: Mapping[str, str | None]) -> TableRetention:
        """From a table's `metaData.configuration` (delta-rs `DeltaTable.metadata().configuration`)."""
        files = configuration.get(DELETED_FILE_RETENTION_KEY)
        log = configuration.get(LOG_RETENTION_KEY)
        return cls(
            interval_seconds(files, DELETED_FILE_RETENTION_KEY) if files else DEFAULT_DELETED_FILE_RETENTION_SECONDS,
            interval_seconds(log, LOG_RETENTION_KEY) if log else DEFAULT_LOG_RETENTION_SECONDS,
        )

    def headroom(self, committed_ms: int, now: float) -> RetentionHeadroom:
        """Seconds left before each retention can remove what a commit made at `committed_ms` holds."""
        age = now - committed_ms / 1000.0
        return RetentionHeadroom(self.deleted_files_seconds - age, self.log_seconds - age)


@dataclass(frozen=True)
class RetentionHeadroom:
    """Seconds until VACUUM may delete the oldest unread files (`files`) and until log cleanup may
    drop the oldest unread commit (`log`); negative once that moment has passed."""

    files: float
    log: float

    @property
    def least(self) -> float:
        return min(self.files, self.log)
