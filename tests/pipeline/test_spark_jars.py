"""delta-spark's JARs the standard way: the coordinate delta-spark itself asks for, Spark's Ivy
on the first run (without `~/.m2`, whatever an ordinary `mvn` build left there) and the
remembered files after it, Maven where Ivy cannot reach the registry, a directory on an
air-gapped cluster, and one line when none of them works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest
from delta import configure_spark_with_delta_pip
from pyspark.sql import SparkSession

from streamops.pipeline.runtime.spark_jars import (
    JARS_DIR_ENV,
    REPOSITORY_ENV,
    RESOLVER_ENV,
    JarsUnresolvedError,
    delta_spark_package,
    ivy_settings,
    jar_settings,
    maven_resolved,
)

JSR305_POM = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>com.google.code.findbugs</groupId><artifactId>jsr305</artifactId><version>3.0.2</version></project>
"""
"""The POM of a module in delta-spark's tree, as `mvn` leaves it in `~/.m2` without its JAR."""


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


@pytest.fixture
def outside_spark(tmp_path, monkeypatch):
    """No Spark settings from outside the run: an empty `SPARK_CONF_DIR`, no submit arguments."""
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "spark-conf"))
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS", raising=False)
    monkeypatch.delenv(REPOSITORY_ENV, raising=False)
    monkeypatch.delenv(JARS_DIR_ENV, raising=False)
    monkeypatch.delenv(RESOLVER_ENV, raising=False)
    monkeypatch.setattr("streamops.pipeline.runtime.spark_jars.MAVEN_CACHE", tmp_path / "cache" / "resolved")
    return tmp_path / "spark-conf"


def _resolvers(settings: str) -> dict[str, str]:
    """Each resolver of an Ivy settings file's default chain: its name and where it looks."""
    root = ElementTree.parse(settings).getroot()
    chain = root.find(f"resolvers/chain[@name='{root.find('settings').get('defaultResolver')}']")
    return {
        resolver.get("name"): resolver.get("root") or resolver.find("artifact").get("pattern") for resolver in chain
    }


def test_ivy_resolves_with_sparks_resolvers_but_the_local_maven_cache(outside_spark):
    settings = jar_settings([delta_spark_package()], {})
    assert settings["spark.jars.packages"] == delta_spark_package()
    resolvers = _resolvers(settings["spark.jars.ivySettings"])
    assert list(resolvers) == ["local-ivy-cache", "central", "spark-packages"], "Spark's names: its cache stays valid"
    assert resolvers["central"] == "https://repo1.maven.org/maven2/"
    assert resolvers["local-ivy-cache"].startswith("${user.home}/.ivy2.5.2/local/")
    assert not any(".m2" in where for where in resolvers.values())
    assert jar_settings([delta_spark_package()], {}) == settings, "the same file for the same settings"


def test_ivy_settings_follow_sparks_ivy_directory_and_repository_variable(outside_spark, tmp_path, monkeypatch):
    monkeypatch.setenv(REPOSITORY_ENV, "https://mirror.example/maven/")
    resolvers = _resolvers(ivy_settings({"spark.jars.ivy": str(tmp_path / "my ivy")})["spark.jars.ivySettings"])
    assert resolvers["local-ivy-cache"].startswith(f"{tmp_path / 'my ivy'}/local/")
    assert resolvers["central"] == resolvers["spark-packages"] == "https://mirror.example/maven/"


def test_a_users_own_ivy_settings_are_left_as_they_are(outside_spark, tmp_path, monkeypatch):
    assert ivy_settings({"spark.jars.ivySettings": "/etc/ivy.xml"}) == {}
    outside_spark.mkdir()
    (outside_spark / "spark-defaults.conf").write_text("# mine\nspark.jars.ivySettings   /etc/ivy.xml\n")
    assert ivy_settings({}) == {}
    assert "spark.jars.ivySettings" not in jar_settings([delta_spark_package()], {})
    (outside_spark / "spark-defaults.conf").write_text("spark.jars.ivy=/opt/ivy\n")
    assert _resolvers(ivy_settings({})["spark.jars.ivySettings"])["local-ivy-cache"].startswith("/opt/ivy/local/")
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--conf spark.jars.ivySettings=/etc/ivy.xml pyspark-shell")
    assert ivy_settings({}) == {}
    properties = tmp_path / "submit.properties"
    properties.write_text("spark.jars.ivySettings: /etc/ivy.xml\n")
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", f"--properties-file {properties} pyspark-shell")
    assert ivy_settings({}) == {}


@pytest.mark.e2e
@pytest.mark.spark
def test_a_first_native_start_resolves_where_maven_left_poms_without_jars(tmp_path):
    """A new home whose `~/.m2` holds a POM of delta-spark's tree without its JAR, and an empty
    Ivy directory: Spark resolves delta-spark from Maven Central and Delta works. The JVM's home
    is not `$HOME` (it comes from the user database), so it is given to the JVM too."""
    home = tmp_path / "home"
    pom = home / ".m2" / "repository" / "com" / "google" / "code" / "findbugs" / "jsr305" / "3.0.2" / "jsr305-3.0.2.pom"
    pom.parent.mkdir(parents=True)
    pom.write_text(JSR305_POM)
    code = (
        "import sys\n"
        "from streamops.pipeline.delta_connector.connector import session_needs\n"
        "from streamops.pipeline.run.spark_session import build_spark\n"
        "conf, packages = session_needs('native')\n"
        "spark = build_spark(master='local[1]', conf=conf, packages=packages)\n"
        "spark.range(3).write.format('delta').save(sys.argv[1])\n"
        "print('rows', spark.read.format('delta').load(sys.argv[1]).count())\n"
    )
    java_options = f"{os.environ.get('STREAMOPS_JAVA_OPTIONS', '')} -Duser.home={home}"
    environment = {**os.environ, "HOME": str(home), "STREAMOPS_JAVA_OPTIONS": java_options}
    environment.pop("PYSPARK_SUBMIT_ARGS", None)
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "table")],
        capture_output=True, text=True, timeout=600, env=environment,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rows 3" in done.stdout.splitlines(), done.stdout
    jars = home / ".ivy2.5.2" / "jars"
    assert (jars / "com.google.code.findbugs_jsr305-3.0.2.jar").stat().st_size > 0, "from Maven Central"
    assert (jars / f"{delta_spark_package().replace(':', '_', 1).replace(':', '-')}.jar").exists()
    assert sorted(path.name for path in pom.parent.iterdir()) == ["jsr305-3.0.2.pom"], "~/.m2 left as it was"
    assert list((home / ".cache" / "streamops" / "jars" / "resolved").glob("*.ivy")), "the resolution remembered"


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
