"""`streamops dashboards ...`: Grafana dashboards, alert rules and provisioning, from code.

Each subcommand is one `_add_<name>(commands)` function; adding one (the console) is one more
function and one more line in `register`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from streamops.cli_support import add_json_option, print_json

GROUP_EPILOG = """example:
  streamops dashboards build --out dashboards/generated
"""

BUILD_EPILOG = """example:
  streamops dashboards build --out dashboards/generated
  streamops dashboards build --out /tmp/streamops-grafana --json

writes:
  dashboards/streamops-fleet.json, dashboards/streamops-stream.json   Grafana dashboards
  provisioning/{datasources,dashboards,alerting}/streamops.yaml      Grafana provisioning
  prometheus/prometheus.yml, prometheus/streamops-rules.yml          Prometheus scrape + alerts
  prometheus/streamops-rules.test.yml                                promtool test rules cases
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `streamops dashboards` and its subcommands to the root parser."""
    parser = subparsers.add_parser(
        "dashboards",
        help="Grafana dashboards, alert rules and provisioning files, generated from code",
        description="Grafana dashboards, alert rules and provisioning files, generated from code.",
        epilog=GROUP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="dashboards_command", metavar="SUBCOMMAND", required=True)
    _add_build(commands)


def _add_build(commands: argparse._SubParsersAction) -> None:
    build = commands.add_parser(
        "build",
        help="write the Grafana dashboards, alert rules and Prometheus files into a directory",
        description="Write the Grafana dashboards, Grafana-managed and Prometheus alert rules, "
        "Grafana provisioning files and a sample Prometheus config into DIR.",
        epilog=BUILD_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    build.add_argument("--out", required=True, type=Path, metavar="DIR", help="output directory")
    add_json_option(build)
    build.set_defaults(handler=_build)


def _build(args: argparse.Namespace) -> int:
    from dashboards.build import build_files, write_files

    written = write_files(args.out, build_files())
    if args.json:
        print_json({"out": str(args.out), "files": [str(path) for path in written]})
    else:
        for path in written:
            print(path)
    return 0
