"""What `pip install streamops` gives a user: one import name, the Spark-free tools without
PySpark, and one line naming the extra when a part needs more.

The wheel is built from this checkout and installed into a new virtualenv with no extras (the
versions come from constraints.txt, as CI's own install does), then used the way a laptop user
would: the doctor and inspect on checkpoints, status on a lake's progress log, the generator,
a column promotion; and every public name of every package is asked for, from the repository
root (whose src/ layout must not shadow the installed package).
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
from promotion_lake import lake_with_a_rescued_score
from public_names import extra_of

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


SPARK_FREE_NAMES = {
    "streamops.checkpoint_tools:Diagnosis",
    "streamops.checkpoint_tools:diagnose",
    "streamops.monitor:fleet_status",
    "streamops.monitor:ProgressLog",
    "streamops.pipeline:Expectation",
    "streamops.pipeline:ExpectationSet",
    "streamops.pipeline:GeneratorSettings",
    "streamops.pipeline:generate",
    "streamops.pipeline:load_expectations",
    "streamops.pipeline:plan_promotion",
    "streamops.pipeline:promote_column",
    "streamops.pipeline:summarize_lake",
}


def test_every_public_name_imports_or_names_its_extra_from_the_repository_root(base_install):
    """Run from the checkout's root, as a developer would: the installed wheel answers, and each
    public name either resolves or fails with `MissingExtraError` naming its package's extra."""
    probe = (ROOT / "tests" / "public_names.py").read_text()
    done = run(base_install, "python", "-c", probe, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert Path(report["file"]).is_relative_to(base_install.parent), report["file"]

    def wrong(where: str, outcome) -> bool:
        if outcome in ("ok", "no __all__") or outcome.get("outcome") == "ok":
            return False
        extra = extra_of(where.split(":")[0])
        return not (
            outcome["outcome"] == "MissingExtraError"
            and extra is not None
            and outcome["message"].endswith(f"pip install 'streamops[{extra}]'")
            and "\n" not in outcome["message"]
        )

    assert {"streamops", "streamops.checkpoint_tools", "streamops.pipeline"} <= set(report["packages"])
    assert {p: o for p, o in report["packages"].items() if wrong(p, o)} == {}
    assert {n: o for n, o in report["names"].items() if wrong(n, o)} == {}
    resolved = {name for name, outcome in report["names"].items() if outcome["outcome"] == "ok"}
    assert SPARK_FREE_NAMES <= resolved
    assert {n for n in report["names"] if n.startswith(("streamops:", "streamops.checkpoint_tools:"))} <= resolved


def test_generate_and_column_promotion_run_without_extras(base_install, tmp_path):
    generated = run(
        base_install, "streamops", "generate", "--out", "landing", "--events", "300", "--event-types", "5", "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert generated.returncode == 0, generated.stderr
    assert json.loads(generated.stdout)["lines_total"] == 300
    assert list((tmp_path / "landing").glob("*.ndjson"))

    lake_with_a_rescued_score(tmp_path / "lake")
    promote = ["streamops", "lake", "promote", "--lake", "lake", "--event-type", "match_end", "--field", "score"]
    planned = run(base_install, *promote, "--to", "double", "--json", cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    assert (plan["applied"], plan["old_type"], plan["column"], plan["rows"]) == (False, "long", "score", 0)
    promoted = run(base_install, *promote, "--to", "double", "--yes", "--json", cwd=tmp_path)
    assert promoted.returncode == 0, promoted.stderr
    result = json.loads(promoted.stdout)
    assert (result["old_type"], result["new_type"], result["rows"], result["rescued_moved"]) == ("long", "double", 2, 1)

    code = (
        "from streamops.pipeline.registry.schema_compat import evolve\n"
        "field = lambda kind: {'type': 'struct', 'fields': [{'name': 'score', 'type': kind, 'nullable': True, 'metadata': {}}]}\n"
        "print([change.new_type for change in evolve(field('long'), field('double')).widened])\n"
    )
    compat = run(base_install, "python", "-c", code, cwd=tmp_path)
    assert compat.returncode == 0, compat.stderr
    assert compat.stdout.strip() == "['double']"
