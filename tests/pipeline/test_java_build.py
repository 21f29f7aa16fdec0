"""streamops' JVM pieces compiled at run time (pipeline/runtime/java_build.py): a source that
compiles becomes a cached jar, one that does not, or a machine without a JDK compiler, gives
None, which keeps the caller on its Python path."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from streamops.pipeline.runtime import java_build


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def source(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "src" / "Probe.java"
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"package streamops.probe;\npublic final class Probe {{ {body} }}\n")
    return path


def test_a_source_that_compiles_is_built_once_into_a_cached_jar(tmp_path):
    probe = source(tmp_path, "public static String name() { return org.apache.spark.SparkContext.class.getName(); }")
    jar = java_build.build_jar("probe", [probe], [f"{java_build.pyspark_jars()}/*"])
    assert jar is not None and jar.parent == tmp_path / "cache" / "streamops" / "jars"
    with zipfile.ZipFile(jar) as built:
        assert built.namelist() == ["streamops/probe/Probe.class"]
    built_at = jar.stat().st_mtime_ns
    assert java_build.build_jar("probe", [probe], [f"{java_build.pyspark_jars()}/*"]) == jar
    assert jar.stat().st_mtime_ns == built_at, "the cached jar is reused, not rebuilt"
    other = java_build.build_jar("probe", [probe], [f"{java_build.pyspark_jars()}/*", str(tmp_path)])
    assert other is not None and other != jar, "another classpath is another jar"


def test_a_source_that_does_not_compile_against_the_classpath_gives_none(tmp_path):
    probe = source(tmp_path, "public static Object made() { return new io.delta.NoSuchClass(); }")
    assert java_build.build_jar("probe", [probe], [f"{java_build.pyspark_jars()}/*"]) is None
    assert not list((tmp_path / "cache").rglob("*.jar"))


def test_without_a_jdk_compiler_nothing_is_built(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jre"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert java_build.javac() is None
    assert java_build.build_jar("probe", [source(tmp_path, "")], []) is None
