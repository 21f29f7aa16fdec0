"""The `streamops generate` subcommand: parse, run the generator, print the manifest or a summary."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

from streamops.cli.options import Subcommands, add_command, add_json_option, print_json
from streamops.core.plain_text import format_table
from streamops.pipeline.exceptions import PipelineConfigError
from streamops.pipeline.generator.event_clock import DEFAULT_START_TIME, parse_start_time
from streamops.pipeline.generator.kafka_writer import KafkaTarget
from streamops.pipeline.generator.landing_writer import MANIFEST_NAME, LandingFiles
from streamops.pipeline.generator.line_target import LineTarget
from streamops.pipeline.generator.run import Progress, generate
from streamops.pipeline.generator.settings import DEFAULT_EVENTS_PER_FILE, GeneratorSettings
from streamops.pipeline.generator.violations import RULES_FILE_NAME, VIOLATION_RULES

EXAMPLES = """examples:
  streamops generate --out landing --events 100000 --event-types 300 --json
  streamops generate --out landing --events 480000 --rate 8000 --drift 0.2 --bad 0.01
  streamops generate --out landing --events 20000 --event-types 10 --violations 0.02
  streamops generate --out run1 --events 100000 --kafka-bootstrap 127.0.0.1:9092 --topic events --partitions 4
"""

PROGRESS_INTERVAL_SECONDS = 0.95


def register(subcommands: Subcommands) -> None:
    """Add `streamops generate`."""
    parser = add_command(
        subcommands,
        "generate",
        summary="write drifting game-telemetry NDJSON files and a ground-truth manifest",
        description=(
            "Write NDJSON game-telemetry events into DIR with controlled schema drift and bad "
            f"records, plus DIR/{MANIFEST_NAME}: the counts the lake must hold afterwards."
        ),
        epilog=EXAMPLES,
        handler=handle,
    )
    parser.add_argument("--out", required=True, type=Path, help="landing directory (created; must not hold a run)")
    parser.add_argument("--events", required=True, type=int, help="lines to write, bad records included")
    parser.add_argument("--event-types", type=int, default=300, help="number of event types K (default 300)")
    parser.add_argument("--titles", type=int, default=400, help="number of game titles T (default 400)")
    parser.add_argument("--drift", type=float, default=0.1, help="fraction of event types that drift (default 0.1)")
    parser.add_argument(
        "--bad", type=float, default=0.001, help="fraction of lines that are bad records (default 0.001)"
    )
    parser.add_argument(
        "--violations",
        type=float,
        default=0.0,
        metavar="R",
        help=(
            "fraction of lines that are events breaking data-quality rules on purpose (default 0); "
            f"the rules go to DIR/{RULES_FILE_NAME} for `streamops run --expectations`"
        ),
    )
    parser.add_argument(
        "--rate", type=float, default=None, help="sustain this many events/s (default: as fast as possible)"
    )
    parser.add_argument("--seed", type=int, default=1, help="random seed; same seed, same files (default 1)")
    parser.add_argument(
        "--events-per-file",
        type=int,
        default=None,
        help=f"lines per file (default {DEFAULT_EVENTS_PER_FILE}, or one second of events with --rate)",
    )
    parser.add_argument(
        "--start-time",
        default=DEFAULT_START_TIME,
        help=f"event_time of the first line without --rate (default {DEFAULT_START_TIME})",
    )
    parser.add_argument(
        "--time-span",
        type=float,
        default=3600.0,
        help="seconds of event time the run spans without --rate (default 3600)",
    )
    kafka = parser.add_argument_group("producing to Kafka instead of files")
    kafka.add_argument("--kafka-bootstrap", metavar="HOST:PORT[,...]", help="produce the lines to these Kafka brokers")
    kafka.add_argument("--topic", help="the topic to produce to (created when missing; DIR keeps only the manifest)")
    kafka.add_argument(
        "--partitions", type=int, default=1, help="partitions of a topic the generator creates (default 1)"
    )
    add_json_option(parser)
    parser.error = _one_line_error(parser)  # type: ignore[method-assign]


def _one_line_error(parser: argparse.ArgumentParser):
    def error(message: str) -> NoReturn:
        parser.exit(2, f"{parser.prog}: error: {message} (see {parser.prog} --help)\n")

    return error


def handle(args: argparse.Namespace) -> int:
    settings = GeneratorSettings(
        out=args.out,
        events=args.events,
        event_types=args.event_types,
        titles=args.titles,
        drift=args.drift,
        bad=args.bad,
        violations=args.violations,
        rate=args.rate,
        seed=args.seed,
        events_per_file=args.events_per_file,
        start_time=parse_start_time(args.start_time),
        time_span_seconds=args.time_span,
        target=_target(args),
    )
    manifest = generate(settings, on_file=_ProgressPrinter())
    if args.json:
        print_json(manifest)
    else:
        print(_summary(manifest, settings.out, settings.target.describe(settings.out)))
    return 0


def _target(args: argparse.Namespace) -> LineTarget:
    if (args.kafka_bootstrap is None) != (args.topic is None):
        raise PipelineConfigError("--kafka-bootstrap and --topic go together")
    if args.kafka_bootstrap is None:
        return LandingFiles()
    return KafkaTarget(args.kafka_bootstrap, args.topic, args.partitions)


class _ProgressPrinter:
    """About one stderr line a second (one per file under `--rate`), and one for the last file."""

    def __init__(self) -> None:
        self._last = float("-inf")

    def __call__(self, progress: Progress) -> None:
        now = time.monotonic()
        finished = progress.lines_done >= progress.lines_total
        if not finished and now - self._last < PROGRESS_INTERVAL_SECONDS:
            return
        self._last = now
        rate = progress.lines_done / progress.elapsed_seconds if progress.elapsed_seconds > 0 else 0.0
        behind = f", {progress.behind_seconds:.1f} s behind schedule" if progress.behind_seconds >= 1 else ""
        print(
            f"generate: {progress.lines_done}/{progress.lines_total} lines, {progress.file.name}, "
            f"{rate:,.0f} lines/s{behind}",
            file=sys.stderr,
        )


def _summary(manifest: dict[str, Any], out: Path, where: str) -> str:
    rows = [
        (kind, len(types), ", ".join(types[:3]) + (" ..." if len(types) > 3 else ""))
        for kind, types in manifest["drift"].items()
    ]
    bad_rows = [(kind, count) for kind, count in manifest["bad"].items()]
    return "\n".join(
        [
            f"wrote {manifest['lines_total']} lines in {len(manifest['files'])} files to {where} "
            f"({manifest['events_total']} events of {len(manifest['event_types'])} types, "
            f"{manifest['bad_total']} bad lines, {manifest['incompatible_rows_total']} incompatible rows)",
            "",
            format_table(("drift", "types", "examples"), rows),
            "",
            format_table(("bad record", "lines"), bad_rows),
            *_violation_lines(manifest, out),
            "",
            f"ground truth: {out / MANIFEST_NAME}",
        ]
    )


def _violation_lines(manifest: dict[str, Any], out: Path) -> list[str]:
    if manifest["expectations_file"] is None:
        return []
    failed = [sum(rules[rule.name] for rules in manifest["violations"].values()) for rule in VIOLATION_RULES]
    rows = [(rule.name, rule.action, count) for rule, count in zip(VIOLATION_RULES, failed)]
    return [
        "",
        format_table(("rule", "action", "rows failing"), rows),
        f"rules: {out / manifest['expectations_file']}",
    ]
