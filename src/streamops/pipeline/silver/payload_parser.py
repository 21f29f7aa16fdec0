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

Types whose applied schemas do not disagree on any field (same name, same type, to the leaf)
are read together with the union of their schemas (`parse_layers`): `to_json` leaves out the
fields a row does not have, so each row's JSON holds exactly what its own type's schema reads,
while Spark evaluates one `from_json` per layer instead of a CASE branch per type (64 branches
of `from_json` run several times slower than one, on the same rows). Unfit variations keep their own branch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from streamops.pipeline.registry.schema_compat import prune, without
from streamops.pipeline.runtime.sql_literals import is_in

if TYPE_CHECKING:
    from pyspark.sql import Column

    from streamops.pipeline.registry.silver_schemas import SilverSchema

PARSE_STAGE = "silver_parse"
RESCUED_FILE_PATH = "_file_path"


def _branches(schemas: Mapping[str, SilverSchema], event_type: Column, schema_hash: Column, build) -> Column:
    """CASE over (type, unfit variation), then type: `build(schema, hash or None)` per branch."""
    from pyspark.sql import functions as F

    expression = None
    for name, schema in sorted(schemas.items()):
        conditions = [
            ((event_type == F.lit(name)) & (schema_hash == F.lit(h)), build(schema, h)) for h in sorted(schema.unfit)
        ]
        conditions.append((event_type == F.lit(name), build(schema, None)))
        for condition, value in conditions:
            if value is None:
                continue
            expression = F.when(condition, value) if expression is None else expression.when(condition, value)
    return expression if expression is not None else F.lit(None).cast("string")


def typed_payload(
    schemas: Mapping[str, SilverSchema],
    event_type_column: str,
    schema_hash: Column,
    payload: Column,
) -> Column:
    """Each row's payload as Spark reads it with its type's applied schema (minus the fields its
    variation cannot hold), written back as JSON. `event_type_column` names the column holding
    each row's event type."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    event_type = F.col(event_type_column)

    def read(schema: dict[str, Any]) -> Column:
        return F.to_json(F.from_json(payload, StructType.fromJson(schema)))

    expression = None
    for name, schema in sorted(schemas.items()):
        for variation in sorted(schema.unfit):
            condition = (event_type == F.lit(name)) & (schema_hash == F.lit(variation))
            value = read(without(schema.applied, _paths(schema, variation)))
            expression = F.when(condition, value) if expression is None else expression.when(condition, value)
    for members, union in parse_layers({name: schema.applied for name, schema in schemas.items()}):
        condition = is_in(event_type_column, members)
        value = read(union)
        expression = F.when(condition, value) if expression is None else expression.when(condition, value)
    return expression if expression is not None else F.lit(None).cast("string")


def parse_layers(applied: Mapping[str, dict[str, Any]]) -> list[tuple[list[str], dict[str, Any]]]:
    """Event types in groups whose schemas agree wherever they share a field, each with the union
    of its members' schemas; a type joins the first group it agrees with (name order)."""
    layers: list[tuple[list[str], dict[str, Any]]] = []
    for name in sorted(applied):
        for members, union in layers:
            merged = _union(union, applied[name])
            if merged is not None:
                members.append(name)
                union["fields"] = merged["fields"]
                break
        else:
            layers.append(([name], {"type": "struct", "fields": list(applied[name]["fields"])}))
    return layers


def _union(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any] | None:
    """Struct `a` with the fields of struct `b` it lacks; None when a field they share differs in
    type, or two names differ only in case (Spark's JSON reader would not tell them apart)."""
    fields = list(a["fields"])
    by_name = {f["name"]: i for i, f in enumerate(fields)}
    folded = {f["name"].lower() for f in fields}
    for new in b["fields"]:
        index = by_name.get(new["name"])
        if index is None:
            if new["name"].lower() in folded:
                return None
            fields.append(new)
            continue
        merged = _union_type(fields[index]["type"], new["type"])
        if merged is None:
            return None
        fields[index] = {**fields[index], "type": merged}
    return {**a, "fields": fields}


def _union_type(a: Any, b: Any) -> Any:
    if isinstance(a, dict) and isinstance(b, dict) and a.get("type") == b.get("type") == "struct":
        return _union(a, b)
    if isinstance(a, dict) and isinstance(b, dict) and a.get("type") == b.get("type") == "array":
        element = _union_type(a["elementType"], b["elementType"])
        return None if element is None else {**a, "elementType": element}
    return a if a == b else None


def rescued_data(
    schemas: Mapping[str, SilverSchema], event_type: Column, schema_hash: Column, payload: Column, source_file: Column
) -> Column:
    """The fields a row's variation cannot put in their columns, as JSON with the landing file;
    null for rows whose every field fits."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    def build(schema: SilverSchema, variation: str | None) -> Column | None:
        if variation is None:
            return None
        fields = prune(schema.variation_schemas[variation], _paths(schema, variation))
        return F.to_json(F.from_json(payload, StructType.fromJson(fields)).withField(RESCUED_FILE_PATH, source_file))

    return _branches(schemas, event_type, schema_hash, build)


def _paths(schema: SilverSchema, variation: str) -> list[str]:
    return sorted({change.path for change in schema.unfit[variation]})
