"""Same seed, same bytes; another seed, other bytes."""

from __future__ import annotations

from streamops.pipeline.generator.landing_writer import MANIFEST_NAME
from streamops.pipeline.generator.run import generate
from streamops.pipeline.generator.settings import GeneratorSettings


def run(out, seed):
    settings = GeneratorSettings(
        out=out,
        events=3_000,
        event_types=12,
        titles=20,
        drift=0.5,
        bad=0.01,
        seed=seed,
        events_per_file=700,
    )
    manifest = generate(settings)
    return manifest, {path.name: path.read_bytes() for path in sorted(out.iterdir())}


def test_same_seed_gives_byte_identical_files_and_manifest(tmp_path):
    manifest_a, files_a = run(tmp_path / "a", seed=5)
    manifest_b, files_b = run(tmp_path / "b", seed=5)
    assert manifest_a == manifest_b
    assert files_a == files_b
    assert MANIFEST_NAME in files_a and len(files_a) == 6


def test_another_seed_gives_other_events_ids_and_drift(tmp_path):
    manifest_a, files_a = run(tmp_path / "a", seed=5)
    manifest_b, files_b = run(tmp_path / "b", seed=6)
    assert files_a.keys() == files_b.keys()
    assert all(files_a[name] != files_b[name] for name in files_a)
    assert manifest_a["drift"] != manifest_b["drift"]
    first_id = lambda files: files["events-000001.ndjson"].split(b'"event_id":"')[1][:14]  # noqa: E731
    assert first_id(files_a) != first_id(files_b)
