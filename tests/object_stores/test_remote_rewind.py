"""Rewind on S3 and Azure: the same result as on the local copy, a backup under the same store,
and an interruption before any of its deletes leaves a checkpoint Spark can restart from and
that running the same rewind again finishes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from streamops.checkpoint_tools.rewind import BACKUP_MANIFEST, apply_rewind, plan_rewind
from streamops.cli import main
from streamops.core.checkpoint_format.reader import read_checkpoint
from streamops.core.storage.location import Location

pytestmark = pytest.mark.services

LOG_DIRS = ("offsets", "commits", "sources")


class Interrupted(BaseException):
    """The process dying between two requests (BaseException: nothing may catch it)."""


def log_files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for name in LOG_DIRS
        if (root / name).is_dir()
        for p in sorted((root / name).rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def bronze(built_lake, tmp_path) -> tuple[Path, int]:
    """A copy of the pipeline's bronze checkpoint (a file source) and the batch to rewind to."""
    local = shutil.copytree(Path(built_lake.lake.checkpoint("bronze")), tmp_path / "original" / "bronze")
    latest = read_checkpoint(local).latest_planned
    assert latest is not None and latest >= 2, "the session lake's bronze stream ran at least 3 batches"
    return local, latest - 1


def rewound_locally(original: Path, to_batch: int, tmp_path: Path) -> tuple[dict[str, bytes], int]:
    """The files of the checkpoint after an uninterrupted local rewind, and how many deletes it
    makes (each removed log file, then its checksum sidecar)."""
    copy = shutil.copytree(original, tmp_path / "expected" / "bronze")
    plan = plan_rewind(copy, to_batch)
    assert any(f.entries_released for f in plan.file_sources), "the rewind must cut a file-source log"
    result = apply_rewind(plan)
    return log_files(copy), 2 * sum(1 for a in result.actions if a.startswith("removed"))


def test_rewind_on_the_store_matches_the_local_rewind_and_backs_up_there(store, bronze, tmp_path, capsys):
    original, to_batch = bronze
    expected, _ = rewound_locally(original, to_batch, tmp_path)
    prefix = store.upload(original.parent)
    checkpoint = f"{prefix}/bronze"
    assert main(["checkpoint", "rewind", checkpoint, "--to-batch", str(to_batch), "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["applied"] is False and log_files(store.download(checkpoint, tmp_path / "unchanged")) == log_files(
        original
    )
    assert main(["checkpoint", "rewind", checkpoint, "--to-batch", str(to_batch), "--yes", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["applied"] and result["backup"].startswith(f"{prefix}/.bronze.backup-")
    assert log_files(store.download(checkpoint, tmp_path / "after")) == expected
    backup = store.download(result["backup"], tmp_path / "backup")
    assert log_files(backup) == log_files(original)
    assert json.loads((backup / BACKUP_MANIFEST).read_text())["to_batch"] == to_batch


def test_an_interrupted_rewind_leaves_a_restartable_checkpoint_and_finishes_when_run_again(
    store, bronze, tmp_path, monkeypatch
):
    original, to_batch = bronze
    expected, deletes = rewound_locally(original, to_batch, tmp_path)
    real_delete = Location.delete
    for survive in range(deletes):
        checkpoint = Location.of(f"{store.upload(original.parent)}/bronze")
        calls = {"n": 0}

        def dying_delete(location: Location, calls=calls, survive=survive) -> None:
            if calls["n"] == survive:
                raise Interrupted
            calls["n"] += 1
            real_delete(location)

        monkeypatch.setattr(Location, "delete", dying_delete)
        with pytest.raises(Interrupted):
            apply_rewind(plan_rewind(checkpoint, to_batch))
        monkeypatch.setattr(Location, "delete", real_delete)
        half = read_checkpoint(checkpoint)
        assert half.latest_committed in (half.latest_planned, half.latest_planned - 1), survive
        assert to_batch - 1 <= half.latest_planned <= read_checkpoint(original).latest_planned
        apply_rewind(plan_rewind(checkpoint, to_batch))
        after = log_files(store.download(str(checkpoint), tmp_path / f"after-{survive}"))
        assert after == expected, (survive, sorted(set(after) ^ set(expected)))


def test_a_store_that_cannot_write_only_if_absent_is_refused_before_the_checkpoint_changes(
    s3_server, store_env, bronze, tmp_path, capsys
):
    """An S3-compatible store configured (as object_store reads it) to have no conditional PUT."""
    from store_servers import s3_store

    original, to_batch = bronze
    store = s3_store(s3_server)
    checkpoint = f"{store.upload(original.parent)}/bronze"
    store_env({**store.env, "AWS_CONDITIONAL_PUT": "disabled"})
    code = main(["checkpoint", "rewind", checkpoint, "--to-batch", str(to_batch), "--yes"])
    out, err = capsys.readouterr()
    assert code != 0 and err.startswith("streamops: error: ") and err.count("\n") == 1, (code, out, err)
    assert "does not support conditional writes" in err and "nothing was changed" in err, err
    assert log_files(store.download(checkpoint, tmp_path / "after")) == log_files(original)
