"""A progress log holding whole runs recorded from real queries (tests/monitor/fixtures), written
the way the monitor writes it: each progress row with the lag its sources report."""

from __future__ import annotations

import json
from pathlib import Path

from streamops.core.lake_layout import LakeLayout
from streamops.monitor.progress_event import QueryProgress, parse_event
from streamops.monitor.progress_log import ProgressLog
from streamops.monitor.progress_record import row_of
from streamops.monitor.source_backlog import SourceBacklog

FIXTURES = Path(__file__).resolve().parents[2] / "monitor" / "fixtures"
RECORDED_RUNS = {"orders_enriched": "sequence_kafka_lagging.jsonl", "window_rocksdb": "sequence_window_rocksdb.jsonl"}
"""Stream name: its recorded run (a Kafka query in Spark 4.x's layout; a windowed count on RocksDB)."""


def write_recorded_runs(lake: LakeLayout) -> None:
    rows = []
    for stream, name in RECORDED_RUNS.items():
        for line in (FIXTURES / name).read_text().splitlines():
            entry = json.loads(line)
            event = parse_event(entry["kind"], json.dumps(entry["json"]), entry["received_at"])
            reading = None
            if isinstance(event, QueryProgress):
                reading = SourceBacklog(None, clock=lambda: entry["received_at"]).measure(stream, event.sources)
            rows.append(row_of(event, stream, entry["received_at"], reading))
    ProgressLog(lake.query_progress).append(rows)
