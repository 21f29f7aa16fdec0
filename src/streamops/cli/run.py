"""`streamops run`: the bronze/silver pipeline on a lake. Spark is imported only inside the handler."""

from __future__ import annotations

from streamops.core.extras import require

require("pipeline", "streamops run")

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from streamops.cli.options import Subcommands, add_command, add_json_option, print_json
from streamops.core.plain_text import format_table
from streamops.pipeline.cdc.cdc_settings import CDC_FORMATS
from streamops.pipeline.delta_connector.connector import CONNECTORS
from streamops.pipeline.records.record_rules import MAX_RECORD_BYTES
from streamops.pipeline.registry.event_groups import DEFAULT_TYPES_PER_GROUP
from streamops.pipeline.run.supervisor import STAGES
from streamops.pipeline.silver.silver_stream import ON_INCOMPATIBLE, POLL_SECONDS

if TYPE_CHECKING:
    from streamops.pipeline.run.stop_signals import StopSignals
    from streamops.pipeline.run.supervisor import RunReport
    from streamops.pipeline.silver.silver_stream import SilverSettings

RUN_EXAMPLE = """examples:
  streamops run --lake lake --landing landing --until-idle
  streamops run --lake lake --landing landing --duration 300 --trigger 2 --metrics-port 9108
  streamops run --lake lake --landing landing --until-idle --delta native --stages bronze
  streamops run --lake lake --landing landing --until-idle --expectations rules.yaml
  streamops run --lake lake --kafka-bootstrap 127.0.0.1:9092 --topics events --max-offsets-per-trigger 100000
  streamops run --lake lake --kafka-bootstrap 127.0.0.1:9092 --topics shop.public.customers,shop.public.orders --cdc debezium --cdc-history
  streamops run --lake lake --landing changes --cdc debezium --cdc-keys public.order_lines=order_id,line --until-idle
"""


def register(subcommands: Subcommands) -> None:
    """Add `streamops run`."""
    run = add_command(
        subcommands,
        "run",
        summary="run the bronze/silver pipeline on a lake",
        description="Ingest landing NDJSON files or Kafka topics into bronze, the schema registry and typed "
        "silver tables.",
        epilog=RUN_EXAMPLE,
        handler=_run,
    )
    run.add_argument("--lake", required=True, help="root of the lake: a directory or a URI (s3://, s3a://)")
    run.add_argument("--landing", help="where producers drop NDJSON files: a directory or a URI (s3://, s3a://)")
    _add_kafka_options(run)
    _add_cdc_options(run)
    mode = run.add_mutually_exclusive_group()
    mode.add_argument("--until-idle", action="store_true", help="process all available input, then exit")
    mode.add_argument("--duration", type=float, metavar="SECONDS", help="run continuously for SECONDS")
    run.add_argument("--trigger", type=float, default=5.0, metavar="SECONDS", help="micro-batch interval (default 5)")
    run.add_argument(
        "--silver-poll",
        type=_seconds,
        default=POLL_SECONDS,
        metavar="SECONDS",
        help=f"how often the silver groups look for a new bronze commit, at most every --trigger (default {POLL_SECONDS:g})",
    )
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
    run.add_argument(
        "--expectations",
        type=Path,
        metavar="FILE",
        help="data-quality rules checked on every batch, each warn, drop or fail (YAML or TOML; docs/expectations.md)",
    )
    run.add_argument("--max-files-per-trigger", type=int, default=100, help="landing files per bronze batch")
    run.add_argument(
        "--max-record-bytes",
        type=_positive,
        default=MAX_RECORD_BYTES,
        metavar="N",
        help=f"longer lines go to quarantine as too_large, and no more of a line is kept (default {MAX_RECORD_BYTES})",
    )
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


