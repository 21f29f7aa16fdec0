"""Spark jobs of independent tables, side by side, from one batch.

A batch that writes many tables (a CDC group's MERGEs) would otherwise run their jobs one after
another, each waiting for its commit's storage round trips while the cores idle. Threads that carry the batch's job group and local properties
(`inheritable_thread_target`) run them at once: cancelling the batch's query cancels them too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator, TypeVar

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

TABLE_THREADS = 4
"""Tables of one batch written at once."""
Item = TypeVar("Item")
Result = TypeVar("Result")


def side_by_side(spark: SparkSession, work: Callable[[Item], Result], items: Iterable[Item]) -> list[Result]:
    """`work` of each item, in the items' order; the first error is raised once all have ended."""
    from pyspark.util import inheritable_thread_target

    with ThreadPoolExecutor(max_workers=TABLE_THREADS) as pool:
        return list(pool.map(inheritable_thread_target(spark)(work), items))


@contextmanager
def active_session(spark: SparkSession) -> Iterator[None]:
    """`spark` as the JVM thread's active session for the block, then the one before (or none).
    Spark finds a Python data source (the executor-side sink) in the thread's active session,
    not in the session of the frame being written; a table's thread in `side_by_side` may have
    none once a delta-spark MERGE has run on it in a session of its own."""
    companion = spark._jvm.org.apache.spark.sql.SparkSession
    before = companion.getActiveSession()
    companion.setActiveSession(spark._jsparkSession)
    try:
        yield
    finally:
        if before.isDefined():
            companion.setActiveSession(before.get())
        else:
            companion.clearActiveSession()
