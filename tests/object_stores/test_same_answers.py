"""The tools give the same answers on a lake in S3 (moto) or Azure (Azurite) as on the local
copy the pipeline wrote: inspect, correlate, doctor (healthy and with injected faults), status."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from built_lake import FAILING_STREAM

from streamops.checkpoint_tools.doctor import diagnose_lake
from streamops.checkpoint_tools.doctor_context import DoctorSettings
from streamops.cli import main
from streamops.core.lake_layout import LakeLayout
from streamops.monitor.fleet_status import fleet_status

pytestmark = pytest.mark.services

MTIME_KEYS = frozenset({"committed_ms"})
"""When a checkpoint file was written is its object's time: an upload has the upload's time."""


def cli_json(capsys, *argv: str) -> tuple[int, Any]:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert err == "", err
    return code, json.loads(out)


def same_shape(payload: Any, local_root: str, remote_root: str) -> Any:
    """`payload` with the local lake's paths spelled as the remote ones and file times dropped."""
    text = json.dumps(payload, sort_keys=True).replace(local_root, remote_root)
    return _without(json.loads(text))


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """Where two JSON values first differ, for a readable failure."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            found = first_difference(a.get(key), b.get(key), f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return next((d for i, (x, y) in enumerate(zip(a, b)) if (d := first_difference(x, y, f"{path}[{i}]"))), None)
    return None if a == b else f"{path}: {a!r} != {b!r}"


def _without(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without(v) for k, v in value.items() if k not in MTIME_KEYS}
    if isinstance(value, list):
        return [_without(v) for v in value]
    return value


def test_inspect_correlate_doctor_and_status_read_the_remote_lake_like_the_local_one(
    store, built_lake, uploaded_lakes, capsys
):
    local, remote = built_lake.lake, LakeLayout.at(uploaded_lakes[store.name])
    local_root, remote_root = str(local.root), str(remote.root)
    streams = [p.name for p in local.checkpoint_dirs()]
    assert [p.name for p in remote.checkpoint_dirs()] == streams and len(streams) >= 4
    assert [str(t).replace(remote_root, local_root) for t in remote.table_dirs()] == [
        str(t) for t in local.table_dirs()
    ]
    for stream in streams:
        for command in ("inspect", "correlate"):
            here = cli_json(capsys, "checkpoint", command, str(local.checkpoint(stream)), *_lake(command, local_root))
            code, there = cli_json(
                capsys, "checkpoint", command, str(remote.checkpoint(stream)), *_lake(command, remote_root)
            )
            expected = same_shape(here[1], local_root, remote_root)
            assert (code, _without(there)) == (here[0], expected), (
                stream,
                command,
                first_difference(_without(there), expected),
            )
    _, doctor_here = same_doctor(capsys, local_root, remote_root)
    findings = {(d["stream"], f["code"]) for d in doctor_here for f in d["findings"]}
    assert (FAILING_STREAM, "uncommitted_batch") in findings, "the failed query's batch stays uncommitted"
    now = 1.8e9
    statuses_here = [row.to_json() for row in fleet_status(local, now=now)]
    assert [row.to_json() for row in fleet_status(remote, now=now)] == statuses_here
    assert {row["status"] for row in statuses_here} >= {"failed"}


def same_doctor(capsys, local_root: str, remote_root: str) -> tuple[int, list[dict]]:
    """The doctor's exit code (the command) and findings (judged at one fixed time, since ages
    and "probably still running" depend on it) agree on both copies; returns the local ones."""
    code, _ = cli_json(capsys, "checkpoint", "doctor", "--lake", local_root)
    remote_code, _ = cli_json(capsys, "checkpoint", "doctor", "--lake", remote_root)
    settings = DoctorSettings(now=time.time())
    here = [d.to_json() for d in diagnose_lake(LakeLayout.at(local_root), settings)]
    there = _without([d.to_json() for d in diagnose_lake(LakeLayout.at(remote_root), settings)])
    expected = same_shape(here, local_root, remote_root)
    assert (remote_code, there) == (code, expected), first_difference(there, expected)
    return code, here


def _lake(command: str, root: str) -> list[str]:
    return ["--lake", root] if command == "correlate" else []


def test_status_command_on_a_remote_lake(store, uploaded_lakes, built_lake, capsys):
    code, status = cli_json(capsys, "status", "--lake", uploaded_lakes[store.name])
    assert code == 0 and status["lake"] == uploaded_lakes[store.name]
    local = [row["stream"] for row in json.loads(_status_json(capsys, str(built_lake.lake.root)))["streams"]]
    assert [row["stream"] for row in status["streams"]] == local


def _status_json(capsys, lake: str) -> str:
    assert main(["status", "--lake", lake, "--json"]) == 0
    return capsys.readouterr().out


def test_injected_faults_are_found_the_same_way(store, built_lake, tmp_path, capsys):
    """A deleted commit, a truncated offsets file and a leftover temporary, in a copy of the
    lake that is then uploaded: the doctor reports the same findings on both copies."""
    local = LakeLayout.at(shutil.copytree(Path(built_lake.lake.root), tmp_path / "lake"))
    bronze = Path(local.checkpoint("bronze"))
    latest = max(int(p.name) for p in (bronze / "commits").iterdir() if p.name.isdigit())
    (bronze / "commits" / str(latest)).unlink()
    (bronze / "commits" / f".{latest}.crc").unlink()
    silver = Path(local.checkpoint(next(p.name for p in local.checkpoint_dirs() if p.name.startswith("silver_"))))
    offsets = sorted(int(p.name) for p in (silver / "offsets").iterdir() if p.name.isdigit())
    truncated = silver / "offsets" / str(offsets[-1])
    truncated.write_bytes(truncated.read_bytes()[:20])
    (silver / "offsets" / f".{offsets[-1] + 1}.0a1b2c3d.tmp").write_text("v1\n")
    remote_root = store.upload(tmp_path / "lake")
    _, here = same_doctor(capsys, str(local.root), remote_root)
    codes = {(d["stream"], f["code"]) for d in here for f in d["findings"]}
    assert ("bronze", "uncommitted_batch") in codes
    assert (silver.name, "corrupt_log_file") in codes and (silver.name, "stale_temp_file") in codes
