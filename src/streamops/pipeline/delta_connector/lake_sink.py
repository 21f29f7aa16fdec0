"""The executor-side Delta writer: a PySpark Python data source that writes a micro-batch's rows
as Parquet files in Spark's tasks; the driver then commits them, one txn commit per table.

    df.write.format("streamops_sink").mode("append").option("plan", plan.to_json()).save()

Where each method runs (PySpark 4.2, `DataSourceArrowWriter`): `write()` in the executors'
Python workers, once per partition, with Arrow batches of the partition's rows; it splits them
by `_route`, writes one file per table and returns the files' add actions with statistics, row
tallies and the first rows the plan asks for: only that metadata reaches the driver. `commit()`
runs in a Python worker on the driver once every task succeeded and gathers the messages into a
`WrittenBatch` for the caller, which commits (pipeline/delta_connector/batch_commit.py) after
whatever must be committed first (bronze: the schema registry, from the first rows). `abort()`
deletes the files of a failed attempt; files of a retried task, or of a batch whose commit never
came, are unreferenced and VACUUM removes them.
"""

from __future__ import annotations

from streamops.core.extras import require

require("pipeline", __name__)

from dataclasses import dataclass, field
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from streamops.pipeline.delta_connector.batch_commit import delete_files
from streamops.pipeline.delta_connector.batch_report import FirstRowsFound, WrittenBatch, merge_first_rows
from streamops.pipeline.delta_connector.data_files import DataFile, DataFileBuilder
from streamops.pipeline.delta_connector.typed_rows import arrow_schema, flat_table, parse_json_rows
from streamops.pipeline.delta_connector.write_plan import (
    BYTES_SUFFIX,
    ROUTE_COLUMN,
    TALLY_COLUMN,
    TALLY_ITEMS_COLUMN,
    TEXT_SUFFIX,
    FirstRows,
    TableTarget,
    WritePlan,
)
from streamops.pipeline.exceptions import PipelineConfigError
from streamops.pipeline.runtime.worker_gc import freeze_imported_objects

FORMAT_NAME = "streamops_sink"
BUFFER_BYTES = 64 * 1024 * 1024
PARSE_STAGE = "silver_parse"
PLAN_OPTION = "plan"


@dataclass
class FilesWritten(WriterCommitMessage):
    files: list[DataFile] = field(default_factory=list)
    tallies: dict[str, dict[str, int]] = field(default_factory=dict)
    first_rows: FirstRowsFound = field(default_factory=dict)
    item_tallies: dict[str, dict[str, int]] = field(default_factory=dict)


class LakeSink(DataSource):
    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def writer(self, schema: StructType, overwrite: bool) -> LakeSinkWriter:
        return LakeSinkWriter(self._plan())

    def _plan(self) -> WritePlan:
        text = self.options.get(PLAN_OPTION)
        if not text:
            raise PipelineConfigError(
                f"the {self.name()} sink needs its write plan: .option('{PLAN_OPTION}', plan.to_json())"
            )
        return WritePlan.from_json(text)


