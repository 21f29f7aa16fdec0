"""`streamops checkpoint inspect|correlate|doctor|rewind`: thin handlers over the library."""

from __future__ import annotations

import argparse

from streamops.cli.options import (
    Handler,
    Subcommands,
    add_command,
    add_json_option,
    add_subcommands,
    lake_of,
    print_json,
)

CKPT_HELP = "checkpoint directory: a path or a URI (s3://, gs://, az://, abfss://)"
INSPECT_EXAMPLE = (
    "examples:\n"
    "  streamops checkpoint inspect lake/_checkpoints/bronze --json\n"
    "  AWS_PROFILE=ops streamops checkpoint inspect s3://bucket/lake/_checkpoints/bronze --last 5"
)
CORRELATE_EXAMPLE = (
    "examples:\n"
    "  streamops checkpoint correlate lake/_checkpoints/silver_core --lake lake\n"
    "  streamops checkpoint correlate ckpt --source-table src --sink-table out --json"
)
DOCTOR_EXAMPLE = (
    "examples:\n"
    "  streamops checkpoint doctor --lake lake --json\n"
    "  streamops checkpoint doctor ckpt --source-table src --sink-table out\n"
    "  streamops checkpoint doctor --lake abfss://lake@account.dfs.core.windows.net/prod\n"
    "--lake alone also checks every table of the lake for data files its log lists that the store lacks\n"
    "or holds truncated (as `streamops lake fsck --lake` does): one stat per live file\n"
    "exit code: 0 healthy, 1 warnings, 2 errors (and 2 when the lake or a checkpoint cannot be read)"
)
REWIND_EXAMPLE = (
    "examples:\n"
    "  streamops checkpoint rewind lake/_checkpoints/bronze --to-batch 40 --lake lake      (plan only)\n"
    "  streamops checkpoint rewind lake/_checkpoints/bronze --to-batch 40 --lake lake --yes\n"
    "  streamops checkpoint rewind s3://bucket/lake/_checkpoints/bronze --to-batch 40 --lake s3://bucket/lake --yes\n"
    "on object stores: the backup is copied first, new files are written before old ones are deleted,\n"
    "newest batch first; an interrupted rewind leaves a consistent checkpoint: run it again to finish"
)


def register(subcommands: Subcommands) -> None:
    """Add `streamops checkpoint` and its subcommands."""
    group = add_command(
        subcommands,
        "checkpoint",
        summary="inspect, correlate, diagnose and rewind Spark checkpoints (no Spark needed)",
        description="Read Spark Structured Streaming checkpoints and the Delta tables they read and write.",
        epilog="example:\n  streamops checkpoint doctor --lake lake",
    )
    commands = add_subcommands(group, "checkpoint_command")

    inspect = _command(commands, "inspect", "show what a checkpoint records", INSPECT_EXAMPLE, _inspect)
    inspect.add_argument("checkpoint", metavar="CKPT", help=CKPT_HELP)
    _add_last(inspect)

    correlate = _command(
        commands,
        "correlate",
        "tie each batch to the source files it read and the sink commits it made",
        CORRELATE_EXAMPLE,
        _correlate,
    )
    correlate.add_argument("checkpoint", metavar="CKPT", help=CKPT_HELP)
    _add_tables(correlate)
    _add_last(correlate)

    doctor = _command(
        commands,
        "doctor",
        "find problems in checkpoints, each with severity, evidence and a fix",
        DOCTOR_EXAMPLE,
        _doctor,
    )
    doctor.add_argument("checkpoints", nargs="*", metavar="CKPT", help=CKPT_HELP)
    _add_tables(doctor)
    doctor.add_argument(
        "--stall-seconds",
        type=float,
        default=900.0,
        help="report a stream as stalled after this long without a commit (default 900)",
    )
    doctor.add_argument(
        "--backlog-warning-seconds",
        type=float,
        default=3600.0,
        help="warn when the oldest unprocessed source commit is older (default 3600)",
    )
    doctor.add_argument(
        "--retention-warning-seconds",
        type=float,
        default=86400.0,
        help="warn when retention may remove unread source data within this (default 86400)",
    )
    doctor.add_argument(
        "--kafka-bootstrap",
        metavar="HOST:PORT[,...]",
        help="compare Kafka sources with these brokers: would a restart lose offsets retention deleted? "
        "(needs streamops[kafka])",
    )

    rewind = _command(
        commands,
        "rewind",
        "make the next run plan again from batch N (backs the checkpoint up first)",
        REWIND_EXAMPLE,
        _rewind,
    )
    rewind.add_argument("checkpoint", metavar="CKPT", help=CKPT_HELP)
    rewind.add_argument("--to-batch", type=int, required=True, metavar="N", help="first batch to plan again")
    rewind.add_argument("--yes", action="store_true", help="apply the plan (without it nothing changes)")
    rewind.add_argument("--backup-dir", help="where to put the backup, on CKPT's store (default: next to CKPT)")
    _add_tables(rewind)


