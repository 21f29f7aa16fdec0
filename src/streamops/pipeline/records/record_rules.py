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

CdcQuarantineReason = Literal["cdc_not_a_change", "cdc_missing_key", "cdc_missing_position", "cdc_missing_sequence"]
"""Why a record read with `--cdc debezium` (pipeline/cdc/debezium_envelope.py) cannot be applied,
after the line rules above (a CDC line is judged by them first, except the event rules 7-8,
whose `event_type` is the source table's name): not a Debezium row change (no `op` c/u/d/r/t,
no `source` table, no row image where the op needs one), no key for its table, no source
position to order it by, or, for a table ordered by a column (`--cdc-sequence`), no usable value
of it. Only the Python classifier reads CDC records."""
CDC_QUARANTINE_REASONS: tuple[str, ...] = get_args(CdcQuarantineReason)

TOMBSTONE_DETAIL = "a Kafka record without a value (the delete marker of its key)"
"""A line that is not there at all: only a Kafka record can have no value."""

MAX_RECORD_BYTES = 1_048_576
"""Lines longer than this go to quarantine as `too_large` (1 MiB, as many brokers cap messages;
`streamops run --max-record-bytes`). Bronze keeps at most this many bytes plus one of any line
(bronze/line_sources.py), so a longer line costs no more memory than the limit."""


def too_large_detail(line_bytes: int, limit: int, line_offset: int | None = None) -> str:
    """The detail of a `too_large` line: its whole length and, in a file, where it starts."""
    where = "" if line_offset is None else f" at byte offset {line_offset}"
    return f"{line_bytes} bytes > limit {limit}{where}"


MAX_DEPTH = 32
"""Objects nested deeper than this go to quarantine as `too_deep`: they cannot become columns."""

UTF8_BOM = b"\xef\xbb\xbf"
"""A leading byte order mark is dropped (the payload starts at the JSON); anywhere else it is text."""

EVENT_TYPE_FIELD = "event_type"
EVENT_ID_FIELD = "event_id"
EVENT_TIME_FIELD = "event_time"
