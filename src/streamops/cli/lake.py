"""`streamops lake vacuum|optimize|promote|fsck`: maintenance of the lake's tables that keeps every
stream that reads them running."""

from __future__ import annotations

import argparse

from streamops.cli.options import (
    Subcommands,
    add_command,
    add_json_option,
    add_lake_option,
    add_subcommands,
    lake_of,
    print_json,
)
from streamops.core.exceptions import StreamopsError

LAKE_EPILOG = """examples:
  streamops lake vacuum --lake lake --dry-run
  streamops lake optimize --lake lake
  streamops lake fsck --lake lake
  streamops lake promote --lake lake --event-type match_end --field player.score --to double --yes"""
VACUUM_EXAMPLE = (
    "examples:\n"
    "  streamops lake vacuum --lake lake --dry-run\n"
    "  streamops lake vacuum --lake lake --yes --json\n"
    "  streamops lake vacuum s3://bucket/tables/events --checkpoint s3://bucket/ckpt/events_to_silver --yes\n"
    "every checkpoint of --lake (and each --checkpoint) protects what it still has to read: nothing\n"
    "added by the oldest version a stream still needs, or later, is deleted, whatever the retention;\n"
    "a checkpoint that cannot be read stops the vacuum of the tables it may read (exit 2)"
)
OPTIMIZE_EXAMPLE = (
    "examples:\n"
    "  streamops lake optimize --lake lake --dry-run\n"
    "  streamops lake optimize lake/bronze/events --target-size 134217728\n"
    "the compaction commit changes no data (dataChange=false): streaming readers skip it; a commit that\n"
    "conflicts with it makes it start again; exit 2 if a concurrent compaction duplicated rows"
)
FSCK_EXAMPLE = (
    "examples:\n"
    "  streamops lake fsck lake/bronze/events                (list its damaged files; exit 1 if any)\n"
    "  streamops lake fsck --lake lake --json                (every table of the lake)\n"
    "  streamops lake fsck s3://bucket/tables/events --yes   (drop them from the table's log)\n"
    "a file the log lists is damaged when the store lacks it (deleted outside Delta) or holds it at\n"
    "another size than its add records (truncated). --yes moves truncated files to <table>/_damaged/,\n"
    "then one FSCK commit (delta-rs repair) removes every damaged file from the log and records in its\n"
    "commitInfo (`streamops.fsck`) each file, why, and its rows and bytes: those rows are lost.\n"
    "Streams that have not read a damaged version yet are named: they still fail on the file.\n"
    "exit 0 clean or repaired, 1 damaged files left (no --yes), 2 a repair delta-rs refused (nothing changed)"
)

PROMOTE_EXAMPLE = """examples:
  streamops lake promote --lake lake --event-type match_end --field player.score --to double        (plan only)
  streamops lake promote --lake lake --event-type match_end --field player.score --to double --yes

Stop the pipeline first. The silver table is rewritten once with the wider type, the rescued
values that now fit move back from _rescued_data into the column, and the schema registry
records the promotion so later batches keep the wider type. Streams that read the silver table
must restart from a new checkpoint (the rewrite is not an append). Needs no Spark.
"""


def register(subcommands: Subcommands) -> None:
    """Add `streamops lake` and its subcommands."""
    group = add_command(
        subcommands,
        "lake",
        summary="maintain the lake's tables: stream-safe vacuum and optimize, promote a silver column, "
        "find and drop damaged data files",
        epilog=LAKE_EPILOG,
    )
    commands = add_subcommands(group, "lake_command")
    _add_vacuum(commands)
    _add_optimize(commands)
    _add_promote(commands)
    _add_fsck(commands)


def _add_vacuum(commands: Subcommands) -> None:
    vacuum = add_command(
        commands,
        "vacuum",
        summary="VACUUM that deletes nothing a stream still has to read",
        epilog=VACUUM_EXAMPLE,
        handler=_vacuum,
    )
    add_json_option(vacuum)
    _add_maintained_tables(vacuum)
    vacuum.add_argument(
        "--retention-hours",
        type=int,
        metavar="H",
        help="delete files removed longer ago than H hours (default: the table's "
        "delta.deletedFileRetentionDuration, else 168)",
    )
    vacuum.add_argument(
        "--allow-short-retention",
        action="store_true",
        help="allow H below the table's own retention (streams stay protected; other readers of old versions do not)",
    )
    mode = vacuum.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
    mode.add_argument("--yes", action="store_true", help="delete (vacuum refuses to run without it or --dry-run)")


