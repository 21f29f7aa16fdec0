"""Lines that must end up in bronze quarantine, one kind per reason in `streamops.pipeline.records.record_rules`.

Each kind is built from a real event of the run, so apart from its one defect a bad line looks
like its neighbours (a truncated event, an event without `event_type`, an event with one bad
byte): the pipeline has to classify it, not spot an obvious fake.
"""

from __future__ import annotations

import random
from typing import Any, Literal, get_args

import orjson

from streamops.pipeline.records.record_rules import (
    EVENT_ID_FIELD,
    EVENT_TYPE_FIELD,
    MAX_DEPTH,
    MAX_RECORD_BYTES,
    QuarantineReason,
)

BadKind = Literal[
    "malformed_json",
    "json_array",
    "json_scalar",
    "missing_event_type",
    "invalid_event_type",
    "empty_line",
    "invalid_utf8",
    "too_large",
    "too_deep",
    "number_out_of_range",
    "duplicate_key",
    "unusable_key",
]
BAD_KINDS: tuple[BadKind, ...] = get_args(BadKind)

QUARANTINE_REASON_OF: dict[BadKind, QuarantineReason] = {
    "malformed_json": "malformed_json",
    "json_array": "not_an_object",
    "json_scalar": "not_an_object",
    "missing_event_type": "missing_event_type",
    "invalid_event_type": "invalid_event_type",
    "empty_line": "empty_line",
    "invalid_utf8": "invalid_utf8",
    "too_large": "too_large",
    "too_deep": "too_deep",
    "number_out_of_range": "number_out_of_range",
    "duplicate_key": "duplicate_key",
    "unusable_key": "unusable_key",
}

TOO_DEEP_DEPTH = MAX_DEPTH + 10
INVALID_EVENT_TYPES: tuple[Any, ...] = ("../../etc/passwd", "", "match start", "a/b", "-x", 42, True)
INVALID_UTF8_SEQUENCES = (b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xc0\xaf", b"\xfe\xfe", b"\xe2\x82")
BLANK_LINES = (b"", b" ", b"   ", b"\t", b" \t ")
JSON_SCALARS = (b"42", b"3.5", b'"match_start"', b"true", b"null")
OUT_OF_RANGE_NUMBERS = (b"9223372036854775808", b"-9223372036854775809", b"18446744073709551616", b"1e309", b"-2.5e400")
UNUSABLE_KEYS = ("", "Title_ID", "_rescued_data", "player__id")


def bad_record_count(total_lines: int, ratio: float) -> int:
    """round(N * ratio), raised so every bad kind occurs at least once, never above N."""
    if ratio <= 0:
        return 0
    return min(total_lines, max(round(total_lines * ratio), len(BAD_KINDS)))


def plan_bad_records(total_lines: int, ratio: float, rng: random.Random) -> dict[int, BadKind]:
    """Line ordinal -> bad kind: exactly one `too_large`, the other kinds in equal shares."""
    count = bad_record_count(total_lines, ratio)
    ordinals = rng.sample(range(total_lines), count)
    others: list[BadKind] = [kind for kind in BAD_KINDS if kind != "too_large"]
    kinds: list[BadKind] = ["too_large"]
    kinds += [others[i % len(others)] for i in range(count - 1)]
    return dict(zip(ordinals, kinds))


def render_bad_record(kind: BadKind, event: dict[str, Any], rng: random.Random) -> bytes:
    """The line (without its newline) for `kind`, derived from a valid `event` of the run."""
    if kind == "empty_line":
        return rng.choice(BLANK_LINES)
    if kind == "json_scalar":
        return rng.choice(JSON_SCALARS)
    if kind == "json_array":
        return orjson.dumps(rng.choice(([event], [1, 2, 3], [])))
    if kind == "missing_event_type":
        if rng.random() < 0.5:
            del event[EVENT_TYPE_FIELD]
        else:
            event[EVENT_TYPE_FIELD] = None
        return orjson.dumps(event)
    if kind == "invalid_event_type":
        event[EVENT_TYPE_FIELD] = rng.choice(INVALID_EVENT_TYPES)
        return orjson.dumps(event)
    if kind == "too_large":
        event["blob"] = "x" * (MAX_RECORD_BYTES + rng.randrange(1, 4096))
        return orjson.dumps(event)
    if kind == "too_deep":
        event["trace"] = _nested(TOO_DEEP_DEPTH)
        return orjson.dumps(event)
    if kind == "invalid_utf8":
        return _with_invalid_bytes(event, rng)
    if kind == "number_out_of_range":
        return orjson.dumps(event)[:-1] + b',"score":' + rng.choice(OUT_OF_RANGE_NUMBERS) + b"}"
    if kind == "duplicate_key":
        return orjson.dumps(event)[:-1] + b',"title_id":' + orjson.dumps(event["title_id"]) + b"}"
    if kind == "unusable_key":
        event[rng.choice(UNUSABLE_KEYS)] = 1
        return orjson.dumps(event)
    return _malformed(orjson.dumps(event), rng)


def _nested(depth: int) -> dict[str, Any]:
    """An object that is `depth` objects deep (itself included)."""
    node: dict[str, Any] = {"frame": depth}
    for level in range(depth - 1, 0, -1):
        node = {"frame": level, "caller": node}
    return node


def _with_invalid_bytes(event: dict[str, Any], rng: random.Random) -> bytes:
    """The event with a non-UTF-8 byte sequence inside its `event_id` string."""
    event_id = event[EVENT_ID_FIELD]
    line = orjson.dumps(event)
    quoted = orjson.dumps(event_id)
    cut = rng.randrange(1, len(quoted) - 1)
    return line.replace(quoted, quoted[:cut] + rng.choice(INVALID_UTF8_SEQUENCES) + quoted[cut:], 1)


def _malformed(line: bytes, rng: random.Random) -> bytes:
    """Defects every JSON parser rejects, Spark's lenient Jackson reader included.

    Trailing garbage and single quotes are deliberately absent: Spark accepts both.
    """
    variant = rng.randrange(4)
    if variant == 0:
        return line[: rng.randrange(1, len(line) - 1)]
    if variant == 1:
        return line[:-1] + b",}"
    if variant == 2:
        return line.replace(b'"' + EVENT_TYPE_FIELD.encode() + b'":', EVENT_TYPE_FIELD.encode() + b":", 1)
    return line[:-1] + b',"score":}'
