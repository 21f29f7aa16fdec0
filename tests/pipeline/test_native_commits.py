"""The native connector's writes: files from Spark's tasks, one delta-spark transaction per table
(pipeline/delta_connector/native_commit.py), read back by delta-spark itself; and the tables
whose features only delta-spark's writer enforces, which still go through that writer."""

from __future__ import annotations

import json
import logging
import re
import shutil
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pytest
from py4j.protocol import Py4JJavaError

from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.pipeline.delta_connector.connector import NativeDelta
from streamops.pipeline.delta_connector.jvm_commits import JvmCommits
from streamops.pipeline.delta_connector.native_commit import Py4jCommits, writer_features
from streamops.pipeline.delta_connector.write_plan import TableTarget, WritePlan

pytestmark = pytest.mark.spark
SINK_FILE = re.compile(r"part-[0-9a-f]{8}-[0-9a-f-]{27}-c000\.snappy\.parquet")
"""A file the executor-side sink names (delta-spark's writer puts the task's number first)."""


def routed_frame(spark, rows: list[tuple[str, int, str | None]]):
    """(route, id, name) rows over three tasks: what a pipeline stream hands the connector."""
    return spark.createDataFrame(rows, "_route string, id long, name string").repartition(3)


def plan(tmp_path: Path, batch_id: int, a_columns: dict[str, str] | None = None) -> WritePlan:
    tables = {
        "a": TableTarget(str(tmp_path / "a"), columns=a_columns or {"id": "id"}),
        "b": TableTarget(str(tmp_path / "b"), columns={"id": "id", "name": "name"}),
    }
    return WritePlan(BatchCommitInfo("s", batch_id, "q-1"), tables, (("a", "b"),), "")


@pytest.fixture(params=["jvm_helper", "py4j"])
def native(request, spark) -> NativeDelta:
    """The connector with delta-spark's commit calls made by streamops' JVM helper, as runs make
    them, and over py4j, as on a machine without a JDK compiler (the helper's fallback)."""
    connector = NativeDelta(spark, jvm_helper=request.param == "jvm_helper")
    made_by = type(connector.commits._transactions())
    assert made_by is (JvmCommits if request.param == "jvm_helper" else Py4jCommits)
    return connector


def history(spark, table: Path) -> list[dict]:
    rows = spark.sql(f"DESCRIBE HISTORY delta.`{table}`").orderBy("version").collect()
    return [row.asDict() for row in rows]


def test_one_job_writes_every_tables_files_and_each_table_commits_once_with_its_txn(spark, tmp_path, native):
    rows = [("a", i, None) for i in range(30)] + [("b", i, f"n{i}") for i in range(5)]
    report = native.write_routes(routed_frame(spark, rows), plan(tmp_path, 0))
    assert {route: (t.status, t.rows) for route, t in report.tables.items()} == {
        "a": ("written", 30),
        "b": ("written", 5),
    }
    a = spark.read.format("delta").load(str(tmp_path / "a"))
    assert sorted(r.id for r in a.collect()) == list(range(30))
    assert [(r.id, r.name) for r in spark.read.format("delta").load(str(tmp_path / "b")).orderBy("id").collect()] == [
        (i, f"n{i}") for i in range(5)
    ]
    (created,) = history(spark, tmp_path / "a")
    assert created["operation"] == "STREAMING UPDATE"
    assert BatchCommitInfo.from_commit_info({"userMetadata": created["userMetadata"]}) == BatchCommitInfo("s", 0, "q-1")
    assert created["operationParameters"] == {"outputMode": "Append", "queryId": "q-1", "epochId": "0"}
    log = [json.loads(line) for line in (tmp_path / "a" / "_delta_log" / f"{0:020d}.json").read_text().splitlines()]
    assert {"appId": "s", "version": 0} == {
        k: v for a in log if "txn" in a for k, v in a["txn"].items() if k != "lastUpdated"
    }
    stats = [json.loads(a["add"]["stats"]) for a in log if "add" in a]
    assert sum(s["numRecords"] for s in stats) == 30, "each file's statistics, as delta-spark's writer keeps them"

    again = native.write_routes(routed_frame(spark, rows), plan(tmp_path, 0))
    assert {t.status for t in again.tables.values()} == {"skipped"}
    assert len(history(spark, tmp_path / "a")) == 1, "a replayed batch commits nothing"
    files = {p.name for p in (tmp_path / "a").glob("*.parquet")}
    assert files == {a["add"]["path"] for a in log if "add" in a}, "the replay's files are deleted"

    native.write_routes(routed_frame(spark, [("a", 100, None)]), plan(tmp_path, 1))
    assert spark.read.format("delta").load(str(tmp_path / "a")).count() == 31


