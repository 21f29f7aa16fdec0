"""The files on disk reconcile with the manifest line for line, and appear only whole."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest
from landing_oracle import classify

from streamops.pipeline.exceptions import PipelineConfigError
from streamops.pipeline.generator import landing_writer
from streamops.pipeline.generator.landing_writer import MANIFEST_NAME, write_atomically
from streamops.pipeline.generator.run import generate
from streamops.pipeline.generator.settings import GeneratorSettings

EVENT_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def test_totals_reconcile_with_lines_on_disk(generated):
    manifest, lines = generated.manifest, generated.lines
    assert manifest["lines_total"] == len(lines) == 6_000
    assert manifest["lines_total"] == manifest["events_total"] + sum(manifest["bad"].values())
    assert manifest["bad_total"] == sum(manifest["bad"].values())
    assert sum(f["lines"] for f in manifest["files"]) == len(lines)
    for entry in manifest["files"]:
        assert (generated.out / entry["name"]).stat().st_size == entry["bytes"]
        assert lines[entry["first_ordinal"]].file == entry["name"]
    assert sum(1 for _ in generated.events()) == manifest["events_total"]
    per_type = Counter(event["event_type"] for _, event in generated.events())
    assert per_type == {name: entry["events"] for name, entry in manifest["event_types"].items()}


def test_only_finished_files_and_the_manifest_are_left(generated):
    names = sorted(os.listdir(generated.out))
    assert names == sorted([f["name"] for f in generated.manifest["files"]] + [MANIFEST_NAME])
    assert [f["name"] for f in generated.manifest["files"]] == [f"events-{index:06d}.ndjson" for index in range(1, 7)]


def test_lines_are_newline_terminated_without_carriage_returns(generated):
    for entry in generated.manifest["files"]:
        content = (generated.out / entry["name"]).read_bytes()
        assert content.endswith(b"\n") and b"\r" not in content
        assert content.count(b"\n") == entry["lines"]


def test_valid_events_have_unique_ids_and_synthetic_times(generated):
    events = generated.events()
    ids = [event["event_id"] for _, event in events]
    assert len(set(ids)) == len(ids)
    times = [event["event_time"] for _, event in events]
    assert all(EVENT_TIME.match(t) for t in times)
    assert times == sorted(times)
    first = datetime.fromisoformat(times[0])
    assert first == datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert datetime.fromisoformat(times[-1]) < first + timedelta(hours=1)
    assert {event["title_id"] for _, event in events} <= {f"title-{i:04d}" for i in range(40)}


def test_typical_line_is_a_few_hundred_bytes(generated):
    sizes = sorted(len(line.raw) for line in generated.lines if classify(line.raw) is None)
    assert 250 <= sizes[len(sizes) // 2] <= 550


def test_temporary_name_is_hidden_and_renamed_in_place(tmp_path, monkeypatch):
    renames = []
    real_rename = os.rename

    def recording_rename(source, target):
        renames.append((source, target))
        assert not os.path.exists(target)
        real_rename(source, target)

    monkeypatch.setattr(landing_writer.os, "rename", recording_rename)
    generate(GeneratorSettings(out=tmp_path / "landing", events=50, event_types=3, events_per_file=20))
    assert len(renames) == 4
    for source, target in renames:
        assert source.parent == target.parent
        assert source.name.startswith(".") and not target.name.startswith(".")


def test_failed_write_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "events-000001.ndjson"
    target.mkdir()
    (target / "occupied").write_text("x")
    with pytest.raises(OSError):
        write_atomically(target, b"{}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events-000001.ndjson"]


def test_refuses_a_directory_that_already_holds_a_run(tmp_path):
    generate(GeneratorSettings(out=tmp_path, events=10, event_types=2))
    with pytest.raises(PipelineConfigError, match="already holds generated files"):
        generate(GeneratorSettings(out=tmp_path, events=10, event_types=2))


def test_rate_paces_files_and_stamps_wall_clock_time(tmp_path):
    before = datetime.now(timezone.utc)
    started = datetime.now().timestamp()
    manifest = generate(
        GeneratorSettings(out=tmp_path, events=600, event_types=3, rate=1_000, events_per_file=200, bad=0)
    )
    elapsed = datetime.now().timestamp() - started
    assert elapsed >= 0.4  # files 2 and 3 wait until 200 and 400 lines are due at 1,000/s
    assert [f["lines"] for f in manifest["files"]] == [200, 200, 200]
    first = (tmp_path / "events-000001.ndjson").read_bytes().split(b"\n")[0]
    stamped = datetime.fromisoformat(json.loads(first)["event_time"])
    assert before - timedelta(seconds=1) <= stamped <= datetime.now(timezone.utc)


def test_rate_alone_puts_one_second_of_events_in_each_file(tmp_path):
    assert GeneratorSettings(out=tmp_path, events=10, rate=8_000).lines_per_file == 8_000
    assert GeneratorSettings(out=tmp_path, events=10, rate=8_000, events_per_file=500).lines_per_file == 500
    assert GeneratorSettings(out=tmp_path, events=10).lines_per_file == 5_000
