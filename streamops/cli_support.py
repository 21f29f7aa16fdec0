"""Pieces every subcommand shares, so flags, help and output look the same everywhere.

Each package's `cli.py` has a `register(subcommands)` that adds its commands with these helpers;
the root command (`streamops.cli`) finds those functions through entry points, so it imports
no package above the core.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable, Sequence

Handler = Callable[[argparse.Namespace], int]
Subcommands = argparse._SubParsersAction
"""What `ArgumentParser.add_subparsers` returns; argparse has no public name for it."""


def add_command(
    subcommands: Subcommands,
    name: str,
    *,
    summary: str,
    epilog: str,
    handler: Handler | None = None,
    description: str | None = None,
) -> argparse.ArgumentParser:
    """A command shaped like every other: `summary` is its line in the parent's list, `description`
    (default: the same) heads its own --help, and `epilog` holds examples, kept as written."""
    parser = subcommands.add_parser(
        name,
        help=summary,
        description=description or summary,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    if handler is not None:
        parser.set_defaults(handler=handler)
    return parser


def add_subcommands(parser: argparse.ArgumentParser, dest: str) -> Subcommands:
    """The subcommands of a command group (`streamops checkpoint doctor`): one is required."""
    return parser.add_subparsers(dest=dest, metavar="SUBCOMMAND", required=True)


LAKE_GROUP = "lake"
LAKE_SUMMARY = "maintain the lake's tables: stream-safe vacuum and optimize, promote a silver column"
LAKE_EPILOG = """examples:
  streamops lake vacuum --lake lake --dry-run
  streamops lake optimize --lake lake
  streamops lake promote --lake lake --event-type match_end --field player.score --to double --yes"""


def lake_commands(subcommands: Subcommands) -> Subcommands:
    """The subcommands of `streamops lake`, which several packages extend (checkpoint_tools:
    vacuum and optimize; pipeline: promote): created by the first to ask, shared after."""
    group = subcommands.choices.get(LAKE_GROUP)
    if group is None:
        group = add_command(subcommands, LAKE_GROUP, summary=LAKE_SUMMARY, epilog=LAKE_EPILOG)
        group.set_defaults(lake_subcommands=add_subcommands(group, "lake_command"))
    return group.get_default("lake_subcommands")


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print the stable, documented JSON form instead of a table"
    )


def add_lake_option(parser: argparse.ArgumentParser, required: bool = True) -> None:
    parser.add_argument(
        "--lake", required=required, help="root of the lake: a directory or a URI (s3://, gs://, az://, abfss://)"
    )


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
