"""What `inspect` says about a checkpoint's state stores, per stateful operator.

Restorable batches are the ones a restart (or `rewind --to-batch N`) can run again: every
store of every operator still loads state version N. A batch's version is pinned to the uuid its
commit recorded when the checkpoint uses state checkpoint format v2.
"""

from __future__ import annotations

from typing import Any

from streamops.core.checkpoint_format.reader import Checkpoint
from streamops.core.checkpoint_format.state_store import StateOperator, provider_from_conf, state_formats


def state_pins(ckpt: Checkpoint, batch_id: int) -> dict[str, Any]:
    """The `stateUniqueIds` that state version `batch_id` must match (from commit `batch_id - 1`)."""
    commit = ckpt.commits.get(batch_id - 1)
    return dict(commit.state_unique_ids) if commit is not None else {}


def restorable_batches(ckpt: Checkpoint) -> list[int]:
    """Batches whose state every store can still load, up to the next batch to run."""
    state = ckpt.state
    if not state.present:
        return []
    newest = (ckpt.latest_committed + 1) if ckpt.latest_committed is not None else 0
    versions = {0, newest} | {v for o in state.operators for s in o.stores for v in s.versions if v <= newest}
    return sorted(v for v in versions if not state.missing_for(v, state_pins(ckpt, v)))


def describe_state(ckpt: Checkpoint) -> dict[str, Any]:
    latest = ckpt.offsets.get(ckpt.latest_planned) if ckpt.latest_planned is not None else None
    conf = dict(latest.metadata.conf) if latest and latest.metadata else {}
    state = ckpt.state
    return {
        "present": state.present,
        "partitions": state.partitions,
        "latest_version": state.latest_version,
        "provider": provider_from_conf(conf) if conf else None,
        "formats": state_formats(conf),
        "operators": [_operator(o) for o in state.operators],
        "restorable_batches": restorable_batches(ckpt),
        "problems": list(state.problems),
    }


def _operator(operator: StateOperator) -> dict[str, Any]:
    return {
        "operator_id": operator.operator_id,
        "name": operator.name,
        "metadata_version": operator.metadata_version,
        "provider": operator.provider_on_disk(),
        "layout": operator.layout,
        "partitions": operator.partitions,
        "declared_partitions": operator.declared_partitions,
        "stores": list(operator.store_names),
        "latest_version": operator.latest_version,
        "size_bytes": operator.size_bytes,
        "schema_version": operator.schema_version,
        "schema_files": list(operator.schema_files),
    }
