"""End to end: a landing of Hypothesis-generated hostile lines through `streamops run
--until-idle`. Every line ends in bronze or quarantine, every bronze row in silver or
quarantine, no stream fails, and the command exits 0."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from deltalake import DeltaTable
from hostile_lines import landing_lines
from hypothesis import HealthCheck, given, settings

from streamops.core.delta_format.read import read_delta
from streamops.core.lake_layout import LakeLayout

pytestmark = [pytest.mark.e2e, pytest.mark.spark]


def drawn_lines(count: int) -> list[bytes]:
    """`count` lines drawn by Hypothesis with a fixed seed. Spark's text source also ends a line
    at a carriage return, so `\\r` becomes a space to keep one line one record."""
    lines: list[bytes] = []

    @settings(
        max_examples=count, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck)
    )
    @given(landing_lines)
    def collect(line: bytes) -> None:
        lines.append(line.replace(b"\r", b" "))

    collect()
    return lines


def test_hostile_landing_is_fully_accounted_for(tmp_path, connector_name):
    lines = drawn_lines(400)
    landing = tmp_path / "landing"
    landing.mkdir()
    for number, start in enumerate(range(0, len(lines), 100)):
        (landing / f"part-{number:03d}.ndjson").write_bytes(
            b"".join(line + b"\n" for line in lines[start : start + 100])
        )
    lake = LakeLayout.at(tmp_path / "lake")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "streamops",
            "run",
            "--lake",
            str(lake.root),
            "--landing",
            str(landing),
            "--until-idle",
            "--delta",
            connector_name,
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    report = json.loads(run.stdout)
    assert report["failures"] == {}

    quarantine = read_delta(str(lake.bronze_quarantine), columns=["stream", "reason"]).to_pylist()
    bronze_quarantine = [q for q in quarantine if q["stream"] == "bronze"]
    silver_quarantine = [q for q in quarantine if q["stream"].startswith("silver_")]
    bronze_rows = DeltaTable(str(lake.bronze_events)).count()
    assert bronze_rows + len(bronze_quarantine) == len(lines)
    assert bronze_rows > 50 and len(bronze_quarantine) > 50
    silver_rows = sum(report["lake"]["silver_rows"].values())
    assert silver_rows + len(silver_quarantine) == bronze_rows
    assert "unprocessable" not in {q["reason"] for q in quarantine}