def test_a_new_column_is_added_to_the_table_in_the_batchs_commit_keeping_the_others_metadata(spark, tmp_path, native):
    native.write_routes(routed_frame(spark, [("a", 1, None)]), plan(tmp_path, 0))
    spark.sql(f"ALTER TABLE delta.`{tmp_path / 'a'}` ALTER COLUMN id COMMENT 'the event id'")
    table_id = spark.sql(f"DESCRIBE DETAIL delta.`{tmp_path / 'a'}`").first().id
    wider = plan(tmp_path, 1, a_columns={"id": "id", "name": "name"})
    native.write_routes(routed_frame(spark, [("a", 2, "x")]), wider)
    a = spark.read.format("delta").load(str(tmp_path / "a"))
    assert [(r.id, r.name) for r in a.orderBy("id").collect()] == [(1, None), (2, "x")]
    assert a.schema["id"].metadata.get("comment") == "the event id"
    assert spark.sql(f"DESCRIBE DETAIL delta.`{tmp_path / 'a'}`").first().id == table_id
    retyped = replace(
        wider, tables={"a": TableTarget(str(tmp_path / "a"), columns={"id": "name"})}, commit_stages=(("a",),)
    )
    with pytest.raises(Exception, match="streamops never rewrites a table"):
        native.write_routes(routed_frame(spark, [("a", 3, "y")]), replace(retyped, commit=BatchCommitInfo("s", 2)))
    assert spark.read.format("delta").load(str(tmp_path / "a")).count() == 2


def test_a_table_with_a_check_constraint_is_written_by_delta_sparks_writer_which_enforces_it(spark, tmp_path, caplog):
    native = NativeDelta(spark)
    native.write_routes(routed_frame(spark, [("a", 1, None)]), plan(tmp_path, 0))
    spark.sql(f"ALTER TABLE delta.`{tmp_path / 'a'}` ADD CONSTRAINT small_ids CHECK (id < 1000)")
    with caplog.at_level(logging.WARNING):
        report = native.write_routes(routed_frame(spark, [("a", 2, None), ("a", 3, None)]), plan(tmp_path, 1))
        native.write_routes(routed_frame(spark, [("a", 4, None)]), plan(tmp_path, 2))
    assert report.tables["a"].status == "written" and report.tables["a"].rows == 2
    told = [r.getMessage() for r in caplog.records if "delta-spark's writer" in r.getMessage()]
    assert len(told) == 1 and "CHECK constraints" in told[0] and str(tmp_path / "a") in told[0], "one line per table"
    assert sorted(r.id for r in spark.read.format("delta").load(str(tmp_path / "a")).collect()) == [1, 2, 3, 4]
    assert [h["operation"] for h in history(spark, tmp_path / "a")][-1] == "WRITE"
    again = native.write_routes(routed_frame(spark, [("a", 4, None)]), plan(tmp_path, 2))
    assert again.tables["a"].status == "skipped", "the writer's path is exactly once too"
    in_table = {Path(f).name for f in spark.read.format("delta").load(str(tmp_path / "a")).inputFiles()}
    sink_files = {p.name for p in (tmp_path / "a").glob("*.parquet") if SINK_FILE.fullmatch(p.name)}
    assert sink_files <= in_table, "the files of batches the writer wrote are deleted"
    with pytest.raises(Py4JJavaError):
        native.write_routes(routed_frame(spark, [("a", 5000, None)]), plan(tmp_path, 3))
    assert spark.read.format("delta").load(str(tmp_path / "a")).count() == 4


def metadata(fields: list[dict], **extra) -> dict:
    return {"schemaString": json.dumps({"type": "struct", "fields": fields}), **extra}


def column(name: str, kind: object = "long", nullable: bool = True, **meta: object) -> dict:
    return {"name": name, "type": kind, "nullable": nullable, "metadata": meta}


@pytest.mark.parametrize(
    ("table", "reason"),
    [
        (metadata([column("id")]), None),
        (metadata([column("id", comment="kept")]), None),
        (metadata([column("id")], partitionColumns=["id"]), "it is partitioned"),
        (metadata([column("id")], configuration={"delta.constraints.positive": "id > 0"}), "it has CHECK constraints"),
        (metadata([column("id")], configuration={"delta.columnMapping.mode": "name"}), "it uses column mapping"),
        (metadata([column("id", nullable=False)]), "column `id` is NOT NULL"),
        (
            metadata([column("s", {"type": "struct", "fields": [column("inner", nullable=False)]})]),
            "column `inner` is NOT NULL",
        ),
        (
            metadata([column("day", "date", **{"delta.generationExpression": "CAST(ts AS DATE)"})]),
            "column `day` is generated, an identity, has a default or an invariant",
        ),
        (
            metadata([column("n", **{"delta.identity.start": 1})]),
            "column `n` is generated, an identity, has a default or an invariant",
        ),
    ],
)
def test_only_tables_without_row_rules_take_committed_files(table, reason):
    assert writer_features(table) == reason


