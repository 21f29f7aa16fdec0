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
