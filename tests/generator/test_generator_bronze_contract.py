"""The manifest is the truth bronze is checked against: run bronze's own classifier (pure Python,
no Spark) over the generated lines and compare, so a drift between the two sides shows here."""

from __future__ import annotations

from collections import Counter, defaultdict

import pyarrow as pa

from streamops.pipeline.bronze.bronze_classifier import BatchClassifier
from streamops.pipeline.registry.schema_variation import variation_hash


def classified(generated):
    lines = [line.raw for line in generated.lines]
    batch = BatchClassifier().classify(
        lines,
        pa.array([line.file for line in generated.lines]),
        pa.nulls(len(lines), pa.timestamp("us", tz="UTC")),
    )
    return batch.to_pydict()


def test_bronze_quarantines_exactly_the_expected_reasons(generated):
    rows = classified(generated)
    reasons = Counter(reason for reason in rows["quarantine_reason"] if reason is not None)
    expected = {reason: count for reason, count in generated.manifest["expected_quarantine"].items() if count}
    assert reasons == expected
    assert sum(reason is None for reason in rows["quarantine_reason"]) == generated.manifest["events_total"]


def test_bronze_sees_exactly_the_manifest_variations(generated):
    rows = classified(generated)
    seen = defaultdict(Counter)
    for event_type, schema_hash in zip(rows["event_type"], rows["schema_hash"]):
        if event_type is not None:
            seen[event_type][schema_hash] += 1
    manifest_types = generated.manifest["event_types"]
    assert set(seen) == set(manifest_types)
    for name, entry in manifest_types.items():
        expected = {variation_hash(v["paths"]): v["events"] for v in entry["variations"]}
        assert dict(seen[name]) == expected, name
