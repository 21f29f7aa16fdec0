"""delta-spark's JARs the standard way: the coordinate delta-spark itself asks for, Spark's Ivy
on the first run and the remembered files after it, Maven where Ivy cannot reach the registry,
a directory on an air-gapped cluster, and one line when none of them works."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from delta import configure_spark_with_delta_pip
from pyspark.sql import SparkSession

from streamops.pipeline.runtime.spark_jars import (
    JARS_DIR_ENV,
    RESOLVER_ENV,
    JarsUnresolvedError,
    delta_spark_package,
    jar_settings,
    maven_resolved,
)


def test_the_coordinate_is_the_one_delta_sparks_own_helper_asks_for():
    builder = configure_spark_with_delta_pip(SparkSession.builder)
    assert builder._options["spark.jars.packages"] == delta_spark_package()


def test_a_directory_of_jars_is_used_as_it_is(tmp_path, monkeypatch):
    (tmp_path / "b.jar").write_bytes(b"")
    (tmp_path / "a.jar").write_bytes(b"")
    monkeypatch.setenv(JARS_DIR_ENV, str(tmp_path))
    assert jar_settings([delta_spark_package()]) == {"spark.jars": f"{tmp_path / 'a.jar'},{tmp_path / 'b.jar'}"}
    (tmp_path / "a.jar").unlink()
    (tmp_path / "b.jar").unlink()
    with pytest.raises(JarsUnresolvedError, match=f"no JARs in `{tmp_path}`") as raised:
        jar_settings([delta_spark_package()])
    assert "\n" not in str(raised.value)


def test_an_unknown_resolver_and_a_missing_maven_are_one_line_each(tmp_path, monkeypatch):
    monkeypatch.delenv(JARS_DIR_ENV, raising=False)
    monkeypatch.setenv(RESOLVER_ENV, "gradle")
    with pytest.raises(JarsUnresolvedError, match="must be `ivy` or `maven`"):
        jar_settings([delta_spark_package()])
    monkeypatch.setenv(RESOLVER_ENV, "maven")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("streamops.pipeline.runtime.spark_jars.MAVEN_CACHE", tmp_path / "cache")
    with pytest.raises(JarsUnresolvedError, match="needs Maven") as raised:
        jar_settings([delta_spark_package()])
    assert "\n" not in str(raised.value)


@pytest.mark.e2e
def test_maven_resolves_into_the_cache_without_what_pyspark_ships(tmp_path, monkeypatch):
    monkeypatch.setattr("streamops.pipeline.runtime.spark_jars.MAVEN_CACHE", tmp_path / "cache")
    jars = maven_resolved([delta_spark_package()])
    names = {jar.name for jar in jars}
    assert any(name.startswith("delta-spark_4.2_2.13-") for name in names)
    assert any(name.startswith("delta-storage-") for name in names)
    assert not any(name.startswith(("hadoop-client", "scala-library", "spark-")) for name in names), names
    assert maven_resolved([delta_spark_package()]) == jars, "reused, not resolved again"


@pytest.mark.e2e
@pytest.mark.spark
def test_a_native_run_on_jars_maven_resolved_is_exactly_once(tmp_path):
    """The whole pipeline on delta-spark with the JARs Maven resolved (no Ivy, a new home)."""
    from streamops.pipeline.generator.run import generate
    from streamops.pipeline.generator.settings import GeneratorSettings

    manifest = generate(GeneratorSettings(out=tmp_path / "landing", events=300, event_types=3, bad=0.0, seed=2))
    environment = {**os.environ, "HOME": str(tmp_path / "home"), RESOLVER_ENV: "maven"}
    done = subprocess.run(
        [
            sys.executable, "-m", "streamops", "run", "--lake", str(tmp_path / "lake"), "--landing",
            str(tmp_path / "landing"), "--until-idle", "--delta", "native", "--json",
        ],
        capture_output=True, text=True, timeout=900, env=environment,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "resolving dependencies" not in done.stderr, "Ivy was not asked"
    assert sum(json.loads(done.stdout)["lake"]["silver_rows"].values()) == manifest["events_total"]
    assert any((tmp_path / "home" / ".cache" / "streamops" / "jars" / "resolved").glob("*/delta-spark_*.jar"))


@pytest.mark.e2e
@pytest.mark.spark
def test_jars_ivy_cannot_resolve_stop_the_run_with_one_line(tmp_path):
    code = (
        "from streamops.pipeline.run.spark_session import build_spark\n"
        "build_spark(master='local[1]', packages=['io.delta:no-such-artifact_2.13:0.0.1'])\n"
    )
    environment = {**os.environ, "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True, text=True, timeout=600, env=environment,
    )  # fmt: skip
    assert done.returncode != 0
    assert "JarsUnresolvedError: Spark could not resolve io.delta:no-such-artifact_2.13:0.0.1" in done.stderr
