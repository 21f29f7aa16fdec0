"""`streamops demo` end to end, in a subprocess as a user runs it: the printed URLs answer while
it runs, it stops cleanly on --duration and on Ctrl-C (SIGINT), and the lake holds data."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import psutil
import pytest
from deltalake import DeltaTable
from ports import free_port
from waiting import wait_until

from streamops.core.lake_layout import LakeLayout
from streamops.pipeline.demo import DemoOptions
from streamops.pipeline.exceptions import DemoError

pytestmark = pytest.mark.e2e

URL_LINE = re.compile(r"^\s+(console|metrics)\s+(http://\S+)$")


class Demo:
    """The demo command in its own process group; stdout lines collected as they come."""

    def __init__(self, workdir: Path, *args: str) -> None:
        self.console_port, self.metrics_port = free_port(), free_port()
        self.stderr = open(workdir.parent / f"{workdir.name}.stderr", "wb")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamops",
                "demo",
                "--workdir",
                str(workdir),
                "--rate",
                "200",
                "--event-types",
                "8",
                "--console-port",
                str(self.console_port),
                "--metrics-port",
                str(self.metrics_port),
                *args,
            ],
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for_line(self, pattern: str, timeout: float) -> str:
        def first_match() -> str | None:
            found = [line for line in self.lines if re.search(pattern, line)]
            assert found or self.process.poll() is None, "the demo exited early"
            return found[0] if found else None

        try:
            return wait_until(first_match, timeout, f"a line matching {pattern!r}", 0.2)
        except AssertionError as error:
            raise AssertionError(f"{error}; the demo printed: {self.lines}") from None

    def urls(self) -> dict[str, str]:
        return {m.group(1): m.group(2) for line in self.lines if (m := URL_LINE.match(line))}

    def finish(self, timeout: float) -> int:
        try:
            return self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(30)
            self._reader.join(5)
            self.stderr.close()


def get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return answer.status, answer.read().decode(errors="replace")


def group_ended(pgid: int) -> bool:
    """No live process is left in the demo's group, so nothing of it (the load included) can
    still write; a zombie waiting for its reaper runs no code."""
    for process in psutil.process_iter(["status"]):
        try:
            if os.getpgid(process.pid) == pgid and process.info["status"] != psutil.STATUS_ZOMBIE:
                return False
        except ProcessLookupError:
            continue
    return True


def port_closed(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


def assert_lake_has_data(lake: LakeLayout) -> None:
    assert DeltaTable(str(lake.bronze_events)).count() > 0
    assert DeltaTable(str(lake.bronze_quarantine)).count() > 0, "the load has bad records"
    silver = [p for p in lake.silver_root.iterdir() if DeltaTable.is_deltatable(str(p))]
    assert silver and all(DeltaTable(str(p)).count() > 0 for p in silver)
    assert DeltaTable.is_deltatable(str(lake.query_progress))


@pytest.mark.spark
def test_demo_serves_console_and_metrics_until_ctrl_c_stops_everything_and_exits_0(tmp_path):
    demo = Demo(tmp_path / "demo")
    try:
        demo.wait_for_line(r"^\s+metrics\s+http://", 90)
        urls = demo.urls()
        assert urls == {
            "console": f"http://127.0.0.1:{demo.console_port}",
            "metrics": f"http://127.0.0.1:{demo.metrics_port}/metrics",
        }
        status, page = get(urls["console"] + "/")
        assert status == 200 and "<title>" in page
        assert get(urls["console"] + "/_stcore/health") == (200, "ok")
        # streams appear in the metrics once their queries start, a little after the exporter
        sample = 'streamops_stream_up{stream="bronze"} 1.0'
        wait_until(lambda: sample in get(urls["metrics"])[1], 60, sample, 1)
        demo.wait_for_line(r"^first silver commit \(.*\) \d+s after start$", 150)
        os.killpg(demo.process.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends
    finally:
        code = demo.finish(timeout=120)
    assert code == 0, demo.lines
    assert re.search(
        r"^streamops demo stopped after \d+s: \d+ lines in \d+ files, [1-9]\d* bronze rows", "\n".join(demo.lines), re.M
    )
    assert port_closed(demo.console_port) and port_closed(demo.metrics_port)
    wait_until(lambda: group_ended(demo.process.pid), 10, "every process of the demo to end")
    assert_lake_has_data(LakeLayout.at(tmp_path / "demo" / "lake"))
    assert b"ERROR" not in (tmp_path / "demo.stderr").read_bytes(), "a clean stop logs no error"


@pytest.mark.spark
def test_demo_stops_by_itself_after_its_duration(tmp_path):
    demo = Demo(tmp_path / "demo", "--duration", "25")
    code = demo.finish(timeout=150)
    assert code == 0, demo.lines
    assert re.search(r"^streamops demo stopped after \d+s: [1-9]\d* lines in \d+ files", "\n".join(demo.lines), re.M)
    assert port_closed(demo.console_port) and port_closed(demo.metrics_port)
    wait_until(lambda: group_ended(demo.process.pid), 10, "every process of the demo to end")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"rate": 0}, "--rate must be a positive number of events/s"),
        ({"event_types": 0}, "--event-types must be between 1 and"),
        ({"duration": -1}, "--duration must be a positive number of seconds"),
        ({"console_port": 9108}, "--console-port and --metrics-port must differ"),
        ({"topic": "events"}, "--topic needs --kafka-bootstrap HOST:PORT"),
    ],
)
def test_wrong_options_are_refused_before_anything_starts(tmp_path, options, message):
    with pytest.raises(DemoError, match=message):
        DemoOptions(workdir=tmp_path, **options)
