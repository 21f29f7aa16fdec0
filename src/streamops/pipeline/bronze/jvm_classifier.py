"""The bronze classifier inside Spark's JVM: built from source with the JDK's `javac` against
PySpark's own jars (no Maven), cached by source hash, and registered as a SQL function.

Classifying in the JVM keeps every landing line out of Python workers, which is most of the
cost of bronze (see BENCHMARKS.md). Where no JDK is installed the pipeline uses the Python
classifier (pipeline/bronze/bronze_classifier.py), whose results are the reference the JVM one is
tested against.

The same jar carries the session's other JVM pieces: the landing files' line reader, and the
local-disk writers of Delta logs and streaming checkpoint files (`LocalFileLogStore`,
`LocalFileCheckpointManager`), which `build_spark` configures when the jar holds them.
"""

from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from streamops.pipeline.runtime.java_build import cached_jar, compiled, javac, pyspark_jars, write_jar

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SOURCES = tuple(sorted(Path(__file__).with_name("jvm").glob("*.java")))
TEMPLATES = tuple(sorted(Path(__file__).with_name("jvm").glob("*.java.in")))
"""Sources naming a Spark class whose package moved between Spark versions (@CHECKPOINTING_PACKAGE@)."""
CHECKPOINTING_PACKAGES = (
    "org.apache.spark.sql.execution.streaming.checkpointing",
    "org.apache.spark.sql.execution.streaming",
)
"""Where Spark keeps its checkpoint file managers: Spark 4.1 and later, then Spark 3.5 and 4.0."""
API_STUBS = Path(__file__).with_name("jvm_api_stubs")
"""Compile-time stand-ins for delta-storage's classes, which come with the session's delta-spark
JARs rather than PySpark's: compiled against, never put in the jar (`-implicit:none`)."""
LOCAL_FILE_LOG_STORE = "streamops.jvm.LocalFileLogStore"
"""delta-spark's log writer for `file:` tables (jvm/LocalFileLogStore.java), built into the same jar."""
LOG_STORE_SETTING = "spark.delta.logStore.file.impl"
LOCAL_FILE_CHECKPOINT_MANAGER = "streamops.jvm.LocalFileCheckpointManager"
"""Spark's checkpoint file manager with local files written through java.nio (jvm/LocalFileCheckpointManager.java.in)."""
CHECKPOINT_MANAGER_SETTING = "spark.sql.streaming.checkpointFileManagerClass"
CLASS_NAME = "streamops.jvm.BronzeLineClassifier"
LANDING_LINES = "streamops.jvm.LandingLines"
"""The landing files' line reader (bronze/landing_input.py), built into the same jar."""
LANDING_LINES_SCHEMA = "value binary, line_offset bigint, line_bytes bigint"
"""Its rows, which a streaming file source must be given."""
FUNCTION_NAME = "streamops_classify_line"
RETURN_TYPE = (
    "struct<event_type:string,event_id:string,event_time_text:string,schema_hash:string,"
    "quarantine_reason:string,quarantine_detail:string>"
)


def classifier_jar() -> Path | None:
    """The compiled jar (classifier, line reader, local-disk writers), built on first use; None
    when no JDK compiler is available."""
    compiler = javac()
    if compiler is None:
        return None
    import pyspark

    stubs = sorted(API_STUBS.rglob("*.java"))
    sources = b"".join(source.read_bytes() for source in (*SOURCES, *TEMPLATES, *stubs))
    jar = cached_jar("streamops-classifier", sources + pyspark.__version__.encode())
    if jar.exists():
        return jar
    classpath = [f"{pyspark_jars()}/*"]
    with tempfile.TemporaryDirectory(prefix="streamops-javac-") as build:
        rendered = _rendered_templates(Path(build) / "src")
        # The templated sources name Spark classes that a Spark version may lack or shape
        # otherwise: without them the jar still holds the classifier and the line reader, and
        # the session keeps Spark's own checkpoint file manager.
        if not compiled(compiler, [*SOURCES, *rendered], build, classpath, API_STUBS) and not compiled(
            compiler, SOURCES, build, classpath, API_STUBS
        ):
            return None
        write_jar(build, jar)
    return jar


def jar_has_class(jar: Path, name: str) -> bool:
    with zipfile.ZipFile(jar) as opened:
        return f"{name.replace('.', '/')}.class" in opened.namelist()


def checkpointing_package() -> str:
    """The package of Spark's checkpoint file managers in the installed PySpark."""
    names: set[str] = set()
    for jar in pyspark_jars().glob("spark-sql_*.jar"):
        with zipfile.ZipFile(jar) as opened:
            names.update(opened.namelist())
    manager = "FileContextBasedCheckpointFileManager.class"
    return next(
        (p for p in CHECKPOINTING_PACKAGES if f"{p.replace('.', '/')}/{manager}" in names), CHECKPOINTING_PACKAGES[0]
    )


def _rendered_templates(into: Path) -> list[Path]:
    """The templates as Java sources for the installed PySpark's package names."""
    package = checkpointing_package()
    into.mkdir(parents=True)
    rendered = []
    for template in TEMPLATES:
        source = into / template.name.removesuffix(".in")
        source.write_text(template.read_text().replace("@CHECKPOINTING_PACKAGE@", package))
        rendered.append(source)
    return rendered


def register(spark: SparkSession) -> bool:
    """Register the SQL function if the session has the jar; False means use the Python one."""
    try:
        spark.udf.registerJavaFunction(FUNCTION_NAME, CLASS_NAME, RETURN_TYPE)
    except Exception:  # noqa: BLE001 - the class is missing when the jar could not be built
        return False
    return True


def has_landing_lines(spark: SparkSession) -> bool:
    """Whether the session's JVM has the landing line reader (the jar was built and given to it)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    return bool(jvm.org.apache.spark.util.Utils.classIsLoadable(LANDING_LINES))
