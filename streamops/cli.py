"""The `streamops` command: a thin root that each package extends with its own subcommands.

Each package's `cli.py` exposes `register(subcommands)` and names it as an entry point of the
group `streamops.commands` (pyproject.toml). The root finds them through the installed metadata,
so the core imports no package above it, and a package can add commands without touching it.
The `cli.py` modules import nothing heavy at module level, so `streamops checkpoint doctor`
never starts a JVM.
"""

from __future__ import annotations

import argparse
import os
import sys
from importlib.metadata import entry_points
from typing import Sequence

from streamops import __version__
from streamops.exceptions import StreamopsError

COMMANDS_GROUP = "streamops.commands"
EPILOG = """examples:
  streamops demo
  streamops generate --out landing --events 100000 --event-types 300 --json
  streamops run --lake lake --landing landing --until-idle
  streamops status --lake lake
  streamops checkpoint doctor --lake lake --json
  streamops dashboards build --out dashboards/generated
"""


class NoCommandsError(StreamopsError):
    """No package registered a command: streamops is not installed, only on the path."""


def build_parser() -> argparse.ArgumentParser:
    """The root parser with every registered package's commands, in entry-point name order."""
    registrations = sorted(entry_points(group=COMMANDS_GROUP), key=lambda entry: entry.name)
    if not registrations:
        raise NoCommandsError(
            f"no commands are registered (entry point group `{COMMANDS_GROUP}`): "
            "install streamops, e.g. `pip install -c constraints.txt -e .`"
        )
    parser = argparse.ArgumentParser(
        prog="streamops",
        description="Run, watch and repair Spark Structured Streaming pipelines on Delta Lake.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"streamops {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for registration in registrations:
        registration.load()(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())