def jobs_in(spark, group: str) -> int:
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def jobs_per_batch(spark, tmp_path: Path, name: str, batches: int) -> list[int]:
    """Batches 0.. of tables a and b through the native connector, each in a job group of its
    own: the Spark jobs each started."""
    native = NativeDelta(spark)
    groups = [f"{name}-{batch_id}" for batch_id in range(batches)]
    try:
        for batch_id, group in enumerate(groups):
            spark.sparkContext.setJobGroup(group, "a batch")
            native.write_routes(
                routed_frame(spark, [("a", batch_id, None), ("b", batch_id, "x")]), plan(tmp_path, batch_id)
            )
    finally:
        spark.sparkContext.setJobGroup("", "")
    return [jobs_in(spark, group) for group in groups]


def test_every_tenth_version_is_checkpointed_outside_spark_and_delta_spark_reads_the_checkpoints(spark, tmp_path):
    """delta-spark's own checkpoint is a few Spark jobs inside the commit; the connector's tables
    carry a large interval and get their checkpoint every 10 versions from delta-rs."""
    jobs = jobs_per_batch(spark, tmp_path, "native-checkpoints", 21)
    assert jobs[10] == jobs[20] == jobs[9] == jobs[11], f"the batches at versions 10 and 20 start no more jobs: {jobs}"
    for table in ("a", "b"):
        log = tmp_path / table / "_delta_log"
        assert sorted(p.name for p in log.glob("*.checkpoint.parquet")) == [
            f"{10:020d}.checkpoint.parquet",
            f"{20:020d}.checkpoint.parquet",
        ]
        assert json.loads((log / "_last_checkpoint").read_text())["version"] == 20
        detail = spark.sql(f"DESCRIBE DETAIL delta.`{tmp_path / table}`").first()
        assert detail.properties["delta.checkpointInterval"] == "1000"
        (log / f"{5:020d}.json").unlink()
        rows = spark.read.format("delta").load(str(tmp_path / table))
        assert sorted(r.id for r in rows.collect()) == list(range(21)), "read from the checkpoint at 20, not commit 5"


def checksum(table: Path, version: int) -> dict:
    return json.loads((table / "_delta_log" / f"{version:020d}.crc").read_text())


def test_a_batch_that_creates_its_tables_starts_no_more_jobs_than_one_that_appends_to_them(spark, tmp_path):
    """delta-spark derives the file list it keeps in a checksum, for a new table, from a query
    of the empty table before it: a Spark job and a query plan per table created. The commits
    leave the list out, except for a table that asks for it, which keeps it in every commit."""
    jobs = jobs_per_batch(spark, tmp_path, "native-creates", 3)
    assert jobs[0] == jobs[1] == jobs[2], f"creating two tables starts no job of its own: {jobs}"
    assert all("allFiles" not in checksum(tmp_path / "a", version) for version in range(3))
    assert checksum(tmp_path / "a", 2)["setTransactions"], "the checksum still keeps the batches' txn"

    native = NativeDelta(spark)
    listed = TableTarget(str(tmp_path / "listed"), columns={"id": "id"}, files_in_checksum=True)
    for batch_id in range(2):
        listed_plan = WritePlan(BatchCommitInfo("s", batch_id), {"a": listed}, (("a",),), "")
        native.write_routes(routed_frame(spark, [("a", batch_id, None)]), listed_plan)
    assert [len(checksum(tmp_path / "listed", version)["allFiles"]) for version in range(2)] == [1, 2]
    assert sorted(r.id for r in spark.read.format("delta").load(str(tmp_path / "listed")).collect()) == [0, 1]


