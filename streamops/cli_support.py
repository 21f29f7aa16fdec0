"""Pieces every subcommand shares, so flags and output look the same everywhere."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable, Sequence

Handler = Callable[[argparse.Namespace], int]


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print the stable, documented JSON form instead of a table"
    )


def add_lake_option(parser: argparse.ArgumentParser, required: bool = True) -> None:
    parser.add_argument("--lake", required=required, help="root directory of the lake")


def print_json(payload: Any) -> None:
    json.dump(payload, sys.stdout, indent=2, sort_keys=True, default=str)
    sys.stdout.write("\n")


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
