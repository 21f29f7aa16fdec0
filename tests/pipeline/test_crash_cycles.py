"""Exactly once across real crashes: bench/bench_crash_cycles.py SIGKILLs the whole pipeline
(driver, JVM, workers) at random moments while input keeps arriving, then drains; nothing may be
lost or duplicated in bronze, any silver table or the quarantine. CI runs 3 cycles; BENCHMARKS.md
records 20."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_crash_cycles.py"


def test_three_random_sigkills_while_input_arrives_lose_and_duplicate_nothing(tmp_path, connector_name):
    run = subprocess.run(
        [
            sys.executable,
            str(BENCH),
            "--cycles",
            "3",
            "--seed",
            "7",
            "--workdir",
            str(tmp_path),
            "--delta",
            connector_name,
        ],  # fmt: skip
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert run.stdout, run.stderr[-3000:]
    result = json.loads(run.stdout)
    assert len(result["kills"]) == 3
    assert result["bronze"]["lost"] == 0 and result["bronze"]["duplicated"] == 0, result["bronze"]
    assert result["bronze"]["rows"] == result["bronze"]["expected"] > 0
    assert result["silver"]["lost"] == 0 and result["silver"]["duplicated"] == 0, result["silver"]
    assert result["silver"]["rows"] == result["silver"]["expected"] > 0
    assert result["quarantine_matches_manifest"], result["quarantine_by_reason"]
    assert run.returncode == 0, run.stderr[-3000:]
