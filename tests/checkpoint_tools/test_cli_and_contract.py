"""The `streamops checkpoint` commands end to end and the no-Spark rule (the docs contract is tests/test_docs.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from streamops.cli import main
from streamops.core.checkpoint_format.metadata_log import write_log_file

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["checkpoint", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def tables(world) -> list[str]:
    args = ["--source-table", str(world.source)]
    for sink in world.sinks:
        args += ["--sink-table", str(sink)]
    return args


def test_doctor_exit_codes_and_json(capsys, delta_world):
    code, out, _ = run(capsys, "doctor", delta_world.checkpoint, *tables(delta_world), "--json")
    report = json.loads(out)
    assert code == 0 and report["exit_code"] == 0
    assert report["checkpoints"][0]["findings"] == [] and report["checkpoints"][0]["worst"] is None

    path = delta_world.checkpoint / "offsets" / "6"
    write_log_file(
        path, path.read_bytes().replace(b'"spark.sql.shuffle.partitions":"2"', b'"spark.sql.shuffle.partitions":"9"')
    )
    code, out, _ = run(capsys, "doctor", delta_world.checkpoint, *tables(delta_world), "--json")
    assert code == 1 and json.loads(out)["checkpoints"][0]["findings"][0]["code"] == "conf_changed"

    (delta_world.checkpoint / "commits" / "6").write_bytes(b"")
    code, out, _ = run(capsys, "doctor", "--lake", delta_world.lake.root)
    assert code == 2
    assert "ERROR corrupt_log_file" in out and "fix:" in out


def test_doctor_as_a_process_exits_non_zero_for_scripts(tmp_path):
    ckpt = tmp_path / "kafka"
    shutil.copytree(FIXTURES / "kafka_spark35", ckpt)
    (ckpt / "offsets" / "2").write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "streamops", "checkpoint", "doctor", str(ckpt), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert json.loads(done.stdout)["checkpoints"][0]["findings"][0]["code"] == "corrupt_log_file"


def test_inspect_and_correlate(capsys, delta_world, file_world):
    code, out, _ = run(capsys, "inspect", delta_world.checkpoint, "--json")
    assert code == 0 and json.loads(out)["query_id"] == delta_world.query_id
    code, out, _ = run(capsys, "inspect", file_world.checkpoint, "--last", "3")
    assert code == 0 and "planned (UTC)" in out and "file_source" in out

    code, out, _ = run(capsys, "correlate", delta_world.checkpoint, "--lake", delta_world.lake.root, "--json")
    batches = json.loads(out)["batches"]
    assert code == 0 and len(batches) == delta_world.batches
    assert batches[0]["source"]["files"][0]["rows"] == 5 and len(batches[0]["sink_commits"]) == 2
    code, out, _ = run(capsys, "correlate", file_world.checkpoint)
    assert code == 0 and "events-000.json" in out


def test_rewind_needs_yes(capsys, delta_world):
    before = sorted(p.name for p in (delta_world.checkpoint / "offsets").iterdir())
    code, out, _ = run(capsys, "rewind", delta_world.checkpoint, "--to-batch", "5", *tables(delta_world), "--json")
    assert code == 0 and json.loads(out)["applied"] is False
    assert sorted(p.name for p in (delta_world.checkpoint / "offsets").iterdir()) == before
    code, out, _ = run(capsys, "rewind", delta_world.checkpoint, "--to-batch", "5", *tables(delta_world), "--yes")
    assert code == 0 and "backup at" in out
    assert not (delta_world.checkpoint / "offsets" / "5").exists()


def test_user_errors_are_one_line(capsys, tmp_path, delta_world):
    code, _, err = run(capsys, "inspect", tmp_path / "missing")
    assert code == 2 and err.count("\n") == 1 and err.startswith("streamops: error: no checkpoint at")
    code, _, err = run(capsys, "rewind", delta_world.checkpoint, "--to-batch", "99")
    assert code == 2 and "between 0 and 6" in err and err.count("\n") == 1
    code, _, err = run(capsys, "doctor")
    assert code == 2 and "--lake" in err


def test_doctor_on_a_missing_or_empty_lake_fails_instead_of_reporting_health(capsys, tmp_path):
    code, out, err = run(capsys, "doctor", "--lake", tmp_path / "no_such_lake", "--json")
    assert code == 2 and out == "" and err.count("\n") == 1 and "no lake at" in err
    (tmp_path / "empty_lake").mkdir()
    code, out, err = run(capsys, "doctor", "--lake", tmp_path / "empty_lake")
    assert code == 2 and err.count("\n") == 1 and "has no checkpoints" in err


@pytest.mark.parametrize("command", ["inspect", "correlate", "doctor", "rewind"])
def test_every_command_help_has_an_example(capsys, command):
    with pytest.raises(SystemExit):
        main(["checkpoint", command, "--help"])
    assert "streamops checkpoint " + command in capsys.readouterr().out


def test_package_never_imports_spark(tmp_path, delta_world):
    """Import every module and run every command's code path, in a fresh interpreter."""
    script = f"""
import argparse, importlib, pkgutil, sys, shutil
import streamops.checkpoint_tools
for module in pkgutil.iter_modules(streamops.checkpoint_tools.__path__):
    importlib.import_module("streamops.checkpoint_tools." + module.name)
from streamops.cli import checkpoint as cli
parser = argparse.ArgumentParser()
cli.register(parser.add_subparsers())
ckpt = shutil.copytree({str(FIXTURES / "rate_spark24")!r}, {str(tmp_path / "rate")!r})
delta = ["--lake", {str(delta_world.lake.root)!r}]
for argv in (["inspect", ckpt], ["correlate", ckpt], ["doctor", ckpt], ["rewind", ckpt, "--to-batch", "1", "--yes"],
             ["correlate", {str(delta_world.checkpoint)!r}, *delta], ["doctor", *delta],
             ["rewind", {str(delta_world.checkpoint)!r}, "--to-batch", "3", *delta]):
    args = parser.parse_args(["checkpoint", *argv, "--json"])
    args.handler(args)
leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("pyspark", "py4j"))
assert not leaked, leaked
print("clean")
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("clean")
