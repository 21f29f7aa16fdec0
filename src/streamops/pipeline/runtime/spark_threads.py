"""Spark jobs of independent tables, side by side, from one batch.

A batch that writes many tables (a CDC group's MERGEs) would otherwise run their jobs one after
another, each waiting for its commit's storage round trips while the cores idle. Threads that carry the batch's job group and local properties
(`inheritable_thread_target`) run them at once: cancelling the batch's query cancels them too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

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
