"""Superset schemas by Spark's own JSON inference over prototypes (the seed's method).

A batch may bring new variations for hundreds of event types; inferring each type separately
would be one Spark job per type. Nesting every prototype under a key for its type, e.g.
`{"S:match_start": <prototype>}`, lets one inference pass return one struct field per key,
each the superset of exactly the prototypes under that key.

`infer_isolated` keeps one event type's prototypes from failing the others: when the shared pass
fails, a trivial canary tells whether Spark itself is down (the error is raised) or the data is
at fault (each type is retried alone and the ones that still fail are reported).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Sequence

from streamops.core.exceptions import error_line
from streamops.pipeline.records.column_names import CORRUPT_RECORD_COLUMN

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

INFERENCE_OPTIONS = {
    "primitivesAsString": "false",
    "prefersDecimal": "false",
    "dropFieldIfAllNull": "true",
    "mode": "PERMISSIVE",
}
_CANARY = {"canary": ['{"event_type":"canary","n":1}']}


def infer_schemas(spark: SparkSession, prototypes: Mapping[str, Sequence[str]]) -> dict[str, dict]:
    """Spark StructType JSON per key, inferred over that key's prototype messages."""
    lines = ["{" + json.dumps(key) + ":" + prototype + "}" for key, texts in prototypes.items() for prototype in texts]
    if not lines:
        return {}
    text_rdd = spark.sparkContext.parallelize(lines, 1)
    reader = spark.read
    for option, value in INFERENCE_OPTIONS.items():
        reader = reader.option(option, value)
    inferred = json.loads(reader.json(text_rdd).schema.json())
    return {
        wrapper["name"]: wrapper["type"]
        for wrapper in inferred["fields"]
        if wrapper["name"] != CORRUPT_RECORD_COLUMN and isinstance(wrapper["type"], dict)
    }


@dataclass(frozen=True)
class Inference:
    schemas: dict[str, dict]
    failed: dict[str, str]
    """Group -> the one-line error that group alone still raised."""


def infer_isolated(spark: SparkSession, groups: Mapping[str, Mapping[str, Sequence[str]]]) -> Inference:
    """Infer every group's keys in one pass; a group Spark cannot infer fails alone."""
    merged = {key: texts for group in groups.values() for key, texts in group.items()}
    try:
        return Inference(infer_schemas(spark, merged), {})
    except Exception:  # noqa: BLE001 - which group is at fault is decided below
        infer_schemas(spark, _CANARY)
    schemas: dict[str, dict] = {}
    failed: dict[str, str] = {}
    for name, group in groups.items():
        try:
            schemas.update(infer_schemas(spark, group))
        except Exception as error:  # noqa: BLE001 - isolated: the canary inferred
            failed[name] = error_line(error)
    if failed:
        infer_schemas(spark, _CANARY)  # Spark stopped meanwhile (a query stop cancels its jobs): not the data
    return Inference(schemas, failed)
