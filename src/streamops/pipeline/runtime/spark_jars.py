"""The JARs a run needs beyond PySpark's own, resolved the standard way and cached.

- delta-spark, for the native Delta connector: `io.delta:delta-spark_<Spark major.minor>_2.13`
  at the version of the installed `delta-spark` pip package, named and requested exactly as
  delta-spark's own `configure_spark_with_delta_pip` does;
- further packages a run asks for: Spark's Kafka connector (`kafka_package`), Hadoop's S3A.

By default Spark resolves them itself (`spark.jars.packages`, Ivy, Spark's Ivy cache in the
home directory): the first run downloads them from Maven Central and the list of files Ivy
retrieved is remembered (`~/.cache/streamops/jars/`), so later runs hand Spark those files
(`spark.jars`): no network and no resolution report at every start. Two ways around Ivy, for machines where it cannot reach the registry
(Ivy does not read Maven's `settings.xml`, so a proxy or mirror named only there is unknown
to it):

- `STREAMOPS_JARS_RESOLVER=maven`: resolve with Maven (`mvn dependency:copy-dependencies`, which
  honours `settings.xml`) into `~/.cache/streamops/jars/resolved/<packages>/`, and hand Spark the
  files (`spark.jars`); a later run reuses the directory without Maven. Maven's downloads go to a
  repository of their own beside it, not `~/.m2`: Spark's Ivy looks in `~/.m2` first and takes a
  pom there without its JAR for a broken module;
- `STREAMOPS_JARS_DIR=DIR`: use the JARs in DIR as they are (an air-gapped cluster: copy such a
  directory, or Spark's Ivy `jars/` directory, from a machine that could resolve them).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from streamops.pipeline.exceptions import PipelineConfigError

Resolver = Literal["ivy", "maven"]
RESOLVER_ENV = "STREAMOPS_JARS_RESOLVER"
JARS_DIR_ENV = "STREAMOPS_JARS_DIR"
SCALA = "2.13"
ARTIFACT_NAME = re.compile(r"^(.+?)-\d[\w.\-]*\.jar$")
MAVEN_CACHE = Path.home() / ".cache" / "streamops" / "jars" / "resolved"
IVY_JARS = Path.home() / ".ivy2.5.2" / "jars"
"""Where Spark 4's Ivy retrieves the JARs of `spark.jars.packages` (its default `spark.jars.ivy`)."""
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
PYSPARK_BUNDLED = ("org.apache.hadoop:hadoop-client-api", "org.apache.hadoop:hadoop-client-runtime")
"""What delta-spark drags in that PySpark already ships (a newer copy wins anyway): left out of
every resolution, so an older Hadoop is never downloaded."""


class JarsUnresolvedError(PipelineConfigError):
    """The JARs a run needs could not be resolved or found."""


def delta_spark_package() -> str:
    """The delta-spark Maven coordinate for the installed PySpark and delta-spark pip package."""
    import pyspark

    try:
        delta_version = importlib.metadata.version("delta-spark")
    except importlib.metadata.PackageNotFoundError as missing:
        raise JarsUnresolvedError(
            "the native Delta connector needs the delta-spark pip package: pip install 'streamops[pipeline]'"
        ) from missing
    spark_minor = ".".join(pyspark.__version__.split(".")[:2])
    return f"io.delta:delta-spark_{spark_minor}_{SCALA}:{delta_version}"


def kafka_package() -> str:
    """Spark's own Kafka connector, at the installed PySpark's version."""
    import pyspark

    return f"org.apache.spark:spark-sql-kafka-0-10_{SCALA}:{pyspark.__version__}"


def resolver() -> Resolver:
    chosen = os.environ.get(RESOLVER_ENV, "ivy")
    if chosen not in ("ivy", "maven"):
        raise JarsUnresolvedError(f"{RESOLVER_ENV} must be `ivy` or `maven`, got `{chosen}`")
    return chosen  # type: ignore[return-value]


def jar_settings(packages: Sequence[str]) -> dict[str, str]:
    """Spark settings that put `packages` (Maven coordinates) on the driver's and executors'
    classpath: `spark.jars.packages` for Ivy, else `spark.jars` with resolved files."""
    if not packages:
        return {}
    given = os.environ.get(JARS_DIR_ENV)
    if given:
        return {"spark.jars": ",".join(str(jar) for jar in _jars_in(Path(given)))}
    if resolver() == "maven":
        return {"spark.jars": ",".join(str(jar) for jar in maven_resolved(packages))}
    known = ivy_resolved(packages)
    if known:
        return {"spark.jars": ",".join(str(jar) for jar in known)}
    return {"spark.jars.packages": ",".join(packages), "spark.jars.excludes": ",".join(PYSPARK_BUNDLED)}