def _add_optimize(commands: Subcommands) -> None:
    optimize = add_command(
        commands,
        "optimize",
        summary="compact small files in a data-change-free commit streams skip",
        epilog=OPTIMIZE_EXAMPLE,
        handler=_optimize,
    )
    add_json_option(optimize)
    _add_maintained_tables(optimize)
    optimize.add_argument(
        "--target-size",
        type=int,
        metavar="BYTES",
        help="target file size (default: the table's delta.targetFileSize, else 100 MB)",
    )
    optimize.add_argument("--dry-run", action="store_true", help="count the small files, change nothing")


def _add_maintained_tables(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "tables", nargs="*", metavar="TABLE", help="Delta table: a path or a URI (default: every table of --lake)"
    )
    parser.add_argument("--lake", help="lake root (path or URI): its tables, and its checkpoints as readers")
    parser.add_argument(
        "--checkpoint",
        action="append",
        default=[],
        metavar="CKPT",
        help="a checkpoint outside the lake whose streams read these tables (repeat for several)",
    )


def _maintained_tables(args: argparse.Namespace) -> list:
    from streamops.checkpoint_tools.stream_safe_vacuum import lake_tables
    from streamops.core.storage.location import Location

    lake = lake_of(args)
    if args.tables:
        return [Location.of(t) for t in args.tables]
    if lake is None:
        raise StreamopsError("give one or more TABLEs, or --lake DIR for every table of a lake")
    return lake_tables(lake)


def _vacuum(args: argparse.Namespace) -> int:
    from streamops.checkpoint_tools.maintenance_text import vacuum_text
    from streamops.checkpoint_tools.stream_safe_vacuum import vacuum_tables

    if not args.dry_run and not args.yes:
        raise StreamopsError("vacuum deletes files: add --dry-run to see what it would delete, or --yes to delete them")
    results = vacuum_tables(
        _maintained_tables(args),
        lake_of(args),
        args.checkpoint,
        args.retention_hours,
        args.dry_run,
        args.allow_short_retention,
    )
    print_json({"tables": [r.to_json() for r in results]}) if args.json else print(vacuum_text(results))
    return 2 if any(r.refused for r in results) else 0


def _optimize(args: argparse.Namespace) -> int:
    from streamops.checkpoint_tools.maintenance_text import optimize_text
    from streamops.checkpoint_tools.stream_readers import find_readers
    from streamops.checkpoint_tools.stream_safe_optimize import optimize_table

    readers = find_readers(lake_of(args), args.checkpoint)
    results = [optimize_table(t, readers, args.target_size, args.dry_run) for t in _maintained_tables(args)]
    print_json({"tables": [r.to_json() for r in results]}) if args.json else print(optimize_text(results))
    return 2 if any(r.duplicated for r in results) else 0


def _add_fsck(commands: Subcommands) -> None:
    fsck = add_command(
        commands,
        "fsck",
        summary="list data files a table's log references that the store lacks or holds truncated; drop them",
        epilog=FSCK_EXAMPLE,
        handler=_fsck,
    )
    add_json_option(fsck)
    _add_maintained_tables(fsck)
    fsck.add_argument(
        "--yes",
        action="store_true",
        help="drop the damaged files from each table's log, recording them (without it nothing changes)",
    )


def _fsck(args: argparse.Namespace) -> int:
    from streamops.checkpoint_tools.stream_readers import find_readers
    from streamops.checkpoint_tools.table_fsck import exit_code, fsck_tables, fsck_text

    readers = find_readers(lake_of(args), args.checkpoint)
    results = fsck_tables(_maintained_tables(args), args.yes, readers)
    print_json({"tables": [r.to_json() for r in results]}) if args.json else print(fsck_text(results))
    return exit_code(results)


def _add_promote(commands: Subcommands) -> None:
    promote = add_command(
        commands,
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
    from streamops.core.lake_layout import LakeLayout
    from streamops.pipeline.silver.column_promotion import plan_promotion, promote_column

    lake = LakeLayout.at(args.lake)
    result = (
        promote_column(lake, args.event_type, args.field, args.to)
        if args.yes
        else plan_promotion(lake, args.event_type, args.field, args.to)
    )
    if args.json:
        print_json({"applied": args.yes, **result.as_dict()})
    elif args.yes:
        print(
            f"{result.event_type}: `{result.column}` {result.old_type} -> {result.new_type}; "
            f"{result.rows} rows rewritten, {result.rescued_moved} rescued values moved back"
        )
    else:
        print(
            f"would rewrite silver/{result.event_type} with `{result.column}` {result.old_type} -> "
            f"{result.new_type} and move its rescued values back; run again with --yes (pipeline stopped)"
        )
    return 0
