"""The `streamops` command: a thin root that each package extends with its own subcommands.

Each package's `cli.py` exposes `register(subparsers)` and imports nothing heavy at module
level, so `streamops checkpoint doctor` never starts a JVM.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from streamops import __version__
from streamops.exceptions import StreamopsError

EPILOG = """examples:
  streamops demo
  streamops generate --out landing --events 100000 --event-types 300 --json
  streamops run --lake lake --landing landing --until-idle
  streamops status --lake lake
  streamops checkpoint doctor --lake lake --json
  streamops dashboards build --out dashboards/generated
"""


def build_parser() -> argparse.ArgumentParser:
    from checkpoint_tools import cli as checkpoint_cli
    from dashboards import cli as dashboards_cli
    from monitor import cli as monitor_cli
    from pipeline import cli as pipeline_cli

    parser = argparse.ArgumentParser(
        prog="streamops",
        description="Run, watch and repair Spark Structured Streaming pipelines on Delta Lake.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"streamops {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in (pipeline_cli, monitor_cli, checkpoint_cli, dashboards_cli):
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
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
