"""Only monitor/listener.py may import PySpark: `streamops status` and the exporter run without it."""

from __future__ import annotations

import subprocess
import sys

SPARK_FREE = [
    "streamops.cli.status",
    "streamops.monitor.event_queue",
    "streamops.monitor.exporter",
    "streamops.monitor.fleet",
    "streamops.monitor.fleet_status",
    "streamops.monitor.progress_event",
    "streamops.monitor.progress_log",
    "streamops.monitor.progress_worker",
    "streamops.monitor.source_backlog",
    "streamops.monitor.status_rules",
    "streamops.monitor.stream_monitor",
]


def test_every_module_but_the_listener_imports_without_pyspark():
    code = (
        f"import importlib, sys\nfor name in {SPARK_FREE!r}:\n    importlib.import_module(name)\n"
        "loaded = sorted(m for m in sys.modules if m == 'pyspark' or m.startswith('pyspark.'))\n"
        "print(','.join(loaded))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
