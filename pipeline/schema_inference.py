"""Superset schemas by Spark's own JSON inference over prototypes (the seed's method).

A batch may bring new variations for hundreds of event types; inferring each type separately
would be one Spark job per type. Nesting every prototype under a key for its type, e.g.
`{"S:match_start": <prototype>}`, lets one inference pass return one struct field per key,
each the superset of exactly the prototypes under that key.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Mapping, Sequence

import orjson

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

INFERENCE_OPTIONS = {
    "primitivesAsString": "false",
    "prefersDecimal": "false",
    "dropFieldIfAllNull": "true",
    "mode": "PERMISSIVE",
}
CORRUPT_COLUMN = "_corrupt_record"


def infer_schemas(spark: "SparkSession", prototypes: Mapping[str, Sequence[str]]) -> dict[str, dict]:
    """Spark StructType JSON per key, inferred over that key's prototype messages."""
    lines = [
        b'{' + orjson.dumps(key) + b':' + prototype.encode("utf-8") + b'}'
        for key, texts in prototypes.items()
        for prototype in texts
    ]
    if not lines:
        return {}
    text_rdd = spark.sparkContext.parallelize([line.decode("utf-8") for line in lines], 1)
    reader = spark.read
    for option, value in INFERENCE_OPTIONS.items():
        reader = reader.option(option, value)
    inferred = json.loads(reader.json(text_rdd).schema.json())
    schemas = {}
    for wrapper in inferred["fields"]:
        if wrapper["name"] == CORRUPT_COLUMN or not isinstance(wrapper["type"], dict):
            continue
        schemas[wrapper["name"]] = {
            "type": "struct",
            "fields": [f for f in wrapper["type"]["fields"] if f["name"] != CORRUPT_COLUMN],
        }
    return schemas
