"""Pipeline subcommands: generate, run, demo, lake promote. Spark is imported only inside handlers."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.registry.event_groups import DEFAULT_TYPES_PER_GROUP
from pipeline.silver.silver_stream import ON_INCOMPATIBLE
from pipeline.generator import command as generate_command
from streamops.cli_support import (
    Subcommands,
    add_command,
    add_json_option,
    add_lake_option,
    format_table,
    lake_commands,
    print_json,
)

RUN_EXAMPLE = """examples:
  streamops run --lake lake --landing landing --until-idle
  streamops run --lake lake --landing landing --duration 300 --trigger 2 --metrics-port 9108
"""


DEMO_EXAMPLE = """examples:
  streamops demo                                   # until Ctrl-C; console on http://127.0.0.1:8501
  streamops demo --duration 300 --rate 500 --event-types 20 --workdir /tmp/streamops-demo

what runs: a drifting load with bad records (the generator) lands files in WORKDIR/landing, the
pipeline ingests them into WORKDIR/lake with the monitor and its Prometheus exporter, and the
ops console serves the lake. Ctrl-C stops all of it and exits 0.
"""


PROMOTE_EXAMPLE = """examples:
  streamops lake promote --lake lake --event-type match_end --field player.score --to double        (plan only)
  streamops lake promote --lake lake --event-type match_end --field player.score --to double --yes

Stop the pipeline first. The silver table is rewritten once with the wider type, the rescued
values that now fit move back from _rescued_data into the column, and the schema registry
records the promotion so later batches keep the wider type. Streams that read the silver table
must restart from a new checkpoint (the rewrite is not an append).
"""


def register(subcommands: Subcommands) -> None:
    """Add `streamops generate`, `streamops demo`, `streamops run` and `streamops lake promote`."""
    generate_command.register(subcommands)
    _add_demo(subcommands)
    _add_lake(subcommands)
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
        "--types-per-group", type=int, default=DEFAULT_TYPES_PER_GROUP,
        help=f"event types served by one silver query (default {DEFAULT_TYPES_PER_GROUP})",
    )
    run.add_argument(
        "--one-query-per-event-type", action="store_true", help="the seed's layout: one silver query per event type"
    )
    run.add_argument(
        "--on-incompatible", choices=ON_INCOMPATIBLE, default="rescue",
        help="fields a table cannot hold (type change, widening): keep them in _rescued_data (rescue, "
        "default), quarantine their rows, or stop the group (fail_group)",
    )
    run.add_argument("--max-files-per-trigger", type=int, default=100, help="landing files per bronze batch")
    run.add_argument("--delta", choices=("embedded", "native"), default="embedded", help="Delta connector")
    run.add_argument("--master", help="Spark master URL (default local[*] or $STREAMOPS_SPARK_MASTER)")
    add_json_option(run)


def _add_demo(subcommands: Subcommands) -> None:
    demo = add_command(
        subcommands,
        "demo",
        summary="generate drifting load, run the pipeline with metrics, and serve the console",
        description="Everything at once on this machine: drifting load, the pipeline with the "
        "monitor and its Prometheus exporter, and the ops console. Prints the URLs.",
        epilog=DEMO_EXAMPLE,
        handler=_demo,
    )
    demo.add_argument("--workdir", type=Path, default=Path("streamops-demo"),
                      help="where landing/ and lake/ go (default ./streamops-demo; reused if present)")
    demo.add_argument("--rate", type=float, default=2000.0, help="events per second (default 2000)")
    demo.add_argument("--event-types", type=int, default=50, help="event types (default 50)")
    demo.add_argument("--duration", type=float, metavar="SECONDS", help="stop after SECONDS (default: at Ctrl-C)")
    demo.add_argument("--console-port", type=int, default=8501, help="console port (default 8501)")
    demo.add_argument("--metrics-port", type=int, default=9108, help="Prometheus metrics port (default 9108)")


def _add_lake(subcommands: Subcommands) -> None:
    promote = add_command(
        lake_commands(subcommands),
        "promote",
        summary="widen a silver column (e.g. long -> double) and move its rescued values back",
        description="Rewrite silver/<event type> with a wider column type, offline, and record it in the schema registry.",
        epilog=PROMOTE_EXAMPLE,
        handler=_promote,
    )
    add_lake_option(promote)
    promote.add_argument("--event-type", required=True, help="the silver table's event type")
    promote.add_argument("--field", required=True, help="the JSON field as a dotted path, e.g. player.score")
    promote.add_argument("--to", required=True, choices=("short", "integer", "long", "double"), help="the wider type")
    promote.add_argument("--yes", action="store_true", help="rewrite the table (without it only the plan is shown)")
    add_json_option(promote)


def _promote(args: argparse.Namespace) -> int:
    from pipeline.silver.column_promotion import plan_promotion, promote_column
    from streamops.lake_layout import LakeLayout

    lake = LakeLayout.at(args.lake)
    result = promote_column(lake, args.event_type, args.field, args.to) if args.yes else plan_promotion(
        lake, args.event_type, args.field, args.to
    )
    if args.json:
        print_json({"applied": args.yes, **result.as_dict()})
    elif args.yes:
        print(f"{result.event_type}: `{result.column}` {result.old_type} -> {result.new_type}; "
              f"{result.rows} rows rewritten, {result.rescued_moved} rescued values moved back")
    else:
        print(f"would rewrite silver/{result.event_type} with `{result.column}` {result.old_type} -> "
              f"{result.new_type} and move its rescued values back; run again with --yes (pipeline stopped)")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from pipeline.demo import DemoOptions, run_demo

    return run_demo(
        DemoOptions(
            workdir=args.workdir,
            rate=args.rate,
            event_types=args.event_types,
            duration=args.duration,
            console_port=args.console_port,
            metrics_port=args.metrics_port,
        )
    )


def _run(args: argparse.Namespace) -> int:
    from pipeline.lake_summary import summarize_lake
    from pipeline.pipeline_run import RunOptions, run_pipeline
    from pipeline.silver.silver_stream import SilverSettings
    from streamops.lake_layout import LakeLayout

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
