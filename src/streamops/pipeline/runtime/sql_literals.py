"""Values written into Spark SQL text, so a list of hundreds crosses Py4J in one call.

`Column.isin(values)` makes one Py4J call per value: with hundreds of event types or known schema
variations, driver time between Spark jobs that grows with the list (BENCHMARKS.md has the
measurements). The same test written as SQL text (`expression IN ('a', 'b', ...)`) is one call,
and Spark turns it into the same hash lookup (`InSet`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from pyspark.sql import Column


def string_literal(text: str) -> str:
    """`text` as a Spark SQL string literal: quotes and backslashes escaped, control characters
    as \\u escapes, so any string reads back unchanged."""
    parts = []
    for char in text:
        if char in "\\'":
            parts.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            parts.append(f"\\u{ord(char):04x}")
        else:
            parts.append(char)
    return "'" + "".join(parts) + "'"


def is_in(expression_sql: str, values: Iterable[str]) -> Column:
    """True where the SQL expression's value is one of `values`; false for an empty list."""
    from pyspark.sql import functions as F

    listed = ", ".join(string_literal(value) for value in sorted(set(values)))
    return F.expr(f"({expression_sql}) IN ({listed})") if listed else F.lit(False)
