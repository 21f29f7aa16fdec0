"""Shared fixtures: one SparkSession for the whole test session, one lake the pipeline wrote,
and a fresh lake per test."""

from __future__ import annotations

import pytest
from built_lake import BuiltLake, build_lake

from streamops.lake_layout import LakeLayout


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for every test that needs Spark (starting one costs ~10 s).

    Tests must stop the queries they start; this fixture stops any left over, then Spark.
    """
    from pipeline.spark_session import build_spark

    session = build_spark(
        master="local[2]",
        app_name="streamops-tests",
        conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"},
    )
    yield session
    for query in session.streams.active:
        query.stop()
    session.stop()


@pytest.fixture
def lake(tmp_path) -> LakeLayout:
    return LakeLayout.at(tmp_path / "lake")


@pytest.fixture(scope="session")
def built_lake(spark, tmp_path_factory) -> BuiltLake:
    """A lake the real pipeline wrote (read-only for every test that uses it)."""
    return build_lake(spark, tmp_path_factory.mktemp("built_lake"))
