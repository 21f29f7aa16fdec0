"""`streamops console`: arguments are checked with one-line errors before Streamlit starts."""

from __future__ import annotations

import socket
import subprocess
import sys

from streamops.cli.console import console_command
from streamops.dashboards.console import APP_PATH


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "streamops", *args], capture_output=True, text=True, timeout=60)


def test_a_missing_lake_is_refused_in_one_line(tmp_path):
    result = run_cli("console", "--lake", str(tmp_path / "nowhere"))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"streamops: error: the lake `{tmp_path / 'nowhere'}` does not exist: pass the --lake of `streamops run`"
    ]


def test_a_busy_port_is_refused_in_one_line(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_cli("console", "--lake", str(tmp_path), "--port", str(port))
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"streamops: error: cannot serve on 127.0.0.1:{port}: ") and "pick another --port" in line


def test_the_server_binds_loopback_headless_and_without_telemetry():
    command = console_command("127.0.0.1", 8501)
    assert command[:5] == [sys.executable, "-m", "streamlit", "run", str(APP_PATH)]
    options = dict(zip(command[5::2], command[6::2]))
    assert options["--server.address"] == "127.0.0.1" and options["--server.port"] == "8501"
    assert options["--server.headless"] == "true" and options["--browser.gatherUsageStats"] == "false"


def test_help_has_an_example():
    result = run_cli("console", "--help")
    assert result.returncode == 0 and "streamops console --lake lake" in result.stdout


def test_the_console_imports_neither_the_pipeline_nor_spark():
    views = ["fleet_view", "stream_view", "schema_view", "quarantine_view", "groups_view"]
    code = (
        "import sys\n"
        + "".join(f"import streamops.dashboards.console.{v}\n" for v in views)
        + "import streamops.cli.console\n"
        + "print(sorted({m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')} "
        + "| {m for m in sys.modules if m.startswith('streamops.pipeline')}))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
