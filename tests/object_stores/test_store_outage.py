"""The object store stops answering mid-run for longer than every client's retries: the pipeline
says so in one line and waits, restarting its streams with a backoff, and once the store is back
it carries on where it was, exactly once. The store here is moto behind a TCP proxy that is cut
and restored (tcp_proxy.py); the lake and the landing are on it, through S3A and delta-rs."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest
from lake_accounting import assert_exactly_once, landed_lines
from store_servers import s3_store
from tcp_proxy import TcpProxy
from waiting import wait_until

from streamops.core.lake_layout import BRONZE_STREAM, LakeLayout
from streamops.pipeline.generator.run import generate
from streamops.pipeline.generator.settings import GeneratorSettings

pytestmark = [pytest.mark.e2e, pytest.mark.services, pytest.mark.spark]

OUTAGE_LINE = "does not answer"
FAILED = re.compile(r"^(\S+) failed \(")
RUNNING_AGAIN = re.compile(r"^(\S+) running again ")


def streams_down(log: str) -> set[str]:
    """Streams whose last line in the run's log says they failed, not that they run again."""
    state: dict[str, bool] = {}
    for line in log.splitlines():
        if match := FAILED.match(line):
            state[match.group(1)] = False
        elif match := RUNNING_AGAIN.match(line):
            state[match.group(1)] = True
    return {stream for stream, up in state.items() if not up}


def test_an_outage_longer_than_the_retries_is_one_line_then_the_run_carries_on_exactly_once(
    s3_server, store_env, tmp_path
):
    proxy = TcpProxy(int(s3_server.endpoint.rsplit(":", 1)[1]))
    store = s3_store(s3_server)
    store_env({**store.env, "AWS_ENDPOINT_URL": proxy.endpoint})
    waves = [
        generate(GeneratorSettings(out=tmp_path / f"wave{n}", events=1200, event_types=4, bad=0.01, seed=n))
        for n in (1, 2)
    ]
    landing = store.upload(tmp_path / "wave1", "outage/landing")
    lake = LakeLayout.at(f"{store.uri_prefix}/outage/lake")
    stderr = tmp_path / "run.err"
    run = [
        sys.executable, "-m", "streamops", "run", "--lake", str(lake.root), "--landing", landing,
        "--trigger", "1", "--types-per-group", "2", "--duration", "3600",
    ]  # fmt: skip
    lines = sum(w["lines_total"] for w in waves)
    with open(stderr, "wb") as out:
        pipeline = subprocess.Popen(run, env=os.environ, stderr=out, stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        commits = lake.checkpoint(BRONZE_STREAM) / "commits"
        wait_until(lambda: commits.is_dir() and any(p.name.isdigit() for p in commits.iterdir()), 300, "bronze on S3")
        proxy.cut()
        for path in (tmp_path / "wave2").glob("*.ndjson"):
            path.rename(path.with_name("wave2-" + path.name))
        store.upload(tmp_path / "wave2", "outage/landing")  # arrives during the outage, straight to the store
        wait_until(lambda: OUTAGE_LINE in stderr.read_text(errors="replace"), 240, "the outage line")
        time.sleep(10)  # the outage outlasts the restarts' first backoffs
        assert pipeline.poll() is None, "the run waits for the store"
        proxy.restore()
        wait_until(lambda: landed_lines(lake) == lines, 400, "both waves in bronze", poll=2)
        # a stream that failed as the store came back may still wait out its backoff: a stop then
        # finds it down (exit 1), so stop once every stream that failed runs again
        wait_until(lambda: not streams_down(stderr.read_text(errors="replace")), 120, "every stream running again")
        pipeline.send_signal(signal.SIGTERM)
        assert pipeline.wait(timeout=120) == 0, stderr.read_text(errors="replace")[-3000:]
        drained = subprocess.run(
            [*run[:-2], "--until-idle"], env=os.environ, capture_output=True, text=True, timeout=900
        )
        assert drained.returncode == 0, drained.stderr[-3000:]
        assert_exactly_once(lake, lines)
    finally:
        if pipeline.poll() is None:
            os.killpg(pipeline.pid, signal.SIGKILL)
        proxy.close()

    text = stderr.read_text(errors="replace")
    failures = [line for line in text.splitlines() if " failed (" in line]
    assert any(OUTAGE_LINE in line and "s3://" in line for line in failures), failures
    assert "\tat " not in text and "Traceback" not in text, text[-3000:]
