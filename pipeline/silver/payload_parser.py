"""How silver reads each bronze payload, as Spark expressions evaluated in the executors.

The judgement of what fits which type is Spark's: every payload is read with `from_json` and
its event type's applied schema (the Jackson-based reader whose inference made that schema: a
string column takes numbers as text, a long column cannot take "L5" or 1.5) and written back
with `to_json`; the sink's tasks read that JSON with Arrow and the same schema. For a variation
the applied schema cannot hold (`SilverSchema.unfit`), the unfit fields are read apart: the
typed part with the applied schema minus those fields, and the fields themselves with the
variation's own schema, kept as JSON in `_rescued_data` with the landing file (Auto Loader's
rescued-data convention: `{"player": {"level": "L5"}, "_file_path": "..."}`). A value is thus in
its column or in `_rescued_data`, never in both, and never dropped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from pipeline.registry.schema_compat import prune, without

if TYPE_CHECKING:
    from pyspark.sql import Column

    from pipeline.silver.silver_schemas import SilverSchema

PARSE_STAGE = "silver_parse"
RESCUED_FILE_PATH = "_file_path"


def _branches(schemas: Mapping[str, "SilverSchema"], event_type: "Column", schema_hash: "Column", build) -> "Column":
    """CASE over (type, unfit variation), then type: `build(schema, hash or None)` per branch."""
    from pyspark.sql import functions as F

    expression = None
    for name, schema in sorted(schemas.items()):
        conditions = [((event_type == F.lit(name)) & (schema_hash == F.lit(h)), build(schema, h)) for h in sorted(schema.unfit)]
        conditions.append((event_type == F.lit(name), build(schema, None)))
        for condition, value in conditions:
            if value is None:
                continue
            expression = F.when(condition, value) if expression is None else expression.when(condition, value)
    return expression if expression is not None else F.lit(None).cast("string")


def typed_payload(schemas: Mapping[str, "SilverSchema"], event_type: "Column", schema_hash: "Column", payload: "Column") -> "Column":
    """Each row's payload as Spark reads it with its type's applied schema (minus the fields its
    variation cannot hold), written back as JSON."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    def build(schema: "SilverSchema", variation: str | None) -> "Column":
        applied = schema.applied if variation is None else without(schema.applied, _paths(schema, variation))
        return F.to_json(F.from_json(payload, StructType.fromJson(applied)))

    return _branches(schemas, event_type, schema_hash, build)


def rescued_data(
    schemas: Mapping[str, "SilverSchema"], event_type: "Column", schema_hash: "Column", payload: "Column", source_file: "Column"
) -> "Column":
    """The fields a row's variation cannot put in their columns, as JSON with the landing file;
    null for rows whose every field fits."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    def build(schema: "SilverSchema", variation: str | None) -> "Column | None":
        if variation is None:
            return None
        fields = prune(schema.variation_schemas[variation], _paths(schema, variation))
        return F.to_json(F.from_json(payload, StructType.fromJson(fields)).withField(RESCUED_FILE_PATH, source_file))

    return _branches(schemas, event_type, schema_hash, build)


def _paths(schema: "SilverSchema", variation: str) -> list[str]:
    return sorted({change.path for change in schema.unfit[variation]})
