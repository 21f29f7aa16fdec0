"""The JARs a run needs beyond PySpark's own, resolved the standard way and cached.

- delta-spark, for the native Delta connector: `io.delta:delta-spark_<Spark major.minor>_2.13`
  at the version of the installed `delta-spark` pip package, named and requested exactly as
  delta-spark's own `configure_spark_with_delta_pip` does;
- further packages a run asks for: Spark's Kafka connector (`kafka_package`), Hadoop's S3A.

By default Spark resolves them itself (`spark.jars.packages`, Ivy, Spark's Ivy cache in the
home directory): the first run downloads them from Maven Central and the list of files Ivy
retrieved is remembered (`~/.cache/streamops/jars/`), so later runs hand Spark those files
(`spark.jars`): no network and no resolution report at every start.

Ivy resolves with streamops' own Ivy settings (`spark.jars.ivySettings`, written by
`ivy_settings`): Spark's default resolvers, in Spark's Ivy directory and cache, without
Spark's first one, `local-m2-cache`, which reads `~/.m2/repository` as if it were a
repository. An ordinary `mvn` build leaves POMs there without their JARs (a dependency's POM
read for its version, a plugin's dependencies); Ivy then takes such a module as found in
`~/.m2`, fails to download its JAR from there and stops the resolution, on the first run of a
new user. Leaving `~/.m2` out of the chain prevents that for every module and machine; the
other way, resolving again through Maven after such a failure, would need Maven on every
machine, a second resolution, and telling that failure from a network one without parsing
Ivy's messages. A user's own `spark.jars.ivySettings` (in `build_spark`'s settings,
`spark-defaults.conf` or `PYSPARK_SUBMIT_ARGS`) is used as it is, and Spark adds
`spark.jars.repositories` to either.

Two ways around Ivy, for machines where it cannot reach the registry (Ivy does not read
Maven's `settings.xml`, so a proxy or mirror named only there is unknown to it):

- `STREAMOPS_JARS_RESOLVER=maven`: resolve with Maven (`mvn dependency:copy-dependencies`, which
  honours `settings.xml`) into `~/.cache/streamops/jars/resolved/<packages>/`, and hand Spark the
  files (`spark.jars`); a later run reuses the directory without Maven. Maven's downloads go to a
  repository of their own beside it, not `~/.m2`, the user's own;
- `STREAMOPS_JARS_DIR=DIR`: use the JARs in DIR as they are (an air-gapped cluster: copy such a
  directory, or Spark's Ivy `jars/` directory, from a machine that could resolve them).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal
from xml.sax.saxutils import quoteattr

from streamops.pipeline.exceptions import PipelineConfigError
from streamops.pipeline.runtime.java_build import pyspark_jars

Resolver = Literal["ivy", "maven"]
RESOLVER_ENV = "STREAMOPS_JARS_RESOLVER"
JARS_DIR_ENV = "STREAMOPS_JARS_DIR"
SCALA = "2.13"
ARTIFACT_NAME = re.compile(r"^(.+?)-\d[\w.\-]*\.jar$")
MAVEN_CACHE = Path.home() / ".cache" / "streamops" / "jars" / "resolved"
IVY_JARS = Path.home() / ".ivy2.5.2" / "jars"
"""Where Spark 4's Ivy retrieves the JARs of `spark.jars.packages` (its default `spark.jars.ivy`)."""
IVY_SETTINGS = "spark.jars.ivySettings"
IVY_DIR = "spark.jars.ivy"
SPARK_IVY_DIR = "${user.home}/.ivy2.5.2"
"""Spark 4's default Ivy directory, as an Ivy variable: the JVM's home, which is not always `$HOME`."""
REPOSITORY_ENV = "DEFAULT_ARTIFACT_REPOSITORY"
"""Spark's own variable naming the repository that replaces Maven Central and spark-packages."""
CENTRAL = "https://repo1.maven.org/maven2/"
SPARK_PACKAGES = "https://repos.spark-packages.org/"
PROPERTY = re.compile(r"([^=:\s]+)\s*[=:\s]?\s*(.*)$")
"""A Java properties line: the key ends at the first `=`, `:` or blank."""
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


def jar_settings(packages: Sequence[str], conf: Mapping[str, str] | None = None) -> dict[str, str]:
    """Spark settings that put `packages` (Maven coordinates) on the driver's and executors'
    classpath: `spark.jars.packages` with streamops' Ivy settings (`ivy_settings`) for Ivy,
    else `spark.jars` with resolved files. `conf` is the run's other Spark settings."""
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
    return {
        "spark.jars.packages": ",".join(packages),
        "spark.jars.excludes": ",".join(PYSPARK_BUNDLED),
        **ivy_settings(conf or {}),
    }


