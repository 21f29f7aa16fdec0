"""`streamops dashboards build`: Grafana dashboards, alert rules and provisioning, from code."""

from __future__ import annotations

import argparse
from pathlib import Path

from streamops.cli.options import Subcommands, add_command, add_json_option, add_subcommands, print_json

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


def register(subcommands: Subcommands) -> None:
    """Add `streamops dashboards` and its subcommands."""
    parser = add_command(
        subcommands,
        "dashboards",
        summary="Grafana dashboards, alert rules and provisioning files, generated from code",
        description="Grafana dashboards, alert rules and provisioning files, generated from code.",
        epilog=GROUP_EPILOG,
    )
    _add_build(add_subcommands(parser, "dashboards_command"))


def _add_build(commands: Subcommands) -> None:
    build = add_command(
        commands,
        "build",
        summary="write the Grafana dashboards, alert rules and Prometheus files into a directory",
        description="Write the Grafana dashboards, Grafana-managed and Prometheus alert rules, "
        "Grafana provisioning files and a sample Prometheus config into DIR.",
        epilog=BUILD_EPILOG,
        handler=_build,
    )
    build.add_argument("--out", required=True, type=Path, metavar="DIR", help="output directory")
    add_json_option(build)


def _build(args: argparse.Namespace) -> int:
    from streamops.dashboards.build import build_files, write_files

    written = write_files(args.out, build_files())
    if args.json:
        print_json({"out": str(args.out), "files": [str(path) for path in written]})
    else:
        for path in written:
            print(path)
    return 0