def test_the_drivers_own_rows_and_marks_are_committed_exactly_once_without_a_spark_job(spark, tmp_path, native):
    """The registry's, the alerts' and the other small tables' rows come from the driver: it
    writes their file itself and commits it as a batch's tables are (delta-spark's writer, asked
    for a txn, rebuilt the table's state in Spark jobs before each append)."""
    table = tmp_path / "alerts"
    at = pa.array([datetime(2026, 1, 1, tzinfo=timezone.utc)] * 2, pa.timestamp("us", tz="UTC"))
    rows = pa.table({"id": [1, 2], "name": ["a", None], "at": at})
    group = "native-driver-rows"
    try:
        spark.sparkContext.setJobGroup(group, "the driver's rows")
        first = native.write_batch(table, rows, BatchCommitInfo("s", 0))
        again = native.write_batch(table, rows, BatchCommitInfo("s", 0))
        native.write_batch(table, pa.table({"id": [3], "more": ["x"]}), BatchCommitInfo("s", 1))
        marked = native.mark_batch(table, BatchCommitInfo("s", 2))
        marked_again = native.mark_batch(table, BatchCommitInfo("s", 2))
    finally:
        spark.sparkContext.setJobGroup("", "")
    assert jobs_in(spark, group) == 0
    assert (first.status, first.version, first.rows, again.status) == ("written", 0, 2, "skipped")
    assert (marked.status, marked.version, marked_again.status) == ("written", 2, "skipped")
    read = spark.read.format("delta").load(str(table))
    assert [(r.id, r.name, r.more) for r in read.orderBy("id").collect()] == [
        (1, "a", None),
        (2, None, None),
        (3, None, "x"),
    ]
    assert read.schema["at"].dataType.typeName() == "timestamp"
    log = [json.loads(line) for line in (table / "_delta_log" / f"{2:020d}.json").read_text().splitlines()]
    assert not [a for a in log if "add" in a] and [a["txn"]["version"] for a in log if "txn" in a] == [2]
    assert {h["operation"] for h in history(spark, table)} == {"STREAMING UPDATE"}

    spark.sql(f"ALTER TABLE delta.`{table}` ADD CONSTRAINT small_ids CHECK (id < 100)")
    assert native.write_batch(table, pa.table({"id": [4]}), BatchCommitInfo("s", 3)).status == "written"
    with pytest.raises(Py4JJavaError):
        native.write_batch(table, pa.table({"id": [500]}), BatchCommitInfo("s", 4))
    assert sorted(r.id for r in spark.read.format("delta").load(str(table)).collect()) == [1, 2, 3, 4]


def test_a_table_whose_features_delta_rs_does_not_write_is_checkpointed_by_delta_spark(spark, tmp_path):
    native = NativeDelta(spark)
    native.write_routes(routed_frame(spark, [("a", 0, None), ("b", 0, "x")]), plan(tmp_path, 0))
    spark.sql(f"ALTER TABLE delta.`{tmp_path / 'a'}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    for batch_id in range(1, 12):
        native.write_routes(
            routed_frame(spark, [("a", batch_id, None), ("b", batch_id, "x")]), plan(tmp_path, batch_id)
        )
    checkpoint = tmp_path / "a" / "_delta_log" / f"{10:020d}.checkpoint.parquet"
    assert checkpoint.exists()
    assert "checksum" in json.loads((tmp_path / "a" / "_delta_log" / "_last_checkpoint").read_text()), (
        "delta-spark's `_last_checkpoint` (delta-rs writes no checksum)"
    )
    assert spark.read.format("delta").load(str(tmp_path / "a")).count() == 12


def test_commits_made_by_other_writers_between_ours_are_kept_and_a_recreated_table_is_seen(spark, tmp_path, native):
    """A transaction starts from the snapshot the process's own last commit left, unless the
    table has moved on: another writer's commit (delta-rs here, outside delta-spark's caches)
    is built on, and a table deleted and recreated with fewer versions is read afresh, not
    given a commit past its end."""
    from deltalake import write_deltalake

    table = tmp_path / "a"
    for batch_id in range(3):
        native.write_routes(routed_frame(spark, [("a", batch_id, None)]), plan(tmp_path, batch_id))
    write_deltalake(str(table), pa.table({"id": pa.array([100], pa.int64())}), mode="append")
    native.write_routes(routed_frame(spark, [("a", 3, None)]), plan(tmp_path, 3))
    assert [h["version"] for h in history(spark, table)] == [0, 1, 2, 3, 4]
    assert sorted(r.id for r in spark.read.format("delta").load(str(table)).collect()) == [0, 1, 2, 3, 100]

    shutil.rmtree(table)
    write_deltalake(str(table), pa.table({"id": pa.array([7], pa.int64())}))
    native.write_routes(routed_frame(spark, [("a", 4, None)]), plan(tmp_path, 4))
    assert sorted(p.name for p in (table / "_delta_log").glob("*.json")) == [f"{v:020d}.json" for v in range(2)]
    assert sorted(r.id for r in spark.read.format("delta").load(str(table)).collect()) == [4, 7]
