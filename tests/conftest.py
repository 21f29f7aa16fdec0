"""Shared fixtures: one SparkSession for the whole test session, one lake the pipeline wrote,
and a fresh lake per test; and the markers that let the everyday loop skip the slow suites.

Markers (pyproject.toml): `spark` is set here on every test that uses the session's SparkSession
(the `spark` fixture or one built on it); tests that run Spark in a `streamops` process mark
themselves, and a test not marked `spark` that starts Spark fails (`_spark_trap`), so
`pytest -m "not spark"` is the Spark-free loop. Modules that run the whole pipeline or start
outside servers mark themselves `e2e` or `services`; `pytest -m "not e2e and not services"` is
the everyday subset; CI runs everything.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest
from built_lake import BuiltLake, build_lake
from jvm_options import SHORT_RUN_JAVA_OPTIONS

from streamops.core.extras import MissingExtraError
from streamops.core.lake_layout import LakeLayout

SPARK_FIXTURES = frozenset({"spark", "built_lake"})
TEST_SPARK_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    # delta-spark's VACUUM lists a table in this many tasks (10,000 by default: minutes on 2 cores)
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "2",
}
DELTA_SPARK_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


# Spark's JVMs in every `streamops` process a test starts (they inherit it)
os.environ.setdefault("STREAMOPS_JAVA_OPTIONS", SHORT_RUN_JAVA_OPTIONS)


SESSION_WORLDS = {
    "delta_world_template": "checkpoint_worlds",
    "file_world_template": "checkpoint_worlds",
    "rate_world_template": "checkpoint_worlds",
    "built_lake": "built_lake",
}
"""Session fixtures that cost Spark minutes: under `-n`, one worker runs every test that reads each."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if SPARK_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.spark)
    if getattr(config.option, "loadgroup", False):  # what xdist's workers keep of `--dist loadgroup`
        _group_for_workers(items)


def _group_for_workers(items: list[pytest.Item]) -> None:
    """For `-n 2 --dist loadgroup`: a module's tests, or every reader of a session world, share a
    worker, so each module and session fixture is built once; the groups that run Spark go first,
    the largest first, so the quick Spark-free ones fill the end of the run instead of a long one."""
    groups: dict[str, list[pytest.Item]] = {}
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        worlds = [group for fixture, group in SESSION_WORLDS.items() if fixture in fixtures]
        name = worlds[0] if worlds else item.nodeid.split("::")[0]
        _join_group(item, name)
        groups.setdefault(name, []).append(item)
    order = sorted(groups.values(), key=lambda g: (not any(i.get_closest_marker("spark") for i in g), -len(g)))
    items[:] = [item for group in order for item in group]


def _join_group(item: pytest.Item, name: str) -> None:
    """xdist's scheduler reads a test's group from its id, `<id>@<group>`; xdist 3.8 writes that
    suffix into `_nodeid`, which pytest 9.2 no longer reads (its id is a structured `_id`), so every
    test stays alone and each worker builds every world (pytest-dev/pytest-xdist#1386). The id is
    written here, where pytest keeps it, and no `xdist_group` mark is added, so a fixed xdist does
    not append the group a second time."""
    grouped = f"{item.nodeid}@{name}"
    if hasattr(item, "_id"):
        from _pytest.nodeid import NodeId

        item._id = NodeId.parse(grouped)
    else:
        item._nodeid = grouped


@pytest.fixture(scope="session")
def _spark_trap(tmp_path_factory) -> Path:
    """A SPARK_HOME whose spark-submit records that it ran and fails: PySpark starts every JVM
    through `$SPARK_HOME/bin/spark-submit`, in this process and in any `streamops` it starts."""
    home = tmp_path_factory.mktemp("spark_trap")
    (home / "bin").mkdir()
    script = home / "bin" / "spark-submit"
    script.write_text(
        f'#!/bin/sh\necho "$*" >> "{home}/launched"\necho "spark-submit in a test not marked spark" >&2\nexit 1\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return home


@pytest.fixture(autouse=True)
def _spark_free_tests_start_no_spark(request, monkeypatch):
    """A test not marked `spark` that starts Spark fails, so `-m "not spark"` is the Spark-free loop."""
    if request.node.get_closest_marker("spark"):
        yield
        return
    home = request.getfixturevalue("_spark_trap")
    monkeypatch.setenv("SPARK_HOME", str(home))
    yield
    launched = home / "launched"
    if launched.exists():
        commands = launched.read_text()
        launched.unlink()
        pytest.fail(f"started Spark (spark-submit {commands.strip()}) but is not marked spark")


def new_spark_session():
    """The pipeline's session where the pipeline can run, with delta-spark's JARs so that the
    embedded and the native connector both run in it, and Spark's Kafka connector; on an older
    PySpark (the monitor's tests run on 3.5 too) a plain session with delta-spark's connector and
    the same settings. Also what `.ci/warm_spark.py` starts once, so that Ivy has resolved the
    JARs before CI runs two test processes side by side."""
    try:
        from streamops.pipeline.delta_connector.connector import session_needs
        from streamops.pipeline.run.spark_session import build_spark
        from streamops.pipeline.runtime.spark_jars import kafka_package

        native_conf, packages = session_needs("native")  # both connectors run in this one session
        return build_spark(
            master="local[2]",
            app_name="streamops-tests",
            conf={**TEST_SPARK_CONF, **native_conf},
            packages=[*packages, kafka_package()],
            java_options="",  # this JVM lives the whole test run: the optimising JIT tier pays off
        )
    except MissingExtraError:
        return _plain_spark()


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for every test that needs Spark (starting one costs ~10 s). Tests
    must stop the queries they start; this fixture stops any left over, then Spark."""
    session = new_spark_session()
    yield session
    for query in session.streams.active:
        query.stop()
    session.stop()


def _plain_spark():
    """Spark with delta-spark's own connector and Spark's Kafka connector (their JARs through
    `spark.jars.packages`)."""
    import pyspark
    from delta import configure_spark_with_delta_pip
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master("local[2]").appName("streamops-tests")
    for key, value in {**TEST_SPARK_CONF, **DELTA_SPARK_CONF, "spark.sql.session.timeZone": "UTC"}.items():
        builder = builder.config(key, value)
    kafka = f"org.apache.spark:spark-sql-kafka-0-10_2.12:{pyspark.__version__}"  # PySpark 3.5 is Scala 2.12
    session = configure_spark_with_delta_pip(builder, extra_packages=[kafka]).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


try:
    from streamops.pipeline.delta_connector.connector import CONNECTORS
except MissingExtraError:  # the monitor's tests on PySpark 3.5: no pipeline
    CONNECTORS = ()


@pytest.fixture(params=CONNECTORS)
def connector_name(request) -> str:
    """Each Delta connector in turn: a test that takes it runs once on each."""
    return request.param


@pytest.fixture
def connector(spark, connector_name):
    from streamops.pipeline.delta_connector.connector import connector_for

    return connector_for(connector_name, spark)


@pytest.fixture
def lake(tmp_path) -> LakeLayout:
    return LakeLayout.at(tmp_path / "lake")


@pytest.fixture(scope="session")
def built_lake(spark, tmp_path_factory) -> BuiltLake:
    """A lake the real pipeline wrote (read-only for every test that uses it)."""
    return build_lake(spark, tmp_path_factory.mktemp("built_lake"))
