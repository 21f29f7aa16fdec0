"""The supervisor on real queries: failures not caused by any record stop the stream with one
line naming the table and the way out, and are retried with exponential backoff."""

from __future__ import annotations

import json
import re
import threading
import time

from pipeline.delta_connector.connector import EmbeddedDelta
from pipeline.pipeline_events import Unmonitored
from pipeline.silver_stream import SilverSettings
from pipeline.supervisor import PipelineSettings, Supervisor
from streamops.lake_layout import LakeLayout


def write_events(landing, name: str, count: int) -> None:
    landing.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"event_type": "click", "event_id": f"{name}-{i}", "n": i}) for i in range(count)]
    (landing / name).write_text("\n".join(lines) + "\n")


def test_a_damaged_table_stops_the_stream_with_one_line_and_is_retried_with_backoff(spark, tmp_path):
    lake, landing = LakeLayout.at(tmp_path / "lake"), tmp_path / "landing"
    write_events(landing, "a.ndjson", 5)
    settings = PipelineSettings(lake=lake, landing=landing, trigger_seconds=0.5, silver=SilverSettings(max_files_per_trigger=5))
    assert Supervisor(spark, settings, EmbeddedDelta(), Unmonitored(), log=lambda line: None).run_until_idle().failures == {}

    newest = max((lake.bronze_events / "_delta_log").glob("*.json"))
    newest.write_text("not a delta commit\n")
    write_events(landing, "b.ndjson", 5)
    lines: list[str] = []
    supervisor = Supervisor(spark, settings, EmbeddedDelta(), Unmonitored(), log=lines.append)
    running = threading.Thread(target=supervisor.run_for, args=(None,))
    running.start()
    deadline = time.monotonic() + 120
    while sum(line.startswith("bronze failed") for line in lines) < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    supervisor.request_stop()
    running.join(60)
    report = supervisor.report

    bronze = [line for line in lines if line.startswith("bronze failed")]
    assert len(bronze) >= 3, lines
    for line in bronze:
        assert "\n" not in line and f"`{lake.bronze_events}`" in line, line
        assert "LakeTableError" in line or "TableUnreadableError" in line, line
    backoffs = [int(m.group(1)) for m in (re.search(r"restarting in (\d+)s$", line) for line in bronze) if m]
    assert backoffs[:3] == [1, 2, 4], bronze
    assert len(report.failures["bronze"]) == len(bronze)
