"""A checkpoint of 10,000 batches on S3 is listed in pages (1,000 keys a LIST), not one request
per file: counted in the requests an S3 server (moto, on 127.0.0.1) received.

Twenty thousand PUTs over HTTP take minutes on a busy 2-core machine, so this test runs moto's
server in this process and stores the (real, Spark-written) checkpoint files through the
server's own S3 backend; everything the code under test does still goes over HTTP, and every
request line the server handles is recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from ports import free_port

from streamops.cli import main
from streamops.core.checkpoint_format.reader import read_checkpoint

pytestmark = pytest.mark.services

BATCHES = 10_000
BUCKET = "paging"
FIXTURE = Path(__file__).resolve().parents[1] / "checkpoint_tools" / "fixtures" / "kafka_spark35"
LIST_PAGE = 1_000


@pytest.fixture
def paging_s3(monkeypatch, store_env) -> Iterator[tuple[object, list[str]]]:
    """moto's server in this process: (its S3 backend, the request lines it has handled)."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends
    from moto.server import ThreadedMotoServer
    from werkzeug.serving import WSGIRequestHandler

    handled: list[str] = []
    original = WSGIRequestHandler.log_request

    def record(handler, code="-", size="-"):
        handled.append(handler.requestline)
        return original(handler, code, size)

    monkeypatch.setattr(WSGIRequestHandler, "log_request", record)
    port = free_port()
    server = ThreadedMotoServer("127.0.0.1", port, verbose=False)
    server.start()
    try:
        backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
        backend.create_bucket(BUCKET, "us-east-1")
        store_env(
            {
                "AWS_ACCESS_KEY_ID": "paging",
                "AWS_SECRET_ACCESS_KEY": "paging",
                "AWS_REGION": "us-east-1",
                "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
                "AWS_ALLOW_HTTP": "true",
            }
        )
        yield backend, handled
    finally:
        server.stop()
        backend.reset()


def put_long_checkpoint(backend, prefix: str) -> None:
    """The Kafka fixture's files (Spark 3.5), its last batch repeated up to 10,000 batches."""
    for path in FIXTURE.rglob("*"):
        if path.is_file():
            backend.put_object(BUCKET, f"{prefix}/{path.relative_to(FIXTURE).as_posix()}", path.read_bytes())
    offsets, commits = (FIXTURE / "offsets" / "2").read_bytes(), (FIXTURE / "commits" / "2").read_bytes()
    for batch in range(3, BATCHES):
        backend.put_object(BUCKET, f"{prefix}/offsets/{batch}", offsets)
        backend.put_object(BUCKET, f"{prefix}/commits/{batch}", commits)


def test_inspecting_10000_batches_on_s3_takes_a_bounded_number_of_requests(paging_s3, capsys):
    backend, handled = paging_s3
    put_long_checkpoint(backend, "lake/_checkpoints/stream")
    uri = f"s3://{BUCKET}/lake/_checkpoints/stream"
    assert main(["checkpoint", "inspect", uri, "--last", "3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["latest_planned"] == BATCHES - 1 and report["offsets_files"] == BATCHES
    lists = [r for r in handled if "list-type=2" in r]
    reads = [r for r in handled if "list-type=2" not in r]
    pages = 2 * -(-BATCHES // LIST_PAGE)
    assert pages <= len(lists) <= pages + 10, lists
    assert len(reads) <= 20, reads
    handled.clear()
    assert read_checkpoint(uri, last_batches=1).latest_committed == BATCHES - 1
    assert len(handled) <= pages + 15, handled
