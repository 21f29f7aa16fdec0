"""The `streamops` command: the root parser and the one place errors become one line.

Each command group is a module of this package with a `register(subcommands)` function, listed
in `COMMAND_MODULES`. A module whose optional dependencies are missing (`streamops run` without
`streamops[pipeline]`) still registers its commands' names, so `streamops run ...` answers with
the extra to install instead of "invalid choice"; the Spark-free commands work on a plain
`pip install streamops`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Sequence

from streamops import __version__
from streamops.cli.options import Subcommands
from streamops.core.exceptions import StreamopsError
from streamops.core.extras import MissingExtraError

COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "streamops.cli.checkpoint": ("checkpoint",),
    "streamops.cli.console": ("console",),
    "streamops.cli.dashboards": ("dashboards",),
    "streamops.cli.demo": ("demo",),
    "streamops.cli.generate": ("generate",),
    "streamops.cli.lake": ("lake",),
    "streamops.cli.run": ("run",),
    "streamops.cli.status": ("status",),
}
"""Module -> the top-level commands it registers (the names stand in when it cannot load)."""

EPILOG = """examples:
  streamops demo
  streamops generate --out landing --events 100000 --event-types 300 --json
  streamops run --lake lake --landing landing --until-idle
  streamops status --lake lake
  streamops checkpoint doctor --lake lake --json
  streamops dashboards build --out dashboards/generated
"""


def build_parser() -> argparse.ArgumentParser:
    """The root parser with every command group, in command-name order."""
    parser = argparse.ArgumentParser(
        prog="streamops",
        description="Run, watch and repair Spark Structured Streaming pipelines on Delta Lake.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"streamops {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name, commands in sorted(COMMAND_MODULES.items(), key=lambda item: item[1]):
        try:
            module = importlib.import_module(module_name)
        except MissingExtraError as missing:
            for command in commands:
                _register_unavailable(subparsers, command, missing)
            continue
        module.register(subparsers)
    return parser


def _register_unavailable(subparsers: Subcommands, command: str, missing: MissingExtraError) -> None:
    """`command` accepts whatever follows it (`main` ignores it) and fails with the extra to install."""
    parser = subparsers.add_parser(command, help=f"(not installed: {missing})", add_help=False)
    parser.set_defaults(unavailable=missing)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = build_parser()
        args, unknown = parser.parse_known_args(argv)
        if getattr(args, "unavailable", None) is not None:
            raise args.unavailable
        if unknown:
            parser.error(f"unrecognized arguments: {' '.join(unknown)}")
        return int(args.handler(args) or 0)
    except StreamopsError as error:
        print(f"streamops: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("streamops: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader (e.g. `| head`) stopped reading: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
