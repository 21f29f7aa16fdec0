"""Commits of the files a batch's tasks wrote, through delta-spark's own transactions.

Appending with `df.write.format("delta")` costs one Spark job, one snapshot and one commit per
table; a silver group's batch of a hundred tables made a hundred of each, in sequence. On the
native connector the executor-side sink now writes every table's files in one job, as on
embedded, and each table is committed here by delta-spark's `OptimisticTransaction`: its
protocol checks, conflict detection, checksum and checkpoint hooks are delta-spark's, and the
commit carries the batch's `txn`, the operation delta-spark's streaming sink records (STREAMING
UPDATE) and the batch's user metadata, so any reader sees a plain Delta table and the checkpoint
tools read it as before (BENCHMARKS.md, "Native commits"). The delta-spark calls are made in the
JVM by a helper compiled against the session's delta-spark (jvm_commits.py), or over py4j where
it cannot be built (`Py4jCommits`): the same calls, the same results.

The batch's `txn` is read from the snapshot's checksum (the `.crc` delta-spark writes with every
commit keeps the table's set transactions): `OptimisticTransaction.txnVersion` reconstructs the
table's whole state in a Spark job to answer it, which costs more than the commit. A table whose
checksum lacks them is asked the slow way. One run per stream holds the lake's lock, so no other
writer commits the stream's batches between the check and the commit.

What delta-spark's writer enforces on rows, a commit of files written elsewhere would not: CHECK
constraints, NOT NULL columns and invariants, generated, identity and default columns, column
mapping, partition columns. A table with any of them is written through delta-spark's writer
instead (`WriterRequired`), with one log line per table saying why.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

import pyarrow as pa

from streamops.core.delta_format.commit_metadata import BatchCommitInfo, txn_holds_batch
from streamops.core.delta_format.read import is_table
from streamops.core.storage.location import LocationLike
from streamops.pipeline.delta_connector.batch_commit import TableCommit, delete_files, with_columns
from streamops.pipeline.delta_connector.cut_short_creation import clear_cut_short_creation
from streamops.pipeline.delta_connector.data_files import DataFile
from streamops.pipeline.delta_connector.jvm_commits import JvmCommits, delta_commits
from streamops.pipeline.delta_connector.native_checkpoints import (
    NATIVE_TABLE_CONFIGURATION,
    checkpoint_due,
    write_checkpoint,
)
from streamops.pipeline.runtime.spark_threads import active_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

log = logging.getLogger(__name__)

NO_TXN = -1
"""What delta-spark answers for a stream that never committed to the table."""
ROW_RULE_CONFIGURATION = "delta.constraints."
ROW_RULE_FIELD_METADATA = ("delta.invariants", "delta.generationExpression", "delta.identity.", "CURRENT_DEFAULT")
COLUMN_MAPPING_MODE = "delta.columnMapping.mode"


FILES_IN_CHECKSUM = "spark.databricks.delta.allFilesInCrc.enabled"
"""delta-spark's setting (on by default) that keeps a small table's file list in each commit's
checksum, so a query of the table lists no log. Deriving it costs a table's first commit a query
plan and a Spark job over the empty table before it (90 of 105 ms; a silver group's first batch
creates 150 tables), and a commit that keeps the list after one that left it out rebuilds the
table's state in a Spark job, so a table keeps the choice it started with. Commits here leave it
out unless a table asks for it (`TableTarget.files_in_checksum`: one this process reads whole
every batch)."""

COMMIT_LOCK = "spark.databricks.delta.commitLock.enabled"
"""delta-spark's lock around a commit, per table and process. Unset, every commit asks the log
store whether the lock is needed, which copies the session's Hadoop configuration (a tenth of a
commit's time); set, it is always taken, which costs nothing here: one thread at a time commits
a table."""


class WriterRequired(Exception):
    """The table has a feature only delta-spark's writer enforces: write its rows through it."""


