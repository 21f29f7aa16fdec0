"""Expectations as Spark columns of the silver projection: per row, the names of the rules of its
own table that it fails, computed in the pass that writes the batch.

A rule is Spark SQL over the table's columns as the silver table names them (flattened
`parent__child`, the lineage columns, `_rescued_data`), while in the projection a row's typed
fields sit in a struct. Each rule is resolved by Spark itself, never rewritten as text: the
projection gets one *scope* per struct of parsed rows (a select that exposes that struct's
flat columns under their table names, the working columns beside them under names no table
column takes)
and the next select evaluates the scope's rules with `F.expr`, writes the failures into the
row and unpacks the working columns again. Spark's optimizer collapses the selects, keeping
the parsed struct computed once, so the rules cost no job and no second read.

Which rules apply to a table is decided once per schema version: the rules are resolved against
an empty DataFrame of the table's columns; a rule naming a column the table does not have (yet)
is not applicable and is not evaluated.

Rows evaluated: the rows of a table's event type that reached their table's route in the batch
(all of them under on_incompatible=rescue; under quarantine or fail_group, not those a schema
change held back). They are counted in the write's own tallies: the rows its route got, plus
the rows a drop or fail rule held out of it (a tally item), and each row once per rule it failed
(a tally item per rule; a passing row carries none), so per rule passed = evaluated - failed. A row passes a rule when the expression is true (false or null
fails). `unique` rules: among a table's evaluated rows of one batch, ordered by bronze batch,
landing file, ingest time, event time and payload, a row fails when an earlier row has the same
key values; a row with a null in any key column passes (null equals nothing, as in SQL).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from streamops.pipeline.delta_connector.flat_columns import flat_columns
from streamops.pipeline.exceptions import PipelineConfigError
from streamops.pipeline.expectations.rules import Action, Expectation
from streamops.pipeline.records.column_names import (
    LINEAGE_COLUMNS,
    NESTED_SEPARATOR,
    RESCUED_DATA_COLUMN,
    column_name,
    folded,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession

FAILED_COLUMN = "_expect_failed"
"""array<string>: the rules a row failed, each as `action\\x00name`, so what a row's failures make
it do is read from them alone, at a cost only a failing row pays (null until its table's scope
evaluated it)."""
WORKING_PREFIX = "_streamops_working_"
"""The working columns' names while a scope exposes a table's columns by theirs."""
ITEM_SEPARATOR = "\x00"
HELD_ITEM = "expect_held"
FAILED_ITEM = "expect_failed"
NOT_APPLICABLE_CONDITIONS = ("UNRESOLVED_COLUMN", "FIELD_NOT_FOUND", "UNRESOLVED_FIELD")
"""Spark's error conditions for a name the table's columns do not resolve (schema drift)."""
UNIQUE_ORDER = ("_bronze_batch_id", "_source_file", "_ingest_time", "_event_time", "payload")
"""The working columns that order a batch's rows for `unique`: where each sits in bronze, then
its content, so a replayed batch makes the same rows fail."""
TABLE_LINEAGE_TYPES = {
    "_event_time": "timestamp",
    "_ingest_time": "timestamp",
    "_source_file": "string",
    "_bronze_batch_id": "bigint",
    "_schema_hash": "string",
}
"""Spark types of the lineage columns every silver table has (LINEAGE_COLUMNS)."""


@dataclass(frozen=True)
class TableRules:
    """A table's rules as of one schema version: those its columns resolve, and those they do not."""

    table: str
    schema_version: int
    applicable: tuple[Expectation, ...]
    not_applicable: tuple[Expectation, ...] = ()

    def names(self, action: Action) -> tuple[str, ...]:
        return tuple(rule.name for rule in self.applicable if rule.action == action)

    def action_of(self, name: str) -> Action:
        return next(rule.action for rule in self.applicable + self.not_applicable if rule.name == name)