def ivy_resolved(packages: Sequence[str]) -> list[Path]:
    """The files an earlier Ivy resolution of `packages` retrieved, when all are still there."""
    listing = _cache_key_path(packages).with_suffix(".ivy")
    if not listing.exists():
        return []
    jars = [Path(line) for line in listing.read_text().splitlines() if line]
    return jars if jars and all(jar.exists() for jar in jars) else []


def remember_ivy_resolution(packages: Sequence[str], local_jars: str) -> None:
    """Keep the JARs Spark's Ivy retrieved for `packages`: the files it put on the driver's
    classpath (`spark.repl.local.jars`, `file://` URIs) from its Ivy directory."""
    jars = [entry.removeprefix("file://") for entry in local_jars.split(",") if entry]
    retrieved = [jar for jar in jars if Path(jar).parent == IVY_JARS]
    if retrieved and ivy_has(packages):
        listing = _cache_key_path(packages).with_suffix(".ivy")
        listing.parent.mkdir(parents=True, exist_ok=True)
        listing.write_text("\n".join(retrieved) + "\n")


def _cache_key_path(packages: Sequence[str]) -> Path:
    return MAVEN_CACHE / hashlib.sha256(",".join(sorted(packages)).encode()).hexdigest()[:16]


def ivy_has(packages: Sequence[str]) -> bool:
    """Whether Spark's Ivy cache holds the JAR of each package (after a session start that
    failed: did Ivy resolve them at all?)."""
    return all(
        (IVY_JARS / f"{group}_{artifact}-{version}.jar").exists() for group, artifact, version in _split(packages)
    )


def maven_resolved(packages: Sequence[str]) -> list[Path]:
    """The JARs of `packages` and their runtime dependencies, resolved once by Maven into a
    directory of the cache named for the packages, then reused without Maven."""
    target = _cache_key_path(packages)
    if (target / ".complete").exists():
        return _jars_in(target)
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsUnresolvedError(
            f"{RESOLVER_ENV}=maven needs Maven (`mvn`) on the PATH: install it, or unset {RESOLVER_ENV} to let "
            f"Spark resolve the JARs, or point {JARS_DIR_ENV} at a directory that holds them"
        )
    with tempfile.TemporaryDirectory(prefix="streamops-jars-") as scratch:
        pom = Path(scratch) / "pom.xml"
        pom.write_text(_pom(packages))
        staging = Path(scratch) / "lib"
        done = subprocess.run(
            [mvn, "-B", "-q", "-f", str(pom), f"-Dmaven.repo.local={MAVEN_CACHE / 'm2'}",
             f"{DEPENDENCY_PLUGIN}:copy-dependencies", f"-DoutputDirectory={staging}", "-DincludeScope=runtime"],
            capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        if done.returncode != 0:
            tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["no output"]
            raise JarsUnresolvedError(
                f"Maven could not resolve {', '.join(packages)}: {tail[0]} (check its settings.xml, proxy or mirror)"
            )
        bundled = _artifacts(_pyspark_jars().glob("*.jar"))
        for jar in staging.glob("*.jar"):
            if _artifact(jar) in bundled:  # Spark's own copy is on the classpath first
                jar.unlink()
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(staging, target)
    (target / ".complete").write_text("\n".join(packages) + "\n")
    return _jars_in(target)


def _pyspark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def _artifact(jar: Path) -> str:
    """`kafka-clients-3.9.2.jar` -> `kafka-clients`: the name before the first `-<digit>`."""
    match = ARTIFACT_NAME.match(jar.name)
    return match.group(1) if match else jar.stem


def _artifacts(jars: Iterable[Path]) -> set[str]:
    return {_artifact(jar) for jar in jars}


def _jars_in(directory: Path) -> list[Path]:
    jars = sorted(directory.glob("*.jar"))
    if not jars:
        raise JarsUnresolvedError(f"no JARs in `{directory}` ({JARS_DIR_ENV}): copy the resolved JARs there")
    return jars


def _split(packages: Sequence[str]) -> list[tuple[str, str, str]]:
    found = []
    for package in packages:
        parts = package.split(":")
        if len(parts) != 3:
            raise JarsUnresolvedError(f"`{package}` is not a Maven coordinate (group:artifact:version)")
        found.append((parts[0], parts[1], parts[2]))
    return found


def _pom(packages: Sequence[str]) -> str:
    exclusions = "".join(
        f"<exclusion><groupId>{group}</groupId><artifactId>{artifact}</artifactId></exclusion>"
        for group, artifact in (item.split(":") for item in PYSPARK_BUNDLED)
    )
    dependencies = "".join(
        f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId><version>{version}</version>"
        f"<exclusions>{exclusions}</exclusions></dependency>"
        for group, artifact, version in _split(packages)
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>streamops</groupId><artifactId>spark-jars</artifactId><version>1</version>"
        f"<packaging>pom</packaging><dependencies>{dependencies}</dependencies></project>"
    )