def _command(commands: Subcommands, name: str, summary: str, example: str, handler: Handler) -> argparse.ArgumentParser:
    parser = add_command(commands, name, summary=summary, epilog=example, handler=handler)
    add_json_option(parser)
    return parser


def _add_tables(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lake", help="lake root (path or URI): find source and sink tables from its layout")
    parser.add_argument("--source-table", help="the Delta table the stream reads")
    parser.add_argument(
        "--sink-table", action="append", default=[], help="a Delta table the stream writes (repeat for several)"
    )
    parser.add_argument("--stream", help="the stream name (txn appId) sink commits carry; default: CKPT's name")


def _add_last(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--last", type=int, metavar="N", help="only the newest N batches")


def _inspect(args: argparse.Namespace) -> int:
    from streamops.checkpoint_tools.inspection import inspect_checkpoint
    from streamops.checkpoint_tools.text_report import inspection_text

    report = inspect_checkpoint(args.checkpoint, args.last)
    print_json(report) if args.json else print(inspection_text(report))
    return 0


def _correlate(args: argparse.Namespace) -> int:
    from streamops.checkpoint_tools.correlation import correlate
    from streamops.checkpoint_tools.text_report import correlation_text

    result = correlate(
        args.checkpoint, args.source_table, args.sink_table, lake_of(args), last_batches=args.last, stream=args.stream
    )
    print_json(result.to_json()) if args.json else print(correlation_text(result))
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from streamops.checkpoint_tools.doctor import checkpoint_targets, diagnose_lake, diagnose_many
    from streamops.checkpoint_tools.doctor_context import DoctorSettings
    from streamops.checkpoint_tools.exceptions import CheckpointToolsError
    from streamops.checkpoint_tools.findings import exit_code
    from streamops.checkpoint_tools.table_checks import diagnose_lake_tables
    from streamops.checkpoint_tools.text_report import diagnoses_text

    settings = DoctorSettings(
        stall_seconds=args.stall_seconds,
        backlog_warning_seconds=args.backlog_warning_seconds,
        retention_warning_seconds=args.retention_warning_seconds,
        kafka_bootstrap=args.kafka_bootstrap,
    )
    lake = lake_of(args)
    tables = []
    if args.checkpoints:
        targets = checkpoint_targets(args.checkpoints, args.source_table, args.sink_table, lake, args.stream)
        diagnoses = diagnose_many(targets, settings)
    elif lake is not None:
        diagnoses = diagnose_lake(lake, settings)
        tables = diagnose_lake_tables(lake)
    else:
        raise CheckpointToolsError("give one or more checkpoint directories, or --lake DIR")
    code = exit_code([f for d in diagnoses for f in d.findings] + [f for t in tables for f in t.findings])
    if args.json:
        print_json(
            {
                "exit_code": code,
                "checkpoints": [d.to_json() for d in diagnoses],
                "tables": [t.to_json() for t in tables],
            }
        )
    else:
        print(diagnoses_text(diagnoses, tables))
    return code


def _rewind(args: argparse.Namespace) -> int:
    from streamops.checkpoint_tools.rewind import apply_rewind, plan_rewind
    from streamops.checkpoint_tools.text_report import rewind_text

    plan = plan_rewind(args.checkpoint, args.to_batch, args.source_table, args.sink_table, lake_of(args), args.stream)
    result = apply_rewind(plan, args.backup_dir) if args.yes else None
    if args.json:
        print_json(result.to_json() if result else {"applied": False, "plan": plan.to_json()})
    else:
        print(rewind_text(plan, result))
    return 0