def table_rules(
    spark: SparkSession, table: str, schema_version: int, applied: dict[str, Any], rules: tuple[Expectation, ...]
) -> TableRules:
    """Which of `rules` the table's columns (of its applied schema `applied`) resolve: one
    analysis for all of them, one per rule only when some do not."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    empty = spark.range(0).select(
        F.lit(None).cast(StructType.fromJson(applied)).alias("s"),
        *[F.lit(None).cast(kind).alias(name) for name, kind in TABLE_LINEAGE_TYPES.items()],
        F.lit(None).cast("string").alias(RESCUED_DATA_COLUMN),
    )
    columns = empty.select(
        *flat_columns(F.col("s"), applied), *[F.col(name) for name in (*TABLE_LINEAGE_TYPES, RESCUED_DATA_COLUMN)]
    )

    def resolves(chosen: tuple[Expectation, ...]) -> bool:
        """Whether the columns resolve every rule of `chosen`; a rule that fails for another
        reason than a name (a type mismatch) stops the batch with one line naming it."""
        from pyspark.errors import AnalysisException

        try:
            columns.select(*[c for rule in chosen for c in _referenced(rule)])
        except AnalysisException as error:
            condition = error.getCondition() or ""
            if len(chosen) == 1 and not condition.startswith(NOT_APPLICABLE_CONDITIONS):
                raise PipelineConfigError(
                    f"expectation `{chosen[0].name}` cannot be evaluated on the columns of table `{table}` "
                    f"({condition}): fix the rule, then restart the run"
                ) from error
            return False
        return True

    if resolves(rules):
        return TableRules(table, schema_version, rules)
    fits = tuple(rule for rule in rules if resolves((rule,)))
    return TableRules(table, schema_version, fits, tuple(rule for rule in rules if rule not in fits))


def _referenced(rule: Expectation) -> list[Column]:
    from pyspark.sql import functions as F

    if rule.expect is not None:
        return [F.expr(rule.expect)]
    return [F.col(name) for name in rule.unique]


@dataclass(frozen=True)
class RuleScope:
    """Tables whose rows' typed fields are in one struct column (`struct`, of Spark JSON type
    `schema`: the table's applied schema or a union that agrees with it on every shared field)."""

    struct: str
    schema: dict[str, Any]
    tables: tuple[TableRules, ...]


def rule_scopes(
    struct: str, schema: dict[str, Any], tables: tuple[TableRules, ...], own: dict[str, dict]
) -> list[RuleScope]:
    """One scope for the tables sharing `struct`, unless the union's flat names collide (two
    paths of two event types making one column name): then one scope per table, on its own
    applied schema (`own`)."""
    names = [folded(name) for name in _flat_names(schema)]
    if len(names) == len(set(names)):
        return [RuleScope(struct, schema, tables)]
    return [RuleScope(struct, own[t.table], (t,)) for t in tables]


def _flat_names(schema: dict[str, Any], prefix: str = "") -> list[str]:
    names = []
    for entry in schema["fields"]:
        name = prefix + column_name(entry["name"])
        kind = entry["type"]
        if isinstance(kind, dict) and kind.get("type") == "struct":
            names += _flat_names(kind, name + NESTED_SEPARATOR)
        else:
            names.append(name)
    return names


def rule_selects(
    scopes: list[RuleScope], working: tuple[str, ...], event_type: str, computed: dict[str, Column]
) -> list[tuple[Column, ...]]:
    """The selects that evaluate every scope's rules over rows with the `working` columns (which
    include FAILED_COLUMN, `event_type`, the lineage columns and each scope's struct): two per
    scope. The first renames the working columns apart and exposes the table columns the scope's
    rules may name; the second evaluates the rules and renames back. `computed` columns (over the
    working ones) are made in the first select and kept; a scope's struct is dropped after its
    last scope. A select carrying a wide struct runs without whole-stage code generation (Spark
    stops fusing operators past `spark.sql.codegen.maxFields`), so no struct goes further than
    the rules that read it."""
    from pyspark.sql import functions as F

    taken = {folded(n) for s in scopes for n in _flat_names(s.schema)}
    names = [*working, *computed]
    hidden = {name: _free_name(f"{WORKING_PREFIX}{index}", taken) for index, name in enumerate(names)}
    table_columns = [*LINEAGE_COLUMNS, RESCUED_DATA_COLUMN]
    selects: list[tuple[Column, ...]] = []
    current = list(working)

    def working_column(name: str) -> Column:
        return F.col(hidden[name])

    for index, scope in enumerate(scopes):
        named = zip(_flat_names(scope.schema), flat_columns(F.col(scope.struct), scope.schema))
        texts = [folded(_text(rule)) for rules in scope.tables for rule in rules.applicable]
        exposed = [column for name, column in named if _may_name(name, texts)]
        exposed += [F.col(name) for name in table_columns]
        made = [column.alias(hidden[name]) for name, column in computed.items()] if index == 0 else []
        selects.append((*[F.col(name).alias(hidden[name]) for name in current], *made, *exposed))
        if index == 0:
            current += list(computed)
        later = {s.struct for s in scopes[index + 1 :]}
        current = [name for name in current if name not in {s.struct for s in scopes} - later]
        failed = None
        for rules in scope.tables:
            value = _failures(rules, working_column, event_type)
            condition = working_column(event_type) == F.lit(rules.table)
            failed = F.when(condition, value) if failed is None else failed.when(condition, value)
        failed = working_column(FAILED_COLUMN) if failed is None else failed.otherwise(working_column(FAILED_COLUMN))
        selects.append(
            tuple(failed.alias(name) if name == FAILED_COLUMN else working_column(name).alias(name) for name in current)
        )
    return selects


