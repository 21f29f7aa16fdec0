import subprocess
import sys

import pytest

from streamops.pipeline.exceptions import JavaNotFoundError
from streamops.pipeline.spark_session import ensure_java


def test_missing_java_is_a_one_line_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(JavaNotFoundError, match="Spark needs Java 17") as raised:
        ensure_java()
    assert "\n" not in str(raised.value)


def test_cli_reports_missing_java_in_one_line_without_a_traceback(tmp_path):
    landing = tmp_path / "landing"
    landing.mkdir()
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "streamops",
            "run",
            "--lake",
            str(tmp_path / "lake"),
            "--landing",
            str(landing),
            "--until-idle",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "streamops: error: Spark needs Java 17 and `java` was not found: install it "
        "(e.g. `apt-get install -y openjdk-17-jre-headless`) or set JAVA_HOME"
    ]


def test_streamops_java_options_come_after_arrows_and_an_explicit_value_wins(monkeypatch):
    from streamops.pipeline.spark_session import ARROW_JAVA_OPTIONS, JAVA_OPTIONS_ENV, jvm_options

    monkeypatch.setenv(JAVA_OPTIONS_ENV, "-XX:TieredStopAtLevel=1 -Xss4m")
    assert jvm_options() == f"{ARROW_JAVA_OPTIONS} -XX:TieredStopAtLevel=1 -Xss4m"
    assert jvm_options("") == ARROW_JAVA_OPTIONS
    monkeypatch.delenv(JAVA_OPTIONS_ENV)
    assert jvm_options() == ARROW_JAVA_OPTIONS


def test_the_drivers_jvm_runs_with_the_options_it_was_given(spark):
    from streamops.pipeline.spark_session import ARROW_JAVA_OPTIONS

    jvm = spark.sparkContext._jvm
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert ARROW_JAVA_OPTIONS in arguments
    assert "-XX:TieredStopAtLevel=1" not in arguments  # the test session's JVM keeps the full JIT
