"""What makes an input line usable, and the reason recorded when it is not.

The generator produces one bad-record kind per bronze reason and the tests check the
quarantine table against its manifest, so reasons and limits are defined only here; both classifiers (pipeline/bronze/bronze_classifier.py and
pipeline/bronze/jvm/BronzeLineClassifier.java) apply them in the order of `QuarantineReason`.
"""

from __future__ import annotations

from typing import Literal, get_args

QuarantineReason = Literal[
    "tombstone",
    "empty_line",
    "too_large",
    "invalid_utf8",
    "too_deep",
    "malformed_json",
    "not_an_object",
    "missing_event_type",
    "invalid_event_type",
    "number_out_of_range",
    "duplicate_key",
    "unusable_key",
    "incompatible_type",
    "unprocessable",
]
QUARANTINE_REASONS: tuple[str, ...] = get_args(QuarantineReason)

TOMBSTONE_DETAIL = "a Kafka record without a value (the delete marker of its key)"
"""A line that is not there at all: only a Kafka record can have no value."""

MAX_RECORD_BYTES = 1_048_576
"""Lines longer than this go to quarantine as `too_large` (1 MiB, as many brokers cap messages)."""

MAX_DEPTH = 32
"""Objects nested deeper than this go to quarantine as `too_deep`: they cannot become columns."""

UTF8_BOM = b"\xef\xbb\xbf"
"""A leading byte order mark is dropped (the payload starts at the JSON); anywhere else it is text."""

EVENT_TYPE_FIELD = "event_type"
EVENT_ID_FIELD = "event_id"
EVENT_TIME_FIELD = "event_time"
