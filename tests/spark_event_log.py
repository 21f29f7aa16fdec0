"""Spark's own event log, turned on for a driver started as a subprocess, and what it says the
driver received: the proof that a run's rows stayed on the executors (tasks send results to the
driver, and Spark records each result's size)."""

from __future__ import annotations

import json
from pathlib import Path


def event_log_conf_dir(root: Path) -> tuple[Path, Path]:
    """Write a `SPARK_CONF_DIR` (Spark's standard config directory) under `root` whose defaults
    turn on a plain, uncompressed, single-file event log; return it and the log's directory."""
    conf_dir, events = root / "spark-conf", root / "spark-events"
    conf_dir.mkdir(parents=True, exist_ok=True)
    events.mkdir(exist_ok=True)
    (conf_dir / "spark-defaults.conf").write_text(
        f"spark.eventLog.enabled true\nspark.eventLog.dir {events.as_uri()}\n"
        "spark.eventLog.rolling.enabled false\nspark.eventLog.compress false\n"
    )
    return conf_dir, events


def task_result_bytes(events: Path) -> int:
    """Bytes of all task results the driver received, summed over every application logged."""
    total = 0
    for log in events.iterdir():
        with log.open() as lines:
            for line in lines:
                event = json.loads(line)
                if event.get("Event") == "SparkListenerTaskEnd":
                    total += (event.get("Task Metrics") or {}).get("Result Size", 0)
    return total
