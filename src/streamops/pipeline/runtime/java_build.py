"""Java sources of streamops' JVM pieces, compiled with the JDK's `javac` against the jars they
call (PySpark's own, and for some the session's delta-spark), no Maven: a jar per source hash
and classpath, built once into the user's cache. Where no JDK compiler is installed, or a source
does not compile against the jars a user runs, the caller keeps its Python path.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path


def pyspark_jars() -> Path:
    """The installed PySpark's jars: Spark's own classpath."""
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def javac() -> str | None:
    """The JDK's compiler: `$JAVA_HOME`'s first (the JDK Spark runs on), else the PATH's."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "javac").exists():
        return str(Path(java_home) / "bin" / "javac")
    return shutil.which("javac")


def jar_cache_dir() -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return root / "streamops" / "jars"


def cached_jar(name: str, key: bytes) -> Path:
    """Where the jar `name` built from `key` (its sources and classpath, as bytes) is kept."""
    return jar_cache_dir() / f"{name}-{hashlib.sha256(key).hexdigest()[:16]}.jar"


def compiled(
    compiler: str, sources: Sequence[Path], into: str, classpath: Sequence[str], sourcepath: Path | None = None
) -> bool:
    """Whether `sources` compiled into `into` against `classpath` (entries as javac takes them,
    `dir/*` included). `sourcepath` holds compile-time stand-ins, never put in the jar."""
    stand_ins = ["-sourcepath", str(sourcepath)] if sourcepath is not None else []
    result = subprocess.run(
        [compiler, "-nowarn", "-implicit:none", *stand_ins, "-d", into, "-cp", os.pathsep.join(classpath)]
        + [str(source) for source in sources],
        capture_output=True,
        text=True,
    )
    return result.returncode == 0


def write_jar(classes: str, jar: Path) -> None:
    """The classes compiled into `classes` as `jar`, which appears whole or not at all."""
    jar.parent.mkdir(parents=True, exist_ok=True)
    partial = jar.with_suffix(f".{os.getpid()}.tmp")
    with zipfile.ZipFile(partial, "w") as archive:
        for path in sorted(Path(classes).rglob("*.class")):
            archive.write(path, path.relative_to(classes).as_posix())
    partial.replace(jar)


def build_jar(name: str, sources: Sequence[Path], classpath: Sequence[str]) -> Path | None:
    """`sources` compiled against `classpath` into the cached jar `name`; None when no JDK
    compiler is installed or they do not compile against it."""
    compiler = javac()
    if compiler is None:
        return None
    key = b"".join(source.read_bytes() for source in sources) + "\n".join(classpath).encode()
    jar = cached_jar(name, key)
    if jar.exists():
        return jar
    with tempfile.TemporaryDirectory(prefix="streamops-javac-") as build:
        if not compiled(compiler, sources, build, classpath):
            return None
        write_jar(build, jar)
    return jar