def _positive(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number above 0")
    return number


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")
    return seconds


def _add_kafka_options(run: argparse.ArgumentParser) -> None:
    kafka = run.add_argument_group("reading Kafka instead of --landing")
    kafka.add_argument("--kafka-bootstrap", metavar="HOST:PORT[,...]", help="the Kafka brokers bronze reads from")
    topics = kafka.add_mutually_exclusive_group()
    topics.add_argument("--topics", metavar="T[,T...]", help="the topics to read, comma separated")
    topics.add_argument("--topic-pattern", metavar="REGEX", help="read every topic whose name matches REGEX")
    kafka.add_argument(
        "--starting-offsets", default="earliest",
        help="where a new bronze checkpoint starts: earliest (default), latest, or Spark's JSON of offsets",
    )  # fmt: skip
    kafka.add_argument("--max-offsets-per-trigger", type=int, metavar="N", help="records per bronze batch, at most")
    kafka.add_argument(
        "--kafka-option", action="append", default=[], metavar="KEY=VALUE",
        help="an option of Spark's Kafka source, passed as given (kafka.security.protocol=SSL, minPartitions=4, ...)",
    )  # fmt: skip
    kafka.add_argument(
        "--kafka-consumer-group", metavar="GROUP",
        help="after each batch and when the run ends, commit bronze's committed Kafka position to consumer group "
        "GROUP, so kafka-consumer-groups, Burrow and kafka_exporter see its lag (Spark still restarts from its "
        "checkpoint)",
    )  # fmt: skip
    kafka.add_argument(
        "--allow-data-loss", action="store_true",
        help="when retention deleted offsets bronze had not read, read what is left and record each lost range "
        "in _system/kafka_data_loss (default: stop, naming the lost range)",
    )  # fmt: skip


def _add_cdc_options(run: argparse.ArgumentParser) -> None:
    cdc = run.add_argument_group("change data capture (docs/cdc.md)")
    cdc.add_argument(
        "--cdc", choices=CDC_FORMATS,
        help="the input is change events of database tables (debezium: Debezium's JSON, with or without the "
        "schema/payload wrapper): each source table becomes silver/<schema.table>, its current state, by MERGE",
    )  # fmt: skip
    cdc.add_argument(
        "--cdc-keys", action="append", default=[], metavar="TABLE=COL[,COL]",
        help="the key columns of a source table (repeat per table; TABLE is schema.table or the bare table name); "
        "default: the fields of the Kafka record key Debezium writes",
    )  # fmt: skip
    cdc.add_argument(
        "--cdc-sequence", action="append", default=[], metavar="TABLE=COL",
        help="order a source table's changes by one of its columns (a number or a timestamp, e.g. updated_at; "
        "DLT's sequence_by) instead of the database's log position, which breaks ties (repeat per table)",
    )  # fmt: skip
    cdc.add_argument(
        "--cdc-history", action="store_true",
        help="also keep each table's SCD type 2 history in silver/<table>__history (__valid_from/__valid_to)",
    )  # fmt: skip


def _ingest_mode(args: argparse.Namespace):
    """What the flags say the lines are: the changes `--cdc` names, else events."""
    from streamops.pipeline.bronze.events_mode import EVENTS
    from streamops.pipeline.cdc.cdc_settings import CdcSettings, parse_cdc_keys, parse_cdc_sequences
    from streamops.pipeline.exceptions import PipelineConfigError
    from streamops.pipeline.run.ingest_modes import change_mode

    if args.cdc is None:
        if args.cdc_keys or args.cdc_sequence or args.cdc_history:
            raise PipelineConfigError("--cdc-keys, --cdc-sequence and --cdc-history need --cdc debezium")
        return EVENTS
    return change_mode(
        CdcSettings(
            format=args.cdc,
            keys=parse_cdc_keys(args.cdc_keys),
            sequences=parse_cdc_sequences(args.cdc_sequence),
            history=args.cdc_history,
        )
    )


def _line_input(args: argparse.Namespace):
    """Where the flags say bronze reads: --landing, or the Kafka topics of --kafka-bootstrap."""
    from streamops.pipeline.bronze.landing_input import LandingInput
    from streamops.pipeline.exceptions import PipelineConfigError

    if args.kafka_bootstrap is None:
        if args.topics or args.topic_pattern:
            raise PipelineConfigError("--topics and --topic-pattern need --kafka-bootstrap HOST:PORT")
        if args.kafka_consumer_group is not None:
            raise PipelineConfigError("--kafka-consumer-group needs bronze to read Kafka (--kafka-bootstrap)")
        if not args.landing:
            raise PipelineConfigError("give the pipeline one input: --landing DIR, or --kafka-bootstrap with --topics")
        return LandingInput(args.landing, max_files_per_trigger=args.max_files_per_trigger)
    if args.landing:
        raise PipelineConfigError("give --landing or --kafka-bootstrap, not both")
    return _kafka_input(args)


def _kafka_input(args: argparse.Namespace):
    from streamops.pipeline.bronze.kafka_input import KafkaInput
    from streamops.pipeline.exceptions import PipelineConfigError

    options = {}
    for pair in args.kafka_option:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise PipelineConfigError(f"--kafka-option takes KEY=VALUE, got `{pair}`")
        options[key] = value
    return KafkaInput(
        bootstrap=args.kafka_bootstrap,
        topics=tuple(t for t in (args.topics or "").split(",") if t),
        topic_pattern=args.topic_pattern,
        starting_offsets=args.starting_offsets,
        max_offsets_per_trigger=args.max_offsets_per_trigger,
        options=options,
        allow_data_loss=args.allow_data_loss,
        consumer_group=args.kafka_consumer_group,
    )


def _run(args: argparse.Namespace) -> int:
    from streamops.core.lake_layout import LakeLayout
    from streamops.pipeline.lake_summary import summarize_lake
    from streamops.pipeline.run.stop_signals import StopSignals
    from streamops.pipeline.silver.silver_stream import SilverSettings

    silver = SilverSettings(
        types_per_group=1 if args.one_query_per_event_type else args.types_per_group,
        on_incompatible=args.on_incompatible,
        poll_seconds=args.silver_poll,
    )
    with StopSignals() as signals:
        report = _run_until_stopped(args, silver, signals)
    summary = summarize_lake(LakeLayout.at(args.lake))
    if args.json:
        print_json(
            {
                "lake": summary.as_dict(),
                "failures": report.failures,
                "down": report.down,
                "stopped_by": signals.signal_name,
            }
        )
    else:
        print(_summary_table(summary))
        for stream, errors in sorted(report.failures.items()):
            state = "down at the end" if stream in report.down else "recovered"
            print(f"{stream} failed {len(errors)}x ({state}), last: {errors[-1]}")
    if signals.signal_name is not None:
        print(f"streamops run: stopped by {signals.signal_name} between batches", file=sys.stderr)
    return 1 if report.failed else 0


def _run_until_stopped(args: argparse.Namespace, silver: SilverSettings, signals: StopSignals) -> RunReport:
    from streamops.pipeline.expectations.rules import NO_EXPECTATIONS
    from streamops.pipeline.expectations.rules_file import load_expectations
    from streamops.pipeline.run.pipeline_run import RunOptions, run_pipeline

    return run_pipeline(
        RunOptions(
            lake=args.lake,
            input=_line_input(args),
            mode=_ingest_mode(args),
            until_idle=args.until_idle,
            duration=args.duration,
            trigger_seconds=args.trigger,
            metrics_port=args.metrics_port,
            metrics_host=args.metrics_host,
            silver=silver,
            delta=args.delta,
            master=args.master,
            stages=args.stages,
            max_record_bytes=args.max_record_bytes,
            expectations=NO_EXPECTATIONS if args.expectations is None else load_expectations(args.expectations),
        ),
        on_start=signals.on_start,
    )


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