def _walk_fields(fields: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for column in fields:
        yield column
        kind = column["type"]
        while isinstance(kind, dict):
            if kind.get("type") == "struct":
                yield from _walk_fields(kind["fields"])
                break
            kind = kind.get("elementType") or kind.get("valueType")


def writer_features(metadata: dict[str, Any]) -> str | None:
    """Why the table's rows must go through delta-spark's writer, or None when files can be
    committed as they are (`metadata` is the table's metaData action)."""
    if metadata.get("partitionColumns"):
        return "it is partitioned"
    configuration = metadata.get("configuration") or {}
    if any(key.startswith(ROW_RULE_CONFIGURATION) for key in configuration):
        return "it has CHECK constraints"
    if configuration.get(COLUMN_MAPPING_MODE, "none") != "none":
        return "it uses column mapping"
    for column in _walk_fields(json.loads(metadata["schemaString"])["fields"]):
        if not column.get("nullable", True):
            return f"column `{column['name']}` is NOT NULL"
        keys = column.get("metadata") or {}
        if any(key.startswith(prefix) for key in keys for prefix in ROW_RULE_FIELD_METADATA):
            return f"column `{column['name']}` is generated, an identity, has a default or an invariant"
    return None


def merged_schema_string(schema_string: str, schemas: list[pa.Schema], table: str) -> str | None:
    """The table's schema JSON with the files' new columns (and new nested fields) added, or None
    when the files add nothing. Columns the files leave unchanged keep their JSON (comments and
    other metadata) as it was."""
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
    from pyspark.sql.types import StructType

    current_json = json.loads(schema_string)
    current = to_arrow_schema(StructType.fromJson(current_json), timezone="UTC")
    merged = current
    for schema in schemas:
        merged = with_columns(merged, schema, table)
    if merged.equals(current):
        return None
    kept = {column["name"]: column for column in current_json["fields"]}
    columns = []
    for arrow_field, spark_field in zip(merged, from_arrow_schema(merged).fields):
        old = kept.get(arrow_field.name)
        unchanged = old is not None and current.field(arrow_field.name).type.equals(arrow_field.type)
        columns.append(old if unchanged else spark_field.jsonValue())
    return json.dumps({**current_json, "fields": columns})


@dataclass
class NativeCommits:
    """Commits through the session's delta-spark: `commit_files` is `batch_commit.commit_files`
    for the native connector."""

    spark: SparkSession
    jvm_helper: bool = True
    """Make delta-spark's calls from the JVM helper where it builds (False: all over py4j)."""
    _told: set[str] = field(default_factory=set)
    _sessions: dict[bool, SparkSession] = field(default_factory=dict)
    """The sessions the commits run in, by whether a table's checksum keeps its files."""
    _helper: JvmCommits | Py4jCommits | None = None
    _lazy: threading.Lock = field(default_factory=threading.Lock)
    """Held while a session or the helper is made: a batch's first commits run side by side."""

    def commit_files(
        self, table: str, files: list[DataFile], commit: BatchCommitInfo, files_in_checksum: bool = False
    ) -> TableCommit:
        """Append `files` to `table` exactly once for (commit.stream, commit.batch_id); raises
        `WriterRequired` (the files deleted) for a table only delta-spark's writer may write.
        delta-spark's transactions take their settings from the thread's active session, so
        the commit runs with the session `files_in_checksum` (FILES_IN_CHECKSUM) calls for."""
        if not files:
            return TableCommit("empty")
        return self._commit(self._session(files_in_checksum), table, files, commit)

    def mark_batch(self, table: str, commit: BatchCommitInfo) -> TableCommit:
        """Commit the batch's `txn` and nothing else to `table` (which exists), exactly once."""
        if not is_table(table):
            raise FileNotFoundError(f"`{table}` is not a Delta table: a batch is marked on a table that exists")
        return self._commit(self._session(False), table, [], commit)

    def _session(self, files_in_checksum: bool) -> SparkSession:
        with self._lazy:
            if files_in_checksum not in self._sessions:
                session = self.spark.newSession()
                session.conf.set(FILES_IN_CHECKSUM, str(files_in_checksum).lower())
                session.conf.set(COMMIT_LOCK, "true")
                self._sessions[files_in_checksum] = session
            return self._sessions[files_in_checksum]

    def _transactions(self) -> JvmCommits | Py4jCommits:
        """The JVM helper (jvm_commits.py) when this session can build it, else py4j calls."""
        with self._lazy:
            if self._helper is None:
                self._helper = (delta_commits(self.spark) if self.jvm_helper else None) or Py4jCommits(self.spark)
            return self._helper

    def _commit(self, session: SparkSession, table: str, files: list[DataFile], commit: BatchCommitInfo) -> TableCommit:
        rows = sum(f.rows for f in files)
        schemas = [pa.ipc.read_schema(pa.py_buffer(s)) for s in {f.schema: None for f in files}]
        creating = not is_table(table)
        if creating:
            clear_cut_short_creation(table)
        txn = self._transactions().start(session, table)
        if creating:
            metadata = _new_metadata(schemas)
        else:
            state = json.loads(txn.state(commit.stream))
            version = None if state["txn"] == NO_TXN else int(state["txn"])
            if txn_holds_batch(version, commit.batch_id):
                delete_files(files)
                return TableCommit("skipped", rows=rows)
            metadata = state["metadata"]["metaData"]
            reason = writer_features(metadata) if files else None
            if reason is not None:
                delete_files(files)
                if table not in self._told:
                    self._told.add(table)
                    log.warning("%s: written through delta-spark's writer, not by committing files: %s", table, reason)
                raise WriterRequired(reason)
        schema_string = merged_schema_string(metadata["schemaString"], schemas, table)
        changed = None
        if creating or schema_string is not None:
            changed = json.dumps({"metaData": {**metadata, "schemaString": schema_string or metadata["schemaString"]}})
        now = int(time.time() * 1000)
        actions = [_add_action(data_file) for data_file in files]
        actions.append(json.dumps({"txn": {"appId": commit.stream, "version": commit.batch_id, "lastUpdated": now}}))
        version = int(
            txn.commit(changed, "\n".join(actions), commit.query_id or "", commit.batch_id, commit.to_user_metadata())
        )
        if checkpoint_due(version, metadata["configuration"]):
            write_checkpoint(self.spark, table, version)
        return TableCommit("written", rows=rows, version=version)


@dataclass
class Py4jCommits:
    """jvm/DeltaCommits.java's calls made one by one over py4j, for a session the helper is not
    built for (jvm_commits.py)."""

    spark: SparkSession

    def start(self, session: SparkSession, table: str) -> Py4jTransaction:
        with active_session(session):
            txn = self.spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(session._jsparkSession, table)
            return Py4jTransaction(session, txn.startTransaction())


@dataclass
class Py4jTransaction:
    """jvm/DeltaCommits.java's `Transaction`: each step with the transaction's session active."""

    session: SparkSession
    txn: Any

    def state(self, stream: str) -> str:
        with active_session(self.session):
            return json.dumps({"txn": self._txn_version(stream), "metadata": json.loads(self.txn.metadata().json())})

    def commit(self, metadata: str | None, actions: str, query_id: str, batch_id: int, user_metadata: str) -> int:
        jvm = self.session._jvm
        delta = jvm.org.apache.spark.sql.delta
        with active_session(self.session):
            if metadata is not None:
                self.txn.updateMetadata(delta.actions.Action.fromJson(metadata), False)
            parsed = jvm.java.util.ArrayList()
            for line in actions.splitlines():
                parsed.add(delta.actions.Action.fromJson(line))
            operation = getattr(delta, "DeltaOperations$StreamingUpdate")(
                jvm.org.apache.spark.sql.streaming.OutputMode.Append(),
                query_id,
                batch_id,
                jvm.scala.Some(user_metadata),
            )
            return int(self.txn.commit(jvm.scala.jdk.javaapi.CollectionConverters.asScala(parsed).toSeq(), operation))

    def _txn_version(self, stream: str) -> int:
        """The table's txn version for `stream` (NO_TXN: none), from the snapshot's checksum when
        it keeps the set transactions, else from delta-spark's state reconstruction."""
        checksum = self.txn.snapshot().checksumOpt()
        kept = checksum.get().setTransactions() if checksum.isDefined() else None
        if kept is not None and kept.isDefined():
            found = self.session._jvm.scala.jdk.javaapi.CollectionConverters.asJava(kept.get())
            # By index: a Python loop over a Java iterator ends in an exception that PySpark
            # converts, ~9 ms, a third of a commit.
            for index in range(found.size()):
                entry = found.get(index)
                if entry.appId() == stream:
                    return int(entry.version())
            return NO_TXN
        return int(self.txn.txnVersion(stream))


def create_native_table(
    spark: SparkSession,
    table: LocationLike,
    columns: StructType,
    configuration: Mapping[str, str] = NATIVE_TABLE_CONFIGURATION,
) -> None:
    """An empty table with `columns`, unless one exists, created by delta-spark: a log a kill cut
    short at creation is cleared first (pipeline/delta_connector/cut_short_creation.py)."""
    from delta.tables import DeltaTable as SparkDeltaTable

    if is_table(table):
        return
    clear_cut_short_creation(table)
    builder = SparkDeltaTable.createIfNotExists(spark).location(str(table)).addColumns(columns)
    for key, value in configuration.items():
        builder = builder.property(key, value)
    builder.execute()


def _new_metadata(schemas: list[pa.Schema]) -> dict[str, Any]:
    """The metaData action of a table the batch's commit creates: the files' columns (the
    commit adds the others' new ones) and the lake's table properties. The sink's tasks have
    written files into the folder by then, which delta-spark's CREATE TABLE refuses to take
    over; a first commit that carries the metadata is how its own writer creates a table."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return {
        "id": str(uuid.uuid4()),
        "format": {"provider": "parquet", "options": {}},
        "schemaString": from_arrow_schema(schemas[0]).json(),
        "partitionColumns": [],
        "configuration": dict(NATIVE_TABLE_CONFIGURATION),
        "createdTime": int(time.time() * 1000),
    }


def _add_action(data_file: DataFile) -> str:
    return json.dumps(
        {
            "add": {
                "path": data_file.path,
                "partitionValues": {},
                "size": data_file.size,
                "modificationTime": data_file.modification_time,
                "dataChange": True,
                "stats": data_file.stats,
            }
        }
    )
