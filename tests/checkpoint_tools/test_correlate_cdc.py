"""`checkpoint correlate` and the doctor on a CDC stream, whose batches MERGE into their tables:
each batch is tied to its MERGE commits by txn identity, a MERGE reports the rows it inserted,
updated and deleted (not the rows of the files it rewrote), and the doctor finds nothing wrong
with a batch that writes several tables. On both connectors, from recorded Debezium changes."""

from __future__ import annotations

from dataclasses import astuple

from cdc_landing import DATABASE, RECORDINGS, drain, land, recorded, values

from streamops.checkpoint_tools.correlation import correlate
from streamops.checkpoint_tools.doctor import checkpoint_targets, diagnose
from streamops.checkpoint_tools.doctor_context import DoctorSettings
from streamops.checkpoint_tools.text_report import correlation_text
from streamops.delta.read import read_delta
from streamops.lake_layout import LakeLayout


def test_each_cdc_batch_is_tied_to_its_merges_with_the_rows_they_changed(spark, connector, tmp_path):
    lines = values(recorded(RECORDINGS[1]))
    for number, start in enumerate(range(0, len(lines), 8)):
        land(tmp_path / "landing", f"changes-{number}.ndjson", lines[start : start + 8])
    lake = LakeLayout.at(tmp_path / "lake")
    drain(spark, lake, tmp_path / "landing", connector, history=True, files=1)
    applies = read_delta(lake.cdc_applies).to_pylist()
    assert {a["table"] for a in applies} == set(DATABASE)
    merges = 0
    for stream in sorted({a["stream"] for a in applies}):
        correlation = correlate(lake.checkpoint(stream), lake=lake)
        assert {
            str(lake.silver(t)) for t in DATABASE if any(a["stream"] == stream and a["table"] == t for a in applies)
        } <= {str(t) for t in correlation.sink_tables}
        by_batch = {b.batch.batch_id: b for b in correlation.batches}
        for apply in (a for a in applies if a["stream"] == stream):
            commits = [c for c in by_batch[apply["batch_id"]].sink_commits if c.table == lake.silver(apply["table"])]
            changed = (apply["inserted"], apply["updated"], apply["deleted"])
            if not any(changed):  # a MERGE that changed nothing: delta-rs makes no commit, delta-spark an empty one
                assert all(astuple(c.changes) == (0, 0, 0) for c in commits), (apply, commits)
                continue
            assert len(commits) == 1, (apply, commits)
            [merge] = commits
            assert merge.version == apply["silver_version"] and merge.matched_by == "txn"
            assert merge.operation == "MERGE" and merge.rows is None
            assert astuple(merge.changes) == changed, (apply, merge)
            merges += 1
        text = correlation_text(correlation)
        assert "(MERGE +" in text and "(None)" not in text
        [target] = checkpoint_targets([lake.checkpoint(stream)], lake=lake)
        diagnosis = diagnose(target, DoctorSettings())
        assert [f.code for f in diagnosis.findings if f.severity == "error"] == [], diagnosis.findings
    assert merges >= len(DATABASE)
