"""What makes an input line usable, and the reason recorded when it is not.

The generator produces one bad-record kind per reason below and the tests check the
quarantine table against its manifest, so reasons and limits are defined only here.
"""

from __future__ import annotations

from typing import Literal, get_args

QuarantineReason = Literal[
    "empty_line",
    "invalid_utf8",
    "too_large",
    "malformed_json",
    "not_an_object",
    "missing_event_type",
    "invalid_event_type",
    "too_deep",
    "incompatible_type",
]
QUARANTINE_REASONS: tuple[str, ...] = get_args(QuarantineReason)

MAX_RECORD_BYTES = 1_048_576
"""Lines longer than this go to quarantine as `too_large` (1 MiB, as many brokers cap messages)."""

MAX_DEPTH = 32
"""Objects nested deeper than this go to quarantine as `too_deep`: they cannot become columns."""

EVENT_TYPE_FIELD = "event_type"
EVENT_ID_FIELD = "event_id"
EVENT_TIME_FIELD = "event_time"