class LakeSinkWriter(DataSourceArrowWriter):
    def __init__(self, plan: WritePlan) -> None:
        self.plan = plan
        self._schemas: dict[str, pa.Schema] = {}

    def __getstate__(self) -> dict:
        return {"plan": self.plan, "_schemas": {}}

    def write(self, iterator: Iterator[pa.RecordBatch]) -> FilesWritten:
        """Rows are gathered per route and handled a route at a time (up to BUFFER_BYTES each):
        Spark hands 10,000 rows per Arrow batch, and parsing, statistics and a Parquet row group
        per batch and route cost more than the rows themselves."""
        freeze_imported_objects()
        builders: dict[str, DataFileBuilder] = {}
        tallies: dict[str, dict[str, int]] = {}
        item_tallies: dict[str, dict[str, int]] = {}
        buffered: dict[str, list[pa.Table]] = {}
        first_rows: FirstRowsFound = {}
        try:
            for batch in iterator:
                table = pa.Table.from_batches([batch])
                if self.plan.first_rows is not None:
                    merge_first_rows(first_rows, first_rows_of(table, self.plan.first_rows))
                for route, rows in split_routes(table):
                    _tally(tallies, route, rows)
                    _tally_items(item_tallies, route, rows)
                    if route not in self.plan.tables:
                        continue
                    parts = buffered.setdefault(route, [])
                    parts.append(rows)
                    if sum(part.nbytes for part in parts) >= BUFFER_BYTES:
                        self._flush(builders, route, buffered.pop(route))
            for route in list(buffered):
                self._flush(builders, route, buffered.pop(route))
            return FilesWritten([b.close() for b in builders.values() if b.rows], tallies, first_rows, item_tallies)
        except BaseException:
            for builder in builders.values():
                builder.discard()
            raise

    def _flush(self, builders: dict[str, DataFileBuilder], route: str, parts: list[pa.Table]) -> None:
        rows = pa.concat_tables(parts)
        for table_route, table_rows in self.table_rows(route, self.plan.tables[route], rows):
            self._builder(builders, table_route, table_rows.schema).write(table_rows)

    def table_rows(self, route: str, target: TableTarget, rows: pa.Table) -> Iterator[tuple[str, pa.Table]]:
        """Rows of one route as rows of its table, and rejected rows as rows of its reject route."""
        if target.rows == "columns":
            yield route, project_columns(rows, target.columns, self.plan)
            return
        parsed = parse_json_rows(rows.column(str(target.payload_column)), self._arrow_schema(route, target))
        if parsed.errors:
            yield from self._rejected(target, rows.filter(pc.invert(parsed.accepted)), parsed.errors)
            rows = rows.filter(parsed.accepted)
        if rows.num_rows:
            flat = flat_table(parsed.table)
            extra = project_columns(rows, target.columns, self.plan)
            yield (
                route,
                pa.Table.from_arrays(flat.columns + extra.columns, names=flat.column_names + extra.column_names),
            )

    def _arrow_schema(self, route: str, target: TableTarget) -> pa.Schema:
        if route not in self._schemas:
            self._schemas[route] = arrow_schema(target.schema or {"type": "struct", "fields": []})
        return self._schemas[route]

    def _rejected(self, target: TableTarget, rows: pa.Table, errors: list[str]) -> Iterator[tuple[str, pa.Table]]:
        """Rows whose payload did not parse, as rows of the reject route: reason `unprocessable`."""
        if target.reject_route is None:
            raise PipelineConfigError(f"{len(errors)} rows did not parse and `{target.path}` has no reject route")
        reject = self.plan.tables[target.reject_route]
        reason, detail = reject.columns["reason"], reject.columns["detail"]
        rows = rows.set_column(rows.schema.get_field_index(reason), reason, pa.array(["unprocessable"] * rows.num_rows))
        details = pa.array([f"stage {PARSE_STAGE}: {e}" for e in errors], pa.string())
        rows = rows.set_column(rows.schema.get_field_index(detail), detail, details)
        yield target.reject_route, project_columns(rows, reject.columns, self.plan)

    def _builder(self, builders: dict[str, DataFileBuilder], route: str, schema: pa.Schema) -> DataFileBuilder:
        if route not in builders:
            target = self.plan.tables[route]
            builders[route] = DataFileBuilder(target.path, schema, target.time_column)
        return builders[route]

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        written = WrittenBatch()
        for message in messages:
            if isinstance(message, FilesWritten):
                written.add(
                    message.files,
                    lambda f: _route_of(self.plan, f),
                    message.tallies,
                    message.first_rows,
                    message.item_tallies,
                )
        written.save(self.plan.report_path)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        delete_files(f for m in messages if isinstance(m, FilesWritten) for f in m.files)


