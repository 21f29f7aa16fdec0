"""What a user sees when a store cannot be used: one line on stderr that names the problem and
the fix, a non-zero exit, never a traceback; and a missing lake is an error, never "healthy"."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.fs as pa_fs
import pytest
from ports import free_port
from store_servers import AZURE_CONTAINER, AZURITE_ACCOUNT, S3_BUCKET, azure_store, s3_store

from streamops.cli import main

pytestmark = pytest.mark.services

FIXTURES = Path(__file__).resolve().parents[1] / "checkpoint_tools" / "fixtures"


def one_line_error(capsys, *argv: str) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code != 0 and out == "", (code, out)
    assert err.startswith("streamops: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


@pytest.fixture
def tiny_checkpoint(tmp_path):
    """A real Kafka checkpoint written by Spark 3.5 (the checkpoint tools' fixture), as `stream`."""
    shutil.copytree(FIXTURES / "kafka_spark35", tmp_path / "tiny" / "stream")
    return tmp_path / "tiny"


def test_s3_errors_name_the_problem_and_the_fix(s3_server, store_env, tiny_checkpoint, capsys):
    store = s3_store(s3_server)
    prefix = store.upload(tiny_checkpoint)
    store_env({**s3_server.env(), "AWS_SECRET_ACCESS_KEY": "not-the-secret"})
    err = one_line_error(capsys, "checkpoint", "doctor", "--lake", prefix)
    assert "access denied" in err and "to list `" + prefix in err and "AWS_ACCESS_KEY_ID" in err

    store_env(s3_server.env())
    err = one_line_error(capsys, "checkpoint", "inspect", "s3://no-such-bucket/lake/stream")
    assert "bucket `no-such-bucket` does not exist" in err

    store_env(s3_server.env(s3_server.reader))
    assert main(["checkpoint", "inspect", f"{prefix}/stream", "--json"]) == 0, "the reader may read"
    capsys.readouterr()
    err = one_line_error(capsys, "checkpoint", "rewind", f"{prefix}/stream", "--to-batch", "0", "--yes")
    assert "access denied" in err and "write" in err and f"{prefix}/" in err

    store_env({**s3_server.env(), "AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}"})
    err = one_line_error(capsys, "status", "--lake", prefix)
    assert "nothing answers at 127.0.0.1" in err and "AWS_ENDPOINT_URL" in err

    store_env({"AWS_ENDPOINT_URL": s3_server.endpoint, "AWS_ALLOW_HTTP": "true"})
    err = one_line_error(capsys, "checkpoint", "doctor", "--lake", prefix)
    assert "no AWS credentials found" in err


def test_azure_errors_name_the_problem_and_the_fix(azurite, store_env, tiny_checkpoint, capsys):
    prefix = azure_store(azurite).upload(tiny_checkpoint)
    store_env(azurite.env(key="bm90LXRoZS1rZXk="))
    err = one_line_error(capsys, "checkpoint", "inspect", f"{prefix}/stream")
    assert "access denied" in err and f"to list `{prefix}/stream" in err and AZURITE_ACCOUNT in err

    store_env(azurite.env())
    missing = f"abfss://no-such-container@{AZURITE_ACCOUNT}.dfs.core.windows.net/lake"
    err = one_line_error(capsys, "checkpoint", "doctor", "--lake", missing)
    assert "container `no-such-container` does not exist" in err

    nowhere = f"http://127.0.0.1:{free_port()}"
    store_env({**azurite.env(), "AZURITE_BLOB_STORAGE_URL": nowhere})
    err = one_line_error(capsys, "status", "--lake", prefix)
    assert "nothing answers at 127.0.0.1" in err and "AZURITE_BLOB_STORAGE_URL" in err

    store_env(
        {
            "AZURE_STORAGE_ACCOUNT_NAME": AZURITE_ACCOUNT,
            "AZURE_STORAGE_ACCOUNT_KEY": azurite.env()["AZURE_STORAGE_ACCOUNT_KEY"],
            "AZURE_STORAGE_ENDPOINT": f"{nowhere}/{AZURITE_ACCOUNT}",
            "AZURE_ALLOW_HTTP": "true",
        }
    )
    err = one_line_error(capsys, "checkpoint", "inspect", f"{prefix}/stream")
    assert "nothing answers at 127.0.0.1" in err and "AZURE_STORAGE_ENDPOINT" in err


@pytest.mark.parametrize("kind", ["s3", "azure"])
def test_a_missing_lake_is_an_error_not_an_empty_healthy_fleet(kind, request, store_env, capsys):
    if kind == "s3":
        server = request.getfixturevalue("s3_server")
        uri = f"s3://{S3_BUCKET}/no/lake/here"
    else:
        server = request.getfixturevalue("azurite")
        uri = f"az://{AZURE_CONTAINER}/no/lake/here"
    store_env(server.env())
    for argv in (["checkpoint", "doctor", "--lake", uri], ["status", "--lake", uri]):
        err = one_line_error(capsys, *argv)
        assert uri in err, err


def test_a_remote_log_without_versions_is_removed_and_one_with_a_version_is_kept(store, tmp_path):
    from streamops.pipeline.delta_connector.cut_short_creation import clear_cut_short_creation

    (tmp_path / "cut" / "_delta_log").mkdir(parents=True)
    (tmp_path / "cut" / "_delta_log" / ".00000000000000000000.json.3f1c9e.tmp").write_bytes(b"{")
    (tmp_path / "kept" / "_delta_log").mkdir(parents=True)
    (tmp_path / "kept" / "_delta_log" / "00000000000000000000.json").write_bytes(b"{}")
    cut, kept = store.upload(tmp_path / "cut"), store.upload(tmp_path / "kept")
    assert clear_cut_short_creation(cut) is True
    left = pa_fs.FileSelector(f"{store.bucket}/{cut.rsplit('/', 1)[1]}", recursive=True, allow_not_found=True)
    assert [info.path for info in store.filesystem.get_file_info(left) if info.type == pa_fs.FileType.File] == []
    assert clear_cut_short_creation(kept) is False
    assert clear_cut_short_creation(kept + "/missing") is False
