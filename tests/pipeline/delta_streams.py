"""Streaming queries on the embedded Delta source, for tests: drained with Trigger.AvailableNow,
or kept running (a short processing-time trigger) while the test changes the table."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from waiting import wait_until


def source(spark, table: Path, schema: str | None = None, **options: Any):
    reader = spark.readStream.format("streamops_delta").option("path", str(table))
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return (reader.schema(schema) if schema else reader).load()


def drain(spark, table: Path, checkpoint: Path, **options: Any) -> list[dict]:
    """Every row the stream reads until it has caught up, in batch order."""
    rows: list[dict] = []
    drain_batches(
        spark, table, checkpoint, lambda df, _: rows.extend(r.asDict(recursive=True) for r in df.collect()), **options
    )
    return rows


def drain_batches(spark, table: Path, checkpoint: Path, each_batch: Callable[[Any, int], None], **options: Any) -> None:
    """Run the stream with Trigger.AvailableNow until it has caught up, `each_batch` per batch."""
    query = (
        source(spark, table, **options)
        .writeStream.foreachBatch(each_batch)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination(120)
    finally:
        query.stop()


class RunningStream:
    """A query that keeps polling the table; `ids` is every `id` it has read, in order."""

    def __init__(self, spark, table: Path, checkpoint: Path, **options: Any) -> None:
        self.ids: list[int] = []
        self.query = (
            source(spark, table, **options)
            .writeStream.foreachBatch(lambda df, _: self.ids.extend(r.id for r in df.select("id").collect()))
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="0.5 seconds")
            .start()
        )

    def wait_for(self, ids: list[int]) -> None:
        wait_until(lambda: sorted(self.ids) == sorted(ids) or not self.query.isActive, 90, f"the stream to read {ids}")
        assert sorted(self.ids) == sorted(ids)

    def failure(self) -> str:
        """The message the query stopped with (it must stop by itself)."""
        wait_until(lambda: not self.query.isActive, 90, "the stream to stop")
        error = self.query.exception()
        assert error is not None, "the stream stopped without an error"
        return str(error)

    def stop(self) -> None:
        self.query.stop()