def _route_of(plan: WritePlan, data_file: DataFile) -> str:
    return next(route for route, target in plan.tables.items() if target.path == data_file.table)


def first_rows_of(table: pa.Table, wanted: FirstRows) -> FirstRowsFound:
    """Per key, the flagged row of least rank in `table`: one sort, then the first row of each
    key's run (after the first batches of a stream, few or no rows are flagged)."""
    flagged = table.filter(pc.fill_null(table.column(wanted.flag_column), False))
    if flagged.num_rows == 0:
        return {}
    ordered = flagged.sort_by([(name, "ascending") for name in wanted.key_columns + wanted.order_columns])
    joined = pc.binary_join_element_wise(*[ordered.column(n).cast(pa.string()) for n in wanted.key_columns], "\x00")
    ends = pc.run_end_encode(joined.combine_chunks()).run_ends.to_pylist()
    firsts = ordered.take(pa.array([0] + ends[:-1], pa.int64())).to_pylist()
    return {
        tuple(row[n] for n in wanted.key_columns): (
            tuple(row[n] for n in wanted.order_columns),
            row[wanted.value_column],
        )
        for row in firsts
    }


def split_routes(table: pa.Table) -> Iterator[tuple[str, pa.Table]]:
    """(route, its rows) for each route in the batch, in one sort."""
    if table.num_rows == 0:
        return
    routes = table.column(ROUTE_COLUMN)
    if routes.null_count:
        raise PipelineConfigError(f"rows without a `{ROUTE_COLUMN}` reached the sink")
    ordered = table.take(pc.sort_indices(routes))
    runs = pc.run_end_encode(ordered.column(ROUTE_COLUMN).combine_chunks())
    start = 0
    for route, end in zip(runs.values.to_pylist(), runs.run_ends.to_pylist()):
        yield route, ordered.slice(start, end - start)
        start = end


def _tally(tallies: dict[str, dict[str, int]], route: str, rows: pa.Table) -> None:
    counts = tallies.setdefault(route, {})
    if TALLY_COLUMN not in rows.column_names:
        counts[""] = counts.get("", 0) + rows.num_rows
        return
    for item in pc.value_counts(rows.column(TALLY_COLUMN).combine_chunks()).to_pylist():
        key = item["values"] if item["values"] is not None else ""
        counts[key] = counts.get(key, 0) + item["counts"]


def _tally_items(tallies: dict[str, dict[str, int]], route: str, rows: pa.Table) -> None:
    if TALLY_ITEMS_COLUMN not in rows.column_names:
        return
    items = pc.list_flatten(rows.column(TALLY_ITEMS_COLUMN).combine_chunks())
    if len(items) == 0:
        return
    counts = tallies.setdefault(route, {})
    found = pc.value_counts(items)
    for value, rows in zip(found.field("values").to_pylist(), found.field("counts").to_pylist()):
        if value is not None:
            counts[value] = counts.get(value, 0) + rows


def project_columns(rows: pa.Table, columns: dict[str, str], plan: WritePlan) -> pa.Table:
    """Table column -> source: a column of the rows, `source:text` (binary decoded as UTF-8,
    invalid bytes replaced), `source:bytes` (a string's UTF-8 bytes) or a batch value of the plan."""
    arrays = []
    for source in columns.values():
        value = plan.batch_value(source)
        if value is not None:
            arrays.append(pa.repeat(value, rows.num_rows))
        elif source.endswith(TEXT_SUFFIX):
            raw = rows.column(source[: -len(TEXT_SUFFIX)]).to_pylist()
            arrays.append(pa.array([None if b is None else b.decode("utf-8", "replace") for b in raw], pa.string()))
        elif source.endswith(BYTES_SUFFIX):
            arrays.append(rows.column(source[: -len(BYTES_SUFFIX)]).cast(pa.binary()))
        else:
            arrays.append(rows.column(source))
    return pa.Table.from_arrays(arrays, names=list(columns))
