"""Hypothesis strategies for landing lines nobody would want to receive: arbitrary bytes, JSON
with hostile strings, numbers, keys and nesting (rendered by hand, so repeated keys, raw
control characters, lone surrogate escapes and non-numbers are possible), and byte mutations of
valid events."""

from __future__ import annotations

import json

from hypothesis import strategies as st

from streamops.pipeline.records.record_rules import MAX_DEPTH, UTF8_BOM

EVENT_TYPES = ["click", "Click", "purchase", "a.b-c", "", "../x", "a b", None, 7]
KEYS = st.one_of(
    st.sampled_from(
        [
            "event_id",
            "event_time",
            "a",
            "A",
            "a b",
            "a__b",
            "b",
            "_rescued_data",
            "_corrupt_record",
            "",
            "é",
            "x\u0000",
            "level",
            "player",
            "Player",
            "items",
            "n",
            "N",
        ]
    ),
    st.text(max_size=5),
)
ESCAPES = ["\\ud83d\\ude00", "\\u0000", "\\u001f", "\\\\", '\\"', "\\n", "\\/", "\x7f", "\u2028", "\ufeff", "é", "😀"]
BROKEN_ESCAPES = ["\\ud800", "\\udc00", "\\ud83d\\u0041", "\x01", "\t", "\\x", "\\u12"]
NUMBERS = [
    "0",
    "-0",
    "1",
    "-1",
    "9223372036854775807",
    "-9223372036854775808",
    "1e308",
    "1e-400",
    "1.5",
    "0.1",
    "1E5",
    "2.5e-3",
    "-1.0E+2",
]
BROKEN_NUMBERS = [
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551616",
    "1e309",
    "-1e999",
    "NaN",
    "Infinity",
    "-Infinity",
    "01",
    "1.",
    ".5",
    "+1",
    "1e",
    "-",
]


rarely = st.sampled_from([False] * 9 + [True])


@st.composite
def json_strings(draw) -> str:
    """A JSON string literal as a producer might really send it, escapes and all."""
    if draw(st.booleans()):
        return json.dumps(draw(st.text(max_size=12)), ensure_ascii=draw(st.booleans()))
    pieces = ESCAPES + BROKEN_ESCAPES if draw(rarely) else ESCAPES
    parts = draw(st.lists(st.one_of(st.sampled_from(pieces), st.text(max_size=4)), max_size=4))
    return '"' + "".join(p.replace('"', "") for p in parts) + '"'


@st.composite
def json_values(draw, depth: int = 0) -> str:
    kind = draw(st.sampled_from(["string", "number", "int", "float", "bool", "null", "object", "array"]))
    if depth >= 4 and kind in ("object", "array"):
        kind = "int"
    if kind == "string":
        return draw(json_strings())
    if kind == "number":
        return draw(st.sampled_from(NUMBERS + BROKEN_NUMBERS if draw(rarely) else NUMBERS))
    if kind == "int":
        bound = 2**70 if draw(rarely) else 2**63 - 1
        return str(draw(st.integers(min_value=-bound, max_value=bound)))
    if kind == "float":
        return repr(draw(st.floats(allow_nan=False, allow_infinity=False)))
    if kind == "bool":
        return draw(st.sampled_from(["true", "false"]))
    if kind == "null":
        return "null"
    if kind == "array":
        return "[" + ",".join(draw(st.lists(json_values(depth + 1), max_size=3))) + "]"
    return draw(json_objects(depth + 1))


@st.composite
def json_objects(draw, depth: int = 0) -> str:
    pairs = draw(st.lists(st.tuples(KEYS, json_values(depth)), max_size=4))
    return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + v for k, v in pairs) + "}"


@st.composite
def events(draw) -> bytes:
    """A top-level object, usually with an event_type, sometimes with a repeated or odd one."""
    pairs = draw(st.lists(st.tuples(KEYS, json_values()), max_size=5))
    if pairs and draw(rarely):
        pairs.append((draw(st.sampled_from(pairs))[0], draw(json_values())))
    if not draw(rarely):
        event_type = draw(st.sampled_from(EVENT_TYPES[:4] if not draw(rarely) else EVENT_TYPES))
        pairs.insert(draw(st.integers(0, len(pairs))), ("event_type", json.dumps(event_type)))
    body = ",".join(json.dumps(k, ensure_ascii=False) + ":" + v for k, v in pairs)
    space = draw(st.sampled_from(["", " ", "\t", " \r"]))
    line = (space + "{" + body + "}" + space).encode("utf-8", "surrogatepass")
    return (UTF8_BOM if draw(rarely) else b"") + line


def nested(depth: int) -> bytes:
    return b'{"event_type":"deep","d":' + b"[" * depth + b"1" + b"]" * depth + b"}"


@st.composite
def mutated(draw, valid: bytes) -> bytes:
    """A valid event with a few bytes inserted, deleted or replaced."""
    line = bytearray(valid)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, max(0, len(line) - 1)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        byte = draw(st.sampled_from([0x00, 0x22, 0x5C, 0x7B, 0x7D, 0x5B, 0x5D, 0x2C, 0x3A, 0xC3, 0xFF, 0xED]))
        if action == "insert":
            line.insert(at, byte)
        elif action == "delete" and line:
            del line[at]
        elif line:
            line[at] = byte
    return bytes(line)


VALID = (
    b'{"event_type":"click","event_id":"e-1","event_time":"2026-01-01T00:00:00Z",'
    b'"player":{"id":"p1","level":5},"items":[{"sku":"x","n":2}],"score":1.5,"tags":["a","b"]}'
)

hostile_lines = st.one_of(
    st.binary(max_size=120).map(lambda b: b.replace(b"\n", b" ")),
    events(),
    events(),
    events(),
    mutated(VALID),
    json_values().map(lambda text: text.encode("utf-8", "surrogatepass")),
    st.sampled_from([nested(MAX_DEPTH), nested(MAX_DEPTH + 1), nested(1500), b"", b"   ", UTF8_BOM]),
)

scalars = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
    st.booleans(),
    st.none(),
)
documents = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.sampled_from(["a", "b", "c", "d", "é", "x y"]), children, max_size=3),
    ),
    max_leaves=8,
)


@st.composite
def valid_events(draw) -> bytes:
    """Well-formed events of a few types whose fields change kind from event to event: mixed
    arrays, integers then floats, objects then scalars (what later stages must cope with)."""
    body = draw(st.dictionaries(st.sampled_from(["a", "b", "c", "n", "items", "p"]), documents, max_size=4))
    body["event_type"] = draw(st.sampled_from(["click", "purchase"]))
    return json.dumps(body, ensure_ascii=draw(st.booleans())).encode("utf-8")


landing_lines = st.one_of(hostile_lines, valid_events(), valid_events(), valid_events())
