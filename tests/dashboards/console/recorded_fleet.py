"""A progress log of hundreds of streams, built from progress and termination events recorded
from real queries (tests/monitor/fixtures), renamed per stream and re-timed so each stream
shows one status. Used by the screenshot test and bench/bench_console.py.

The statuses are not asserted by construction: callers check them with `fleet_status`, the
same judge the console uses.
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path

from streamops.core.delta_format.backlog import Backlog
from streamops.core.lake_layout import LakeLayout
from streamops.monitor.progress_event import QueryProgress, QueryStarted, QueryTerminated
from streamops.monitor.progress_log import ProgressLog
from streamops.monitor.progress_record import row_of
from streamops.monitor.source_backlog import BacklogReading

FIXTURES = Path(__file__).resolve().parents[2] / "monitor" / "fixtures"
BATCHES = 12
PLAN = ("ok", "ok", "ok", "ok", "idle", "idle", "lagging", "stopped", "stalled", "failed")
"""Status each stream is built for, by stream index modulo the plan's length."""


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch)) + f".{int(epoch % 1 * 1000):03d}Z"


def stream_name(index: int) -> str:
    return f"silver_g{index:04d}"


def intended_status(index: int) -> str:
    return PLAN[index % len(PLAN)]


def write_recorded_fleet(lake: LakeLayout, streams: int, now: float | None = None) -> None:
    """Append `streams` streams' runs to the lake's progress log (a few commits)."""
    current = time.time() if now is None else now
    template = json.loads((FIXTURES / "progress_delta.json").read_text())["progress"]
    terminated = json.loads((FIXTURES / "terminated_exception.json").read_text())
    rows = []
    for index in range(streams):
        rows.extend(_stream_rows(index, template, terminated, current))
    log = ProgressLog(lake.query_progress)
    for start in range(0, len(rows), 10_000):
        log.append(rows[start : start + 10_000])


def _stream_rows(index: int, template: dict, terminated: dict, now: float) -> list[dict]:
    status = intended_status(index)
    name, query_id = stream_name(index), f"00000000-0000-4000-8000-{index:012d}"
    run_id = f"11111111-0000-4000-8000-{index:012d}"
    # stalled streams last ran 20 minutes ago; the others every 5 s up to a few seconds ago
    end = now - (1200 if status == "stalled" else 3)
    first = end - 5 * BATCHES
    rows = [row_of(QueryStarted(query_id, run_id, name, first - 5, json.dumps({"id": query_id})), name, first - 5)]
    for batch in range(BATCHES):
        started = first + 5 * batch
        data = copy.deepcopy(template)
        rows_read = 0 if status == "idle" and batch == BATCHES - 1 else 200 + index % 7 * 50
        data.update(
            id=query_id,
            runId=run_id,
            name=name,
            batchId=batch,
            timestamp=_iso(started),
            numInputRows=rows_read,
            batchDuration=600,
        )
        data["durationMs"] = dict(data["durationMs"], triggerExecution=600, addBatch=480 + index % 5 * 20)
        # lagging: processed more slowly than rows arrive (the rate rule); files keep growing
        data["processedRowsPerSecond"] = 20.0 if status == "lagging" else 400.0 + index % 9 * 30
        files = {"lagging": batch + 1, "stalled": 4}.get(status, 0)
        reading = BacklogReading(Backlog(min(files, 3), files, files * 48_000, files * 5.0), files > 0, started)
        rows.append(row_of(QueryProgress.from_json(data), name, started + 0.6, reading, started - 4))
    if status in ("failed", "stopped"):
        event = dict(terminated, id=query_id, runId=run_id)
        if status == "stopped":
            event = {"id": query_id, "runId": run_id, "exception": None}
        rows.append(row_of(QueryTerminated.from_json(event, end + 1), name, end + 1))
    return rows