def ivy_settings(conf: Mapping[str, str]) -> dict[str, str]:
    """`spark.jars.ivySettings` naming streamops' Ivy settings file, or nothing when the user
    set their own (in `conf`, `PYSPARK_SUBMIT_ARGS` or Spark's properties file).

    The file holds Spark's default resolvers but `local-m2-cache` (`local-ivy-cache`, Maven
    Central, spark-packages, under the same names, so an existing Ivy cache stays valid);
    Spark puts its Ivy directory and cache where it always does (`spark.jars.ivy`, else
    `~/.ivy2.5.2`) and adds `spark.jars.repositories` itself."""
    chosen = {**spark_settings_outside(), **conf}
    if chosen.get(IVY_SETTINGS):
        return {}
    ivy_dir = chosen.get(IVY_DIR) or SPARK_IVY_DIR
    text = _ivy_settings_xml(ivy_dir, os.environ.get(REPOSITORY_ENV))
    path = MAVEN_CACHE.parent / f"ivysettings-{hashlib.sha256(text.encode()).hexdigest()[:16]}.xml"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=".ivysettings-", delete=False) as partial:
            partial.write(text)
        os.replace(partial.name, path)  # whole or absent for a run starting beside this one
    return {IVY_SETTINGS: str(path)}


def spark_settings_outside() -> dict[str, str]:
    """The Spark settings a run gets besides streamops' own: Spark's properties file
    (`--properties-file` in `PYSPARK_SUBMIT_ARGS`, else `spark-defaults.conf` in
    `SPARK_CONF_DIR` or Spark's home), then `--conf` in `PYSPARK_SUBMIT_ARGS`."""
    arguments = shlex.split(os.environ.get("PYSPARK_SUBMIT_ARGS", ""))
    following = dict(zip(arguments, arguments[1:]))
    properties = Path(following["--properties-file"]) if "--properties-file" in following else _spark_defaults()
    found = _properties(properties) if properties is not None and properties.is_file() else {}
    for flag, value in zip(arguments, arguments[1:]):
        if flag == "--conf" and "=" in value:
            key, _, setting = value.partition("=")
            found[key.strip()] = setting.strip()
    return found


def _spark_defaults() -> Path | None:
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if conf_dir:
        return Path(conf_dir) / "spark-defaults.conf"
    spark_home = os.environ.get("SPARK_HOME")
    if not spark_home:
        from pyspark.find_spark_home import _find_spark_home

        spark_home = _find_spark_home()
    return Path(spark_home) / "conf" / "spark-defaults.conf" if spark_home else None


def _properties(path: Path) -> dict[str, str]:
    """A Java properties file's `key value` / `key=value` / `key: value` lines."""
    found = {}
    for line in path.read_text(errors="replace").splitlines():
        match = PROPERTY.match(line.strip())
        if match and not line.strip().startswith(("#", "!")):
            found[match.group(1)] = match.group(2).strip()
    return found


def _ivy_settings_xml(ivy_dir: str, repository: str | None) -> str:
    local = f"{ivy_dir}/local/[organisation]/[module]/[revision]"
    return (
        "<ivysettings>\n"
        '  <property name="ivy.maven.lookup.sources" value="false"/>\n'
        '  <property name="ivy.maven.lookup.javadoc" value="false"/>\n'
        '  <settings defaultResolver="spark-list"/>\n'
        "  <resolvers>\n"
        '    <chain name="spark-list">\n'
        '      <filesystem name="local-ivy-cache" local="true">\n'
        f"        <ivy pattern={quoteattr(f'{local}/ivys/ivy.xml')}/>\n"
        f"        <artifact pattern={quoteattr(f'{local}/[type]s/[artifact](-[classifier]).[ext]')}/>\n"
        "      </filesystem>\n"
        f'      <ibiblio name="central" m2compatible="true" usepoms="true" root={quoteattr(repository or CENTRAL)}/>\n'
        '      <ibiblio name="spark-packages" m2compatible="true" usepoms="true" '
        f"root={quoteattr(repository or SPARK_PACKAGES)}/>\n"
        "    </chain>\n"
        "  </resolvers>\n"
        "</ivysettings>\n"
    )


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
        bundled = _artifacts(pyspark_jars().glob("*.jar"))
        for jar in staging.glob("*.jar"):
            if _artifact(jar) in bundled:  # Spark's own copy is on the classpath first
                jar.unlink()
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(staging, target)
    (target / ".complete").write_text("\n".join(packages) + "\n")
    return _jars_in(target)


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
