"""Warnings before a stream breaks, on a real query: an upstream DELETE and MERGE among the
versions a stream has not read yet, and a source table with a short retention, show up in the
exporter, in `streamops status` and in `streamops checkpoint doctor` while the stream still reads
the versions before them; the headroom the exporter reports fires the promtool-tested alert; and
the stream then fails exactly at the version the warning named."""

from __future__ import annotations

import json
import subprocess
import threading

import pyarrow as pa
import yaml
from deltalake import DeltaTable
from monitor_fixtures import append, delta_format
from waiting import wait_until

from streamops.cli import main
from streamops.dashboards.alert_rules import build_alert_rules
from streamops.dashboards.prometheus_rules import rules_document
from streamops.dashboards.rule_tests import Firing, RuleCase, rule_test_group, series
from streamops.monitor import metric_catalog as catalog
from streamops.monitor.status_rules import StatusPolicy
from streamops.monitor.stream_monitor import StreamMonitor

FAST = StatusPolicy(window=5, min_batches=3, min_stall_seconds=1.0)
STREAM = "upstream_reader"
SOURCE = {"stream": STREAM, "source": "0", "kind": "delta"}


def upstream_table(lake):
    """Versions 0-2: appends of 10 rows; 3: a 2-hour file retention; 4: a DELETE of version 0's
    rows (a whole file); 5: a MERGE updating a row of version 1 (a rewrite)."""
    table = lake.silver("upstream")
    for first in (0, 10, 20):
        append(table, first)
    DeltaTable(str(table)).alter.set_table_properties({"delta.deletedFileRetentionDuration": "interval 2 hours"})
    DeltaTable(str(table)).delete("id < 10")
    (
        DeltaTable(str(table))
        .merge(pa.table({"id": [15]}), predicate="t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update_all()
        .execute()
    )
    return table


def test_unread_changes_and_short_retention_are_warned_before_the_stream_reaches_them(spark, lake, tmp_path, capsys):
    table = upstream_table(lake)
    gate = threading.Event()

    def held(df, batch_id):
        df.count()
        if batch_id >= 1:
            gate.wait(120)

    monitor = StreamMonitor(spark, lake, metrics_port=0, flush_interval_s=0.2, policy=FAST).start()
    query = None
    try:
        query = (
            spark.readStream.format(delta_format())
            .option("startingVersion", 0)
            .option("maxFilesPerTrigger", 1)
            .load(str(table))
            .writeStream.foreachBatch(held)
            .queryName(STREAM)
            .option("checkpointLocation", str(lake.checkpoint(STREAM)))
            .trigger(processingTime="0.2 seconds")
            .start()
        )
        value = monitor.registry.get_sample_value
        wait_until(
            lambda: value(catalog.SOURCE_CHANGE_COMMITS.name, SOURCE | {"change": "rewrite"}) == 1,
            timeout=90,
            what="the unread MERGE in the exporter",
        )
        assert value(catalog.SOURCE_CHANGE_COMMITS.name, SOURCE | {"change": "delete"}) == 1
        headroom = value(catalog.SOURCE_RETENTION_HEADROOM.name, SOURCE | {"retention": "deleted_files"})
        assert 6000 < headroom <= 7200
        assert value(catalog.SOURCE_RETENTION_HEADROOM.name, SOURCE | {"retention": "log"}) > 29 * 86400
        warning = {"stream": STREAM}
        for code in ("source_retention_low", "source_change_commits"):
            assert value(catalog.STREAM_WARNING.name, warning | {catalog.STREAM_WARNING.name: code}) == 1
        assert query.isActive and query.lastProgress["batchId"] == 0  # batch 1 waits: the stream is at version 1
        assert monitor.flush()

        assert main(["status", "--lake", str(lake.root), "--json"]) == 0
        [row] = [s for s in json.loads(capsys.readouterr().out)["streams"] if s["stream"] == STREAM]
        assert {w["code"] for w in row["warnings"]} >= {"source_retention_low", "source_change_commits"}
        changes = row["sources"][0]["unread_change_commits"]
        assert [(c["version"], c["operation"], c["kind"]) for c in changes] == [
            (4, "DELETE", "delete"),
            (5, "MERGE", "rewrite"),
        ]
        assert changes[1]["outcomes"] == {
            "failOnChanges": "fail",
            "ignoreDeletes": "fail",
            "skipChangeCommits": "skip",
            "ignoreChanges": "duplicate",
        }

        assert main(["checkpoint", "doctor", "--lake", str(lake.root), "--json"]) == 1  # warnings only
        [diagnosis] = [d for d in json.loads(capsys.readouterr().out)["checkpoints"] if d["stream"] == STREAM]
        findings = {f["code"]: f for f in diagnosis["findings"]}
        assert diagnosis["source_table"] == str(table)
        assert "fails at version 4" in findings["unread_change_commits"]["message"]
        assert findings["retention_headroom"]["evidence"]["deleted_file_retention_seconds"] == 7200
    finally:
        gate.set()
        if query is not None:
            wait_until(lambda: not query.isActive, timeout=90, what="the stream to reach version 4 and fail")
        monitor.stop()
    # the failure the doctor predicted, in the reader's own words (delta-spark names its error class)
    failure = "DELTA_SOURCE_IGNORE_DELETE" if delta_format() == "delta" else "version 4 (DELETE, delete)"
    assert failure in str(query.exception())
    fires_the_alert(headroom, tmp_path)


def fires_the_alert(headroom: float, tmp_path) -> None:
    """`promtool test rules` on the real rule file, with the headroom the exporter reported held
    for 10 minutes: SourceRetentionHeadroomLow fires once its pending period has passed."""
    rules = build_alert_rules()
    rule = next(r for r in rules if r.name == "SourceRetentionHeadroomLow")
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rules_document(rules)))
    start = round(headroom)
    hours, rest = divmod(start - 6 * 60, 3600)
    expected = (
        f"Unread source data of stream {STREAM} can be deleted by retention in {hours}h {rest // 60}m {rest % 60}s"
    )
    held = series(catalog.SOURCE_RETENTION_HEADROOM, f"{start}-60x15", **SOURCE, retention="deleted_files")
    case = RuleCase(rule.name, (held,), (("6m", (Firing({"stream": STREAM}, expected),)),))
    document = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": [rule_test_group(case, rule)]}
    (tmp_path / "test.yml").write_text(yaml.safe_dump(document))
    result = subprocess.run(
        ["promtool", "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
