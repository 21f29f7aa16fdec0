"""What `pip install streamops` gives a user: one import name, the Spark-free tools without
PySpark, and one line naming the extra when a part needs more.

The wheel is built from this checkout and installed into a new virtualenv with no extras (the
versions come from constraints.txt, as CI's own install does), then used the way a laptop user
would: the doctor and inspect on checkpoints, status on a lake's progress log.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from streamops.monitor.progress_event import parse_event
from streamops.monitor.progress_log import ProgressLog
from streamops.monitor.progress_record import row_of

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "checkpoint_tools" / "fixtures"
MONITOR_FIXTURES = ROOT / "tests" / "monitor" / "fixtures"
SRC = ROOT / "src"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(ROOT)],
        check=True,
        timeout=600,
    )
    (found,) = out.glob("streamops-*.whl")
    return found


@pytest.fixture(scope="module")
def base_install(wheel, tmp_path_factory) -> Path:
    """A new virtualenv holding the wheel with no extras; returns its bin directory."""
    venv = tmp_path_factory.mktemp("venv-base")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "-c", str(ROOT / "constraints.txt"), str(wheel)], check=True, timeout=900)
    return venv / "bin"


def run(bin_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "PYSPARK", "SPARK"))}
    return subprocess.run(
        [str(bin_dir / args[0]), *args[1:]], capture_output=True, text=True, timeout=300, cwd=cwd, env=env
    )


def test_the_wheel_installs_one_import_name_and_every_module(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    top = {name.split("/", 1)[0] for name in names if ".dist-info/" not in name}
    assert top == {"streamops"}
    expected = {
        "/".join(path.relative_to(SRC).parts)
        for path in (SRC / "streamops").rglob("*.py")
        if "__pycache__" not in path.parts
    }
    assert expected <= set(names), sorted(expected - set(names))
    assert {"streamops/pipeline/runtime/log4j2.properties", "streamops/pipeline/bronze/jvm/FastLineScan.java"} <= set(
        names
    )
    assert any(name.startswith("streamops/dashboards/generated/dashboards/") for name in names)


def test_the_spark_free_tools_work_without_pyspark(base_install, tmp_path):
    python = base_install / "python"
    no_spark = subprocess.run([str(python), "-c", "import pyspark"], capture_output=True, text=True, timeout=60)
    assert no_spark.returncode != 0 and "No module named 'pyspark'" in no_spark.stderr

    checkpoint = shutil.copytree(FIXTURES / "kafka_spark35", tmp_path / "kafka")
    inspected = run(base_install, "streamops", "checkpoint", "inspect", str(checkpoint), "--json", cwd=tmp_path)
    assert inspected.returncode == 0, inspected.stderr
    assert [batch["batch_id"] for batch in json.loads(inspected.stdout)["batches"]] == [0, 1, 2]

    doctor = run(base_install, "streamops", "checkpoint", "doctor", str(checkpoint), "--json", cwd=tmp_path)
    assert doctor.returncode in (0, 1), doctor.stderr
    assert json.loads(doctor.stdout)["checkpoints"][0]["checkpoint"].endswith("kafka")

    lake = tmp_path / "lake"
    progress = parse_event("progress", (MONITOR_FIXTURES / "progress_rate.json").read_text(), 0.0)
    ProgressLog(lake / "_system" / "query_progress").append([row_of(progress, "rates", time.time())])
    status = run(base_install, "streamops", "status", "--lake", str(lake), "--json", cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert [stream["stream"] for stream in json.loads(status.stdout)["streams"]] == ["rates"]


@pytest.mark.parametrize(
    ("command", "extra"),
    [
        (["run", "--lake", "lake", "--landing", "landing", "--until-idle"], "pipeline"),
        (["demo", "--duration", "1"], "pipeline"),
        (["dashboards", "build", "--out", "out"], "dashboards"),
        (["console", "--lake", "lake"], "console"),
    ],
)
def test_a_command_whose_extra_is_missing_names_it_in_one_line(base_install, tmp_path, command, extra):
    (tmp_path / "lake").mkdir()
    done = run(base_install, "streamops", *command, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and f"pip install 'streamops[{extra}]'" in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("module", "says"),
    [
        ("streamops.pipeline.run.spark_session", "pip install 'streamops[pipeline]'"),
        ("streamops.pipeline.delta_connector.delta_source", "pip install 'streamops[pipeline]'"),
        ("streamops.monitor.exporter", "pip install 'streamops[monitor]'"),
        ("streamops.dashboards.console", "pip install 'streamops[console]'"),
        ("streamops.dashboards.build", "pip install 'streamops[dashboards]'"),
    ],
)
def test_importing_a_part_whose_extra_is_missing_says_which_extra(base_install, tmp_path, module, says):
    code = (
        f"from streamops.core.extras import MissingExtraError\n"
        f"try:\n    import {module}\nexcept ImportError as error:\n"
        f"    assert isinstance(error, MissingExtraError)\n    print(error)\n"
    )
    done = run(base_install, "python", "-c", code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith(says) and done.stdout.count("\n") == 1


def test_the_monitor_says_pyspark_is_missing_in_one_line(base_install, tmp_path):
    code = "from streamops.monitor import StreamMonitor"
    done = run(base_install, "python", "-c", code, cwd=tmp_path)
    assert done.returncode == 1
    assert "MissingExtraError: streamops.monitor.stream_monitor needs prometheus_client" in done.stderr
