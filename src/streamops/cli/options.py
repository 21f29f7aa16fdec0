"""Pieces every subcommand shares, so flags, help and output look the same everywhere."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from streamops.core.lake_layout import LakeLayout

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


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the stable, documented JSON form instead of a table")


def add_lake_option(parser: argparse.ArgumentParser, required: bool = True) -> None:
    parser.add_argument(
        "--lake", required=required, help="root of the lake: a directory or a URI (s3://, gs://, az://, abfss://)"
    )


def lake_of(args: argparse.Namespace) -> LakeLayout | None:
    """The lake `--lake` names, which must exist (None without `--lake`)."""
    from streamops.core.lake_layout import LakeLayout

    return LakeLayout.at(args.lake).require() if args.lake else None


def print_json(payload: Any) -> None:
    json.dump(payload, sys.stdout, indent=2, sort_keys=True, default=str)
    sys.stdout.write("\n")
