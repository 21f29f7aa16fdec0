"""`streamops run`: the bronze/silver pipeline on a lake. Spark is imported only inside the handler."""

from __future__ import annotations

import argparse
from pathlib import Path

from streamops.cli.options import Subcommands, add_command, add_json_option, print_json
from streamops.pipeline.delta_connector.connector import CONNECTORS
from streamops.pipeline.registry.event_groups import DEFAULT_TYPES_PER_GROUP
from streamops.pipeline.silver.silver_stream import ON_INCOMPATIBLE
from streamops.pipeline.supervisor import STAGES
from streamops.plain_text import format_table

RUN_EXAMPLE = """examples:
  streamops run --lake lake --landing landing --until-idle
  streamops run --lake lake --landing landing --duration 300 --trigger 2 --metrics-port 9108
  streamops run --lake lake --landing landing --until-idle --delta native --stages bronze
"""


def register(subcommands: Subcommands) -> None:
    """Add `streamops run`."""
    run = add_command(
        subcommands,
        "run",
        summary="run the bronze/silver pipeline on a lake",
        description="Ingest landing NDJSON files into bronze, the schema registry and typed silver tables.",
        epilog=RUN_EXAMPLE,
        handler=_run,
    )
    run.add_argument("--lake", required=True, type=Path, help="root directory of the lake")
    run.add_argument("--landing", required=True, type=Path, help="directory producers drop NDJSON files into")
    mode = run.add_mutually_exclusive_group()
    mode.add_argument("--until-idle", action="store_true", help="process all available input, then exit")
    mode.add_argument("--duration", type=float, metavar="SECONDS", help="run continuously for SECONDS")
    run.add_argument("--trigger", type=float, default=5.0, metavar="SECONDS", help="micro-batch interval (default 5)")
    run.add_argument("--metrics-port", type=int, help="serve Prometheus metrics on this port")
    run.add_argument("--metrics-host", default="127.0.0.1", help="address the exporter binds (default 127.0.0.1)")
    run.add_argument(
        "--types-per-group",
        type=int,
        default=DEFAULT_TYPES_PER_GROUP,
        help=f"event types served by one silver query (default {DEFAULT_TYPES_PER_GROUP})",
    )
    run.add_argument(
        "--one-query-per-event-type", action="store_true", help="the seed's layout: one silver query per event type"
    )
    run.add_argument(
        "--on-incompatible",
        choices=ON_INCOMPATIBLE,
        default="rescue",
        help="fields a table cannot hold (type change, widening): keep them in _rescued_data (rescue, "
        "default), quarantine their rows, or stop the group (fail_group)",
    )
    run.add_argument("--max-files-per-trigger", type=int, default=100, help="landing files per bronze batch")
    run.add_argument(
        "--delta",
        choices=CONNECTORS,
        default="embedded",
        help="the Delta connector every stage runs on: embedded (delta-rs inside Spark, no JARs) or native "
        "(delta-spark; its JARs are resolved from Maven Central on the first run, then cached)",
    )
    run.add_argument(
        "--stages",
        choices=STAGES,
        default="all",
        help="the hops this process runs: bronze (landing -> bronze), silver (management stream and silver "
        "groups on bronze) or all (default); run bronze and silver as separate applications to scale them apart",
    )
    run.add_argument("--master", help="Spark master URL (default local[*] or $STREAMOPS_SPARK_MASTER)")
    add_json_option(run)


def _run(args: argparse.Namespace) -> int:
    from streamops.lake_layout import LakeLayout
    from streamops.pipeline.lake_summary import summarize_lake
    from streamops.pipeline.pipeline_run import RunOptions, run_pipeline
    from streamops.pipeline.silver.silver_stream import SilverSettings

    silver = SilverSettings(
        types_per_group=1 if args.one_query_per_event_type else args.types_per_group,
        on_incompatible=args.on_incompatible,
    )
    report = run_pipeline(
        RunOptions(
            lake=args.lake,
            landing=args.landing,
            until_idle=args.until_idle,
            duration=args.duration,
            trigger_seconds=args.trigger,
            metrics_port=args.metrics_port,
            metrics_host=args.metrics_host,
            silver=silver,
            bronze_max_files=args.max_files_per_trigger,
            delta=args.delta,
            master=args.master,
            stages=args.stages,
        )
    )
    summary = summarize_lake(LakeLayout.at(args.lake))
    if args.json:
        print_json({"lake": summary.as_dict(), "failures": report.failures})
    else:
        print(_summary_table(summary))
        for stream, errors in sorted(report.failures.items()):
            print(f"{stream} failed {len(errors)}x, last: {errors[-1]}")
    return 1 if report.failures else 0


def _summary_table(summary) -> str:
    rows = [
        ("bronze/events", summary.bronze_rows),
        *[(f"bronze/quarantine [{reason}]", n) for reason, n in sorted(summary.quarantine_by_reason.items())],
        ("silver tables", len(summary.silver_rows)),
        ("silver rows", sum(summary.silver_rows.values())),
        ("schema variations", summary.variations),
        ("event groups", len(summary.groups)),
        ("schema alerts", summary.schema_alerts),
    ]
    return format_table(("table", "rows"), rows)
