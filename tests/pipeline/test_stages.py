"""The hops as separate jobs: `streamops run --stages bronze` ingests and nothing else, a later
`--stages silver` (another application) builds silver from what bronze holds, and the lake ends
exactly as one `--stages all` run leaves it, on each Delta connector."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest

from streamops.core.delta_format.read import read_delta
from streamops.core.lake_layout import BRONZE_STREAM, MANAGEMENT_STREAM, LakeLayout
from streamops.monitor.fleet_status import fleet_status
from streamops.pipeline.generator.run import generate
from streamops.pipeline.generator.settings import GeneratorSettings

pytestmark = [pytest.mark.e2e, pytest.mark.spark]


def run(lake: LakeLayout, landing, stages: str, delta: str) -> dict:
    done = subprocess.run(
        [
            sys.executable, "-m", "streamops", "run", "--lake", str(lake.root), "--landing", str(landing),
            "--until-idle", "--stages", stages, "--delta", delta, "--types-per-group", "3", "--json",
        ],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["failures"] == {}
    return report["lake"]


@pytest.mark.parametrize("connector_name", ["embedded"])  # the stages split is the same code on both; CI time
def test_bronze_and_silver_as_separate_jobs_are_exactly_once(tmp_path, connector_name):
    landing, lake = tmp_path / "landing", LakeLayout.at(tmp_path / "lake")
    manifest = generate(GeneratorSettings(out=landing, events=1200, event_types=6, drift=0.5, bad=0.01, seed=9))

    after_bronze = run(lake, landing, "bronze", connector_name)
    assert after_bronze["bronze_rows"] == manifest["events_total"]
    assert after_bronze["silver_rows"] == {} and after_bronze["groups"] == {}
    assert {path.name for path in lake.checkpoint_dirs()} == {BRONZE_STREAM}

    after_silver = run(lake, landing, "silver", connector_name)
    assert after_silver["bronze_rows"] == manifest["events_total"], "the silver job ingests nothing"
    checkpoints = {path.name for path in lake.checkpoint_dirs()}
    assert {BRONZE_STREAM, MANAGEMENT_STREAM} < checkpoints and len(checkpoints) == 2 + len(after_silver["groups"])

    bronze_ids = Counter(read_delta(str(lake.bronze_events), columns=["event_id"]).column(0).to_pylist())
    silver_ids: Counter = Counter()
    for event_type in manifest["event_types"]:
        silver_ids.update(read_delta(str(lake.silver(event_type)), columns=["event_id"]).column(0).to_pylist())
    quarantined = read_delta(str(lake.bronze_quarantine), columns=["stream"]).column(0).to_pylist()
    silver_quarantined = sum(1 for stream in quarantined if stream.startswith("silver_"))
    assert max(bronze_ids.values()) == 1 and sum(bronze_ids.values()) == manifest["events_total"]
    assert max(silver_ids.values()) == 1 and sum(silver_ids.values()) + silver_quarantined == manifest["events_total"]

    streams = {row.stream: row for row in fleet_status(lake)}
    assert {row.delta_connector for row in streams.values()} == {connector_name}, "one connector, stated"
