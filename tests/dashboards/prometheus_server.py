"""A real Prometheus (Debian's `prometheus` binary) for tests: own port, own config, own storage.

Started with a temporary config that scrapes the given targets every second; stopped (and its
process reaped) when the context exits, so no server outlives the test that started it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import yaml
from ports import free_port
from waiting import wait_until

from streamops.dashboards.prometheus_rules import scrape_document

SCRAPE_INTERVAL = "1s"


@dataclass(frozen=True)
class PrometheusServer:
    url: str
    log: Path

    def get(self, path: str, **params: str | Sequence[str]) -> dict[str, Any]:
        query = urllib.parse.urlencode(params, doseq=True)
        try:
            with urllib.request.urlopen(f"{self.url}{path}?{query}", timeout=30) as response:
                return json.load(response)
        except urllib.error.HTTPError as error:
            return json.load(error)

    def query(self, expr: str) -> dict[str, Any]:
        """`/api/v1/query` at the current time; the decoded JSON, errors included."""
        return self.get("/api/v1/query", query=expr)

    def label_values(self, label: str, selector: str) -> dict[str, Any]:
        return self.get(f"/api/v1/label/{label}/values", **{"match[]": selector})

    def targets_up(self) -> bool:
        active = self.get("/api/v1/targets")["data"]["activeTargets"]
        return bool(active) and all(target["health"] == "up" for target in active)


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError):
        return False


@contextmanager
def running_prometheus(work_dir: Path, targets: Sequence[str]) -> Iterator[PrometheusServer]:
    binary = shutil.which("prometheus")
    assert binary, "prometheus is missing: `apt-get install -y prometheus` (.ci/run installs it)"
    work_dir.mkdir(parents=True, exist_ok=True)
    config = work_dir / "prometheus.yml"
    document = scrape_document(targets[0], rule_files=(), interval=SCRAPE_INTERVAL)
    document["scrape_configs"][0]["static_configs"] = [{"targets": list(targets)}]
    config.write_text(yaml.safe_dump(document))
    port = free_port()
    log = work_dir / "prometheus.log"
    with log.open("w") as log_file:
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={work_dir / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    server = PrometheusServer(f"http://127.0.0.1:{port}", log)
    try:
        wait_until(lambda: _ready(server.url) or process.poll() is not None, 30, "Prometheus to start", 0.2)
        assert process.poll() is None, f"Prometheus did not start:\n{log.read_text()}"
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
