"""`streamops demo`: drifting load, the pipeline with its metrics, and the console, at once."""

from __future__ import annotations

from streamops.core.extras import require

require("pipeline", "streamops demo")

import argparse
from pathlib import Path

from streamops.cli.options import Subcommands, add_command
from streamops.pipeline.delta_connector.connector import CONNECTORS
from streamops.pipeline.demo import DEMO_PARTITIONS, DEMO_TOPIC

DEMO_EXAMPLE = """examples:
  streamops demo                                   # until Ctrl-C; console on http://127.0.0.1:8501
  streamops demo --duration 300 --rate 500 --event-types 20 --workdir /tmp/streamops-demo
  streamops demo --kafka-bootstrap 127.0.0.1:9092 --topic demo-events
  streamops demo --expectations rules.yaml         # data-quality rules on every batch (see streamops run)

what runs: a drifting load with bad records (the generator) lands files in WORKDIR/landing (or
produces them to a Kafka topic that bronze reads), the pipeline ingests them into WORKDIR/lake
with the monitor and its Prometheus exporter, and the ops console serves the lake. Ctrl-C stops
all of it and exits 0.
"""


def register(subcommands: Subcommands) -> None:
    """Add `streamops demo`."""
    demo = add_command(
        subcommands,
        "demo",
        summary="generate drifting load, run the pipeline with metrics, and serve the console",
        description="Everything at once on this machine: drifting load, the pipeline with the "
        "monitor and its Prometheus exporter, and the ops console. Prints the URLs.",
        epilog=DEMO_EXAMPLE,
        handler=_demo,
    )
    demo.add_argument(
        "--workdir",
        type=Path,
        default=Path("streamops-demo"),
        help="where landing/ and lake/ go (default ./streamops-demo; reused if present)",
    )
    demo.add_argument("--rate", type=float, default=2000.0, help="events per second (default 2000)")
    demo.add_argument("--event-types", type=int, default=50, help="event types (default 50)")
    demo.add_argument("--duration", type=float, metavar="SECONDS", help="stop after SECONDS (default: at Ctrl-C)")
    demo.add_argument("--console-port", type=int, default=8501, help="console port (default 8501)")
    demo.add_argument("--metrics-port", type=int, default=9108, help="Prometheus metrics port (default 9108)")
    demo.add_argument("--delta", choices=CONNECTORS, default="embedded", help="the Delta connector (see streamops run)")
    demo.add_argument(
        "--expectations",
        type=Path,
        metavar="FILE",
        help="data-quality rules checked on every batch (see streamops run)",
    )
    kafka = demo.add_argument_group("the load through Kafka instead of landing files")
    kafka.add_argument(
        "--kafka-bootstrap", metavar="HOST:PORT[,...]",
        help="produce the load to these Kafka brokers and have bronze read the topic (needs streamops[kafka])",
    )  # fmt: skip
    kafka.add_argument(
        "--topic",
        help=f"the topic (default {DEMO_TOPIC}; created with {DEMO_PARTITIONS} partitions when missing)",
    )


def _demo(args: argparse.Namespace) -> int:
    from streamops.pipeline.demo import DemoOptions, run_demo
    from streamops.pipeline.expectations.rules import NO_EXPECTATIONS
    from streamops.pipeline.expectations.rules_file import load_expectations

    return run_demo(
        DemoOptions(
            workdir=args.workdir,
            rate=args.rate,
            event_types=args.event_types,
            duration=args.duration,
            console_port=args.console_port,
            metrics_port=args.metrics_port,
            delta=args.delta,
            kafka_bootstrap=args.kafka_bootstrap,
            topic=args.topic,
            expectations=NO_EXPECTATIONS if args.expectations is None else load_expectations(args.expectations),
        )
    )
