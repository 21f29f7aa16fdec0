"""Plain text people read in a terminal: aligned tables, durations and sizes.

Every human-readable output of streamops (the CLI's tables, the doctor's report, status reasons,
the console's captions) renders numbers through these, so `45s` or `1.2 GB` reads the same
everywhere.
"""

from __future__ import annotations

from typing import Any, Sequence


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain aligned text table: what humans read in a terminal."""
    cells = [[str(h) for h in headers]] + [["" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(value.ljust(widths[i]) for i, value in enumerate(row)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def human_seconds(value: float | None) -> str:
    """A duration as people read it on a status line: 45s, 12m, 3.5h, 2.0d."""
    if value is None:
        return "-"
    seconds = max(0.0, float(value))
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    if seconds < 172800:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


def human_bytes(value: float | None) -> str:
    if value is None:
        return "-"
    units = ("B", "KB", "MB", "GB", "TB")
    size, unit = float(value), 0
    while abs(size) >= 1024 and unit < len(units) - 1:
        size, unit = size / 1024, unit + 1
    return f"{size:,.0f} B" if unit == 0 else f"{size:,.1f} {units[unit]}"