def _text(rule: Expectation) -> str:
    return rule.expect if rule.expect is not None else " ".join(f"`{name}`" for name in rule.unique)


def _may_name(column: str, texts: list[str]) -> bool:
    """Whether any of the rules' texts may name `column` (a superset of what Spark resolves: the
    name, or its backtick-quoted spelling, occurs in it; a `*` may name every column). Exposing
    only these keeps the scope's select as small as its rules, which Spark analyses every batch."""
    name = folded(column)
    quoted = name.replace("`", "``")
    return any("*" in text or name in text or quoted in text for text in texts)


def _failures(rules: TableRules, working_column: Callable[[str], Column], event_type: str) -> Column:
    """The names of the rules of `rules.table` the row fails, evaluated in its scope."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    checks = []
    for rule in rules.applicable:
        if rule.expect is not None:
            fails = ~F.coalesce(F.expr(rule.expect), F.lit(False))
        else:
            keys = [F.col(name) for name in rule.unique]
            order = Window.partitionBy(working_column(event_type), *keys).orderBy(
                *[working_column(n) for n in UNIQUE_ORDER]
            )
            no_null_key = F.lit(True)
            for key in keys:
                no_null_key = no_null_key & key.isNotNull()
            fails = no_null_key & (F.row_number().over(order) > F.lit(1))
        checks.append(F.when(fails, F.lit(f"{rule.action}{ITEM_SEPARATOR}{rule.name}")))
    return F.array_compact(F.array(*checks)) if checks else F.array().cast("array<string>")


def _free_name(base: str, taken: set[str]) -> str:
    name = base
    while folded(name) in taken:
        name += "_"
    return name


def failed_names(failed: Column) -> Column:
    """The names of the rules in a FAILED_COLUMN value."""
    from pyspark.sql import functions as F

    return F.transform(failed, lambda rule: F.substring_index(rule, ITEM_SEPARATOR, -1))


def fails_action(failed: Column, action: Action) -> Column:
    """Whether a FAILED_COLUMN value holds a rule whose action is `action`."""
    from pyspark.sql import functions as F

    return F.exists(failed, lambda rule: rule.startswith(f"{action}{ITEM_SEPARATOR}"))


def tally_items(event_type: Column, failed: Column, held: Column) -> Column:
    """A failing row's tally items: each rule it failed, and whether a rule held it out of its
    table (dropped or halted); null for a passing row, which costs nothing to count: its table's
    route counts it."""
    from pyspark.sql import functions as F

    separator = F.lit(ITEM_SEPARATOR)
    failures = F.transform(failed, lambda rule: F.concat(F.lit(FAILED_ITEM), separator, event_type, separator, rule))
    held_item = F.array(F.concat(F.lit(HELD_ITEM), separator, event_type))
    return F.when(F.size(failed) > 0, F.when(held, F.concat(held_item, failures)).otherwise(failures))


@dataclass(frozen=True)
class TableCounts:
    evaluated: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    """Rule -> rows that failed it."""


def counted(
    tallies: dict[str, dict[str, int]], item_tallies: dict[str, dict[str, int]], tables: set[str]
) -> dict[str, TableCounts]:
    """Of each of `tables`: rows evaluated (those its route got, and those a rule held out of it)
    and rows failed per rule, over every route of the batch."""
    evaluated = {table: sum(tallies.get(table, {}).values()) for table in tables}
    failed: dict[str, dict[str, int]] = {}
    for items in item_tallies.values():
        for item, rows in items.items():
            parts = item.split(ITEM_SEPARATOR)
            if parts[0] == HELD_ITEM and len(parts) == 2 and parts[1] in evaluated:
                evaluated[parts[1]] += rows
            elif parts[0] == FAILED_ITEM and len(parts) == 4:
                by_rule = failed.setdefault(parts[1], {})
                by_rule[parts[3]] = by_rule.get(parts[3], 0) + rows
    return {table: TableCounts(evaluated[table], failed.get(table, {})) for table in tables}


def held_rows(items: dict[str, int]) -> int:
    """Of one route's item tallies: the rows rules held out of their tables (on the quarantine
    route, the rows drop rules sent there)."""
    return sum(rows for item, rows in items.items() if item.split(ITEM_SEPARATOR)[0] == HELD_ITEM)
