"""The strict JSON reading every stage shares: what bronze accepts, later stages can read.

Python's own `json` module, with hooks, is the reference parser: RFC 8259 only (no NaN or
Infinity, no trailing data, no raw control characters in strings), and it reports, instead of
silently resolving, the things later stages cannot store: numbers beyond 64-bit integers or
double range become `OutOfRange` markers and an object with a repeated key carries the
`DUPLICATE_KEYS` marker key. Nothing here looks at a library's error text.

Byte-level rules that must hold before parsing (so that no parser's depth limit or encoding
detection decides anything) are `structural_depth` and `lone_surrogate`.
"""

from __future__ import annotations

import json
import re
from typing import Any

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
_MAX_INT64_DIGITS = 19


class StrictJsonError(ValueError):
    """The text is not strict JSON. `detail` is a short human reason (never used to classify)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class OutOfRange:
    """A number no 64-bit integer or double holds; kept as its text."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"OutOfRange({self.text})"


class _DuplicateKeys:
    def __repr__(self) -> str:
        return "DUPLICATE_KEYS"


DUPLICATE_KEYS = _DuplicateKeys()
"""Marker key (never a string, so never a JSON key) of an object that repeated a key; its value
is the first repeated key."""


def _parse_int(text: str) -> int | OutOfRange:
    if len(text.lstrip("-")) > _MAX_INT64_DIGITS:
        return OutOfRange(text)
    value = int(text)
    return value if INT64_MIN <= value <= INT64_MAX else OutOfRange(text)


def _parse_float(text: str) -> float | OutOfRange:
    value = float(text)
    return OutOfRange(text) if value in (float("inf"), float("-inf")) else value


def _reject_constant(text: str) -> Any:
    raise StrictJsonError(f"{text} is not a JSON number")


def _object(pairs: list[tuple[str, Any]]) -> dict[Any, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        obj[DUPLICATE_KEYS] = next(key for key, _ in pairs if key in seen or seen.add(key))
    return obj


_DECODER = json.JSONDecoder(
    object_pairs_hook=_object, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_reject_constant
)


def loads(text: str) -> Any:
    """Parse one JSON text strictly (see the module docstring)."""
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as error:
        raise StrictJsonError(f"{error.msg} (char {error.pos})") from None


_STRUCTURE = re.compile(rb'"(?:[^"\\]|\\[\s\S])*(?:"|\\?\Z)|[\[\]{}]')


def structural_depth(line: bytes) -> int:
    """The deepest nesting of `{`/`[` outside strings, minus one: a flat object has depth 0.

    Counted on bytes before any parsing, so a line too deep for one parser is judged the same
    by every parser. Brackets inside strings (with escapes) do not count; an unterminated
    string runs to the end of the line."""
    depth = deepest = 0
    for match in _STRUCTURE.finditer(line):
        char = match.group()
        if char in (b"{", b"["):
            depth += 1
            deepest = max(deepest, depth)
        elif char in (b"}", b"]"):
            depth -= 1
    return deepest - 1


def exceeds_depth(line: bytes, max_depth: int) -> int | None:
    """The line's structural depth when it is above `max_depth`, else None (cheap when it cannot be)."""
    if line.count(b"{") + line.count(b"[") <= max_depth + 1:
        return None
    depth = structural_depth(line)
    return depth if depth > max_depth else None


_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(value: Any) -> str | None:
    """The first string (key or value) holding a lone UTF-16 surrogate (from a `\\uD800`-style
    escape): such text has no UTF-8 form, so no later stage could store it."""
    if type(value) is str:
        return value if _SURROGATE.search(value) else None
    if type(value) is dict:
        for key, child in value.items():
            found = (lone_surrogate(key) if type(key) is str else None) or lone_surrogate(child)
            if found is not None:
                return found
    elif type(value) is list:
        for child in value:
            found = lone_surrogate(child)
            if found is not None:
                return found
    return None
