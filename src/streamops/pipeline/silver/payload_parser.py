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

from typing import TYPE_CHECKING, Any, Collection, Mapping

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
    read_elsewhere: Collection[str] = (),
) -> Column:
    """Each row's payload as Spark reads it with its type's applied schema (minus the fields its
    variation cannot hold), written back as JSON. `event_type_column` names the column holding
    each row's event type. The layers whose types are all `read_elsewhere` are left out (null):
    their rows' typed payload comes from a parse that serves the rules too (`typed_and_picked`),
    but for their unfit variations'."""
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
        if set(members) <= set(read_elsewhere):
            continue
        condition = is_in(event_type_column, members)
        value = read(union)
        expression = F.when(condition, value) if expression is None else expression.when(condition, value)
    return expression if expression is not None else F.lit(None).cast("string")


TYPED_FIELD = "typed"
PICKED_FIELD = "picked"


def typed_and_picked(payload: Column, union: dict[str, Any], picked: dict[str, Any]) -> Column:
    """`payload` read once with `union`: a struct of the typed payload as JSON (TYPED_FIELD, what
    `typed_payload` makes of it) and the fields of `picked` (a part of `union`, `PICKED_FIELD`).

    One parse serving both, where reading the payload again for the picked fields alone cost
    the JVM 58 % of the typed parse: tokenising is the most of any JSON read, whatever the
    schema keeps. The parsed struct stays inside this one expression (a lambda over it), so no
    projection writes the union's hundreds of fields into every row, which cost more than the
    second parse did (BENCHMARKS.md, "Each payload parsed once for the rules and the typed
    payload: tried and dropped")."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    def both(parsed: Column) -> Column:
        fields = _picked(parsed, picked, union) if picked["fields"] else F.lit(None)
        return F.struct(F.to_json(parsed).alias(TYPED_FIELD), fields.alias(PICKED_FIELD))

    return F.transform(F.array(F.from_json(payload, StructType.fromJson(union))), both).getItem(0)


def _picked(value: Column, picked: dict[str, Any], whole: dict[str, Any]) -> Column:
    """Of the struct `value` of type `whole`, the struct of `picked`'s fields (null where `value`
    is), as `from_json` with `picked` would read it."""
    from pyspark.sql import functions as F

    kinds = {entry["name"]: entry["type"] for entry in whole["fields"]}
    columns = []
    for entry in picked["fields"]:
        name, kind = entry["name"], entry["type"]
        field = value.getField(name)
        if kind != kinds[name]:
            field = _picked(field, kind, kinds[name])
        columns.append(field.alias(name))
    return F.when(value.isNotNull(), F.struct(*columns))


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
