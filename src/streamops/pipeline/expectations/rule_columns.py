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
an empty DataFrame of the table's columns they may name (one analysis per distinct set of
those, shared by the tables that have it); a rule naming a column the table does not have (yet)
is not applicable and is not evaluated. A rule's check is one Column however many tables it
applies to, and tables with the same rules share one branch of the evaluation, so the columns
built and analysed each time a group's schemas change grow with the distinct rules, not with
rules times tables.

Rows evaluated: the rows of a table's event type that reached their table's route in the batch
(all of them under on_incompatible=rescue; under quarantine or fail_group, not those a schema
change held back). They are counted in the write's own tallies: the rows its route got, plus
the rows a drop or fail rule held out of it (a tally item), and each row once per rule it failed
(one tally item naming every rule it failed; a passing row carries none), so per rule passed =
evaluated - failed. A row passes a rule when the expression is true (false or null fails).
`unique` rules: among a table's evaluated rows of one batch, ordered by bronze batch, landing
file, ingest time, event time and payload, a row fails when an earlier row has the same key
values; a row with a null in any key column passes (null equals nothing, as in SQL).

Where the projection carries KEYS_COLUMN (silver's), a `warn` unique rule of a table without
`drop` rules is not evaluated per row: it changes no row's fate and no row's quarantine detail,
so each evaluated row carries its key as a tally item instead, the sink's tasks count rows per
key and the driver adds up, over every task, the rows beyond each key's first. Its failures are
the same count, without the shuffle and sort of the batch's rows a window needs (on two busy
cores, 4.7 s of the p95 freshness of ten rules, measured in one session: BENCHMARKS.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Collection, get_args

from streamops.pipeline.delta_connector.flat_columns import FlatField, flat_column, flat_fields
from streamops.pipeline.exceptions import PipelineConfigError
from streamops.pipeline.expectations.rules import Action, Expectation
from streamops.pipeline.records.column_names import (
    LINEAGE_COLUMNS,
    RESCUED_DATA_COLUMN,
    folded,
)
from streamops.pipeline.runtime.sql_literals import is_in

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession

FAILED_COLUMN = "_expect_failed"
"""array<string>: the rules a row failed, each as `action\\x00name`, so what a row's failures make
it do is read from them alone, at a cost only a failing row pays (null until its table's scope
evaluated it)."""
KEYS_COLUMN = "_expect_keys"
"""array<string>: of a row, the tally item of its key for each keyed `unique` rule (KEY_ITEM, the
rule's name and the key's text, `key_text`; none when a key column is null). The row's table is
its route: a keyed rule's rows stay in their table (no drop rule beside it), and a batch a fail
rule halts writes no counts."""
WORKING_PREFIX = "_streamops_working_"
"""The working columns' names while a scope exposes a table's columns by theirs."""
ITEM_SEPARATOR = "\x00"
RULES_SEPARATOR = "\x01"
"""Between a row's failed rules (`action\x00name` each) in its one FAILED_ITEM: neither an action
nor a rule name (RULE_NAME_PATTERN) holds it."""
HELD_ITEM = "expect_held"
FAILED_ITEM = "expect_failed"
KEY_ITEM = "expect_key"
NOT_APPLICABLE_CONDITIONS = ("UNRESOLVED_COLUMN", "FIELD_NOT_FOUND", "UNRESOLVED_FIELD")
"""Spark's error conditions for a name the table's columns do not resolve (schema drift)."""
UNIQUE_ORDER = ("_bronze_batch_id", "_source_file", "_ingest_time", "_event_time", "payload")
"""The working columns that order a batch's rows for `unique`: where each sits in bronze, then
its content, so a replayed batch makes the same rows fail."""
TEXT_KEY_KINDS = frozenset({"string", "long", "integer", "short", "byte", "boolean", "date", "timestamp"})
"""Spark (JSON) types whose values Spark's cast to string tells apart, one text per value: a
single key column of one of these (or a decimal) is its key's text as it is, with no JSON to
write for every row (in a probe, 0.08 s of a 35,000-row batch's 0.55 s of JVM time)."""
TABLE_LINEAGE_TYPES = {
    "_event_time": "timestamp",
    "_ingest_time": "timestamp",
    "_source_file": "string",
    "_bronze_batch_id": "long",
    "_schema_hash": "string",
}
"""Spark (JSON) types of the lineage columns every silver table has (LINEAGE_COLUMNS)."""


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


def counted_by_key(rule: Expectation, applicable: tuple[Expectation, ...]) -> bool:
    """Whether `rule`, one of a table's `applicable` rules, is counted from its keys' tallies
    where the projection allows it (module docstring): a `warn` unique rule, beside no `drop`
    rule whose rows' quarantine detail would name it."""
    return bool(rule.unique) and rule.action == "warn" and not any(other.action == "drop" for other in applicable)


class RuleResolver:
    """Which rules a table's columns resolve, judged by Spark's analyzer once per distinct set of
    the columns the rules may name (names and types), not once per table: the tables of a group
    mostly share them, and a group's schemas change while the run goes on."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self._judged: dict[tuple, tuple[Expectation, ...]] = {}
        """(rules, the columns they may name) -> the rules of them those columns resolve."""

    def table_rules(
        self, table: str, schema_version: int, applied: dict[str, Any], rules: tuple[Expectation, ...]
    ) -> TableRules:
        """`rules` on the table of applied schema `applied`: those its columns resolve, and those
        naming a column it does not have (yet)."""
        texts = [folded(_text(rule)) for rule in rules]
        named = [leaf for leaf in flat_fields(applied) if _may_name(leaf.name, texts)]
        columns = tuple((leaf.name, json.dumps(leaf.kind, sort_keys=True)) for leaf in named)
        key = (rules, columns)
        if key not in self._judged:
            self._judged[key] = self._resolved(table, rules, columns)
        fits = self._judged[key]
        return TableRules(table, schema_version, fits, tuple(rule for rule in rules if rule not in fits))

    def _resolved(
        self, table: str, rules: tuple[Expectation, ...], columns: tuple[tuple[str, str], ...]
    ) -> tuple[Expectation, ...]:
        """One analysis for all of `rules` over an empty frame of `columns` and the lineage
        columns; one per rule only when some do not resolve."""
        from pyspark.sql.types import StructType

        fields = [(name, json.loads(kind)) for name, kind in columns]
        fields += [*TABLE_LINEAGE_TYPES.items(), (RESCUED_DATA_COLUMN, "string")]
        schema = {
            "type": "struct",
            "fields": [{"name": n, "type": k, "nullable": True, "metadata": {}} for n, k in fields],
        }
        frame = self.spark.createDataFrame([], StructType.fromJson(schema))

        def resolves(chosen: tuple[Expectation, ...]) -> bool:
            """Whether the columns resolve every rule of `chosen`; a rule that fails for another
            reason than a name (a type mismatch) stops the batch with one line naming it."""
            from pyspark.errors import AnalysisException

            try:
                frame.select(*[c for rule in chosen for c in _referenced(rule)])
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
            return rules
        return tuple(rule for rule in rules if resolves((rule,)))


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
    names = [folded(leaf.name) for leaf in flat_fields(schema)]
    if len(names) == len(set(names)):
        return [RuleScope(struct, schema, tables)]
    return [RuleScope(struct, own[t.table], (t,)) for t in tables]


def rule_selects(scopes: list[RuleScope], working: tuple[str, ...], event_type: str) -> list[tuple[Column, ...]]:
    """The selects that evaluate every scope's rules over rows with the `working` columns (which
    include FAILED_COLUMN, `event_type`, the lineage columns and each scope's struct): two per
    scope. The first renames the working columns apart and exposes the table columns the scope's
    rules may name; the second evaluates the rules and renames back. A scope's struct is dropped
    after its last scope, so no struct goes further than the rules that read it. When `working`
    includes KEYS_COLUMN, rules `counted_by_key` write their keys there and are not evaluated."""
    from pyspark.sql import functions as F

    taken = {folded(leaf.name) for s in scopes for leaf in flat_fields(s.schema)}
    hidden = {name: _free_name(f"{WORKING_PREFIX}{index}", taken) for index, name in enumerate(working)}
    table_columns = [*LINEAGE_COLUMNS, RESCUED_DATA_COLUMN]
    selects: list[tuple[Column, ...]] = []
    current = list(working)
    keyed_here = KEYS_COLUMN in working
    checks: dict[Expectation, Column] = {}
    """Each rule's check, built once: it resolves against whichever scope's select it sits on."""

    def working_column(name: str) -> Column:
        return F.col(hidden[name])

    def check(rule: Expectation) -> Column:
        if rule not in checks:
            order = [working_column(name) for name in UNIQUE_ORDER]
            checks[rule] = _check(rule, [working_column(event_type)], order)
        return checks[rule]

    for index, scope in enumerate(scopes):
        named = _named(scope.schema, scope.tables)
        exposed = [flat_column(F.col(scope.struct), leaf) for leaf in named]
        kinds = {
            **TABLE_LINEAGE_TYPES,
            RESCUED_DATA_COLUMN: "string",
            **{folded(leaf.name): leaf.kind for leaf in named},
        }
        exposed += [F.col(name) for name in table_columns]
        selects.append((*[F.col(name).alias(hidden[name]) for name in current], *exposed))
        later = {s.struct for s in scopes[index + 1 :]}
        current = [name for name in current if name not in {s.struct for s in scopes} - later]
        by_rules: dict[tuple[Expectation, ...], list[str]] = {}
        for rules in scope.tables:
            by_rules.setdefault(rules.applicable, []).append(rules.table)
        made = {name: working_column(name) for name in current}
        if by_rules:
            failed_cases, key_cases = None, None
            for applicable, tables in by_rules.items():
                condition = is_in(f"`{hidden[event_type]}`", tables)
                keyed = [rule for rule in applicable if keyed_here and counted_by_key(rule, applicable)]
                value = _failures([check(rule) for rule in applicable if rule not in keyed])
                failed_cases = _case(failed_cases, condition, value)
                keys = [_key(rule, kinds) for rule in keyed]
                key_cases = _case(key_cases, condition, _failures(keys))
            made[FAILED_COLUMN] = failed_cases.otherwise(made[FAILED_COLUMN])
            if keyed_here:
                made[KEYS_COLUMN] = key_cases.otherwise(made[KEYS_COLUMN])
        selects.append(tuple(made[name].alias(name) for name in current))
    return selects


def rule_struct(schema: dict[str, Any], tables: tuple[TableRules, ...]) -> dict[str, Any]:
    """The struct (Spark JSON type) of the fields of `schema` that the rules of `tables` may
    name: what a scope of those tables over `schema` exposes."""
    return _kept(schema, {leaf.path for leaf in _named(schema, tables)})


def _named(schema: dict[str, Any], tables: tuple[TableRules, ...]) -> list[FlatField]:
    texts = list({folded(_text(rule)) for rules in tables for rule in rules.applicable})
    return [leaf for leaf in flat_fields(schema) if _may_name(leaf.name, texts)]


def _kept(struct: dict[str, Any], paths: set[tuple[str, ...]]) -> dict[str, Any]:
    """`struct` with only the leaves at `paths` and the structs that lead to them."""
    fields = []
    for entry in struct["fields"]:
        if (entry["name"],) in paths:
            fields.append(entry)
            continue
        below = {path[1:] for path in paths if len(path) > 1 and path[0] == entry["name"]}
        if below and isinstance(entry["type"], dict) and entry["type"].get("type") == "struct":
            fields.append({**entry, "type": _kept(entry["type"], below)})
    return {**struct, "fields": fields}


def _text(rule: Expectation) -> str:
    return rule.expect if rule.expect is not None else " ".join(f"`{name}`" for name in rule.unique)


def _may_name(column: str, texts: list[str]) -> bool:
    """Whether any of the rules' texts may name `column` (a superset of what Spark resolves: the
    name, or its backtick-quoted spelling, occurs in it; a `*` may name every column). Exposing
    only these keeps the scope's select as small as its rules, which Spark analyses every batch."""
    name = folded(column)
    quoted = name.replace("`", "``")
    return any("*" in text or name in text or quoted in text for text in texts)


def _check(rule: Expectation, partition: list[Column], order: list[Column]) -> Column:
    """[`action\x00name`] of `rule` where the row fails it, else []. A `unique` rule's rows are
    those of one `partition` (a table's), first in `order`."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if rule.expect is not None:
        fails = ~F.coalesce(F.expr(rule.expect), F.lit(False))
    else:
        keys = [F.col(name) for name in rule.unique]
        window = Window.partitionBy(*partition, *keys).orderBy(*order)
        fails = _no_null(keys) & (F.row_number().over(window) > F.lit(1))
    return F.when(fails, F.array(F.lit(f"{rule.action}{ITEM_SEPARATOR}{rule.name}"))).otherwise(_no_items())


def _key(rule: Expectation, kinds: dict[str, Any]) -> Column:
    """[the tally item of the row's key] for a keyed `unique` rule (`expect_key\\x00name\\x00key`),
    [] when a key column is null. The key is last, so whatever it holds is the key's."""
    from pyspark.sql import functions as F

    keys = [F.col(name) for name in rule.unique]
    item = F.concat(F.lit(f"{KEY_ITEM}{ITEM_SEPARATOR}{rule.name}{ITEM_SEPARATOR}"), key_text(rule.unique, kinds))
    return F.when(_no_null(keys), F.array(item)).otherwise(_no_items())


def key_text(names: tuple[str, ...], kinds: dict[str, Any]) -> Column:
    """One text per key value of the columns `names` (their Spark JSON types in `kinds`, by
    folded name): a single column of TEXT_KEY_KINDS or a decimal cast to string, else the
    values as JSON."""
    from pyspark.sql import functions as F

    kind = kinds.get(folded(names[0])) if len(names) == 1 else None
    if isinstance(kind, str) and (kind in TEXT_KEY_KINDS or kind.startswith("decimal")):
        return F.col(names[0]).cast("string")
    return F.to_json(F.struct(*[F.col(name) for name in names]))


def _no_null(keys: list[Column]) -> Column:
    """Whether no key column is null: a key with a null equals nothing, as in SQL."""
    from functools import reduce

    return reduce(lambda both, key: both & key.isNotNull(), keys[1:], keys[0].isNotNull())


def column_rule_selects(
    rules: tuple[Expectation, ...], working: tuple[str, ...], exposed: dict[str, Column], order: tuple[str, ...]
) -> list[tuple[Column, ...]]:
    """The two selects that evaluate `rules` of one table whose columns are `exposed` (table
    column -> Column over the `working` columns, e.g. bronze's `payload` as text): the first
    renames the working columns apart and exposes the table's, the second writes the rules a row
    fails into FAILED_COLUMN and renames back. `unique` rules order rows by the working `order`."""
    from pyspark.sql import functions as F

    taken = {folded(name) for name in exposed}
    hidden = {name: _free_name(f"{WORKING_PREFIX}{index}", taken) for index, name in enumerate(working)}
    scope = (*[F.col(name).alias(hidden[name]) for name in working], *[c.alias(n) for n, c in exposed.items()])
    ordered = [F.col(hidden[name]) for name in order]
    failed = _failures([_check(rule, [], ordered) for rule in rules])
    back = (*[F.col(hidden[name]).alias(name) for name in working], failed.alias(FAILED_COLUMN))
    return [scope, back]


def _case(cases: Column | None, condition: Column, value: Column) -> Column:
    from pyspark.sql import functions as F

    return F.when(condition, value) if cases is None else cases.when(condition, value)


def _failures(checks: list[Column]) -> Column:
    """The rules a row fails of a table whose rules' checks are `checks` (each a list of one
    item or none), joined with `concat`: Spark generates code for it, where `array_compact` is a
    higher-order function that Spark evaluates row by row without generated code (profiled under
    the sustained load, a tenth of the JVM's time)."""
    from pyspark.sql import functions as F

    if not checks:
        return _no_items()
    return checks[0] if len(checks) == 1 else F.concat(*checks)


def _no_items() -> Column:
    from pyspark.sql import functions as F

    return F.array().cast("array<string>")


def _free_name(base: str, taken: set[str]) -> str:
    name = base
    while folded(name) in taken:
        name += "_"
    return name


def failed_names(failed: Column) -> Column:
    """The names of the rules in a FAILED_COLUMN value, joined with `, ` (no rule name holds the
    separator, so each `action\x00` is an entry's prefix)."""
    from pyspark.sql import functions as F

    actions = "|".join(get_args(Action))
    return F.regexp_replace(F.array_join(failed, ", "), f"({actions}){ITEM_SEPARATOR}", "")


def fails_action(failed: Column, action: Action) -> Column:
    """Whether a FAILED_COLUMN value holds a rule whose action is `action`."""
    from pyspark.sql import functions as F

    return F.concat(F.lit(RULES_SEPARATOR), F.array_join(failed, RULES_SEPARATOR)).contains(
        f"{RULES_SEPARATOR}{action}{ITEM_SEPARATOR}"
    )


EXPECTATION_REASON = "expectation"
"""Quarantine reason of a row a `drop` rule removed; its detail names every rule it failed."""


@dataclass(frozen=True)
class RuleOutcome:
    """What a row's failed rules (FAILED_COLUMN) make of it, as Columns of the select after the
    rules: its route, quarantine reason and detail, and its tally items."""

    route: Column
    reason: Column
    detail: Column
    items: Column


def rule_outcome(
    evaluated: Column,
    table: Column,
    route: Column,
    reason: Column,
    detail: Column,
    halt_route: str,
    drop_route: str,
    actions: Collection[Action],
    keys: Column | None = None,
) -> RuleOutcome:
    """A row its table evaluated (`evaluated`) goes to `halt_route` if it failed a `fail` rule,
    else to `drop_route` (reason `expectation`, the rules it failed) if it failed a `drop` rule;
    every evaluated row carries its tally items, under `table`, and its `keys` (KEYS_COLUMN, items
    already). Other rows keep `route`, `reason` and `detail`. `actions`: those of the rules
    evaluated; a row is not searched for an action no rule has (warn rules alone route nothing).

    A row without items carries an empty list, never a null: Spark hands rows to the sink's
    Python workers in Arrow batches whose size it checks after every row, and Arrow's list
    vector fills the offsets of every null since the last value on each check: a column of
    mostly nulls costs the square of the batch's rows."""
    from pyspark.sql import functions as F

    none = _no_items()
    failed = F.coalesce(F.col(FAILED_COLUMN), none)
    halt = evaluated & fails_action(failed, "fail") if "fail" in actions else F.lit(False)
    drop = evaluated & fails_action(failed, "drop") if "drop" in actions else F.lit(False)
    dropped = ~halt & drop
    items = tally_items(table, failed, halt | drop)
    if keys is not None:
        items = F.concat(F.coalesce(items, none), F.coalesce(keys, none))
    return RuleOutcome(
        route=F.when(halt, F.lit(halt_route)).when(drop, F.lit(drop_route)).otherwise(route),
        reason=F.when(dropped, F.lit(EXPECTATION_REASON)).otherwise(reason),
        detail=F.when(dropped, failed_names(failed)).otherwise(detail),
        items=F.coalesce(F.when(evaluated, items), none),
    )


def tally_items(event_type: Column, failed: Column, held: Column) -> Column:
    """A failing row's tally items: the rules it failed, as one item, and whether a rule held it
    out of its table (dropped or halted); none for a passing row, which costs nothing to count:
    its table's route counts it. One item for all of them, not one per rule: an item per rule
    needs `transform`, which Spark does not generate code for, and one such expression leaves
    the whole select out of the stage's generated code (one more copy of every row)."""
    from pyspark.sql import functions as F

    separator = F.lit(ITEM_SEPARATOR)
    failures = F.array(
        F.concat(F.lit(FAILED_ITEM), separator, event_type, separator, F.array_join(failed, RULES_SEPARATOR))
    )
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
    and rows failed per rule, over every route of the batch: a keyed rule's are the rows beyond
    the first of each key, whichever tasks and routes they went through."""
    evaluated = {table: sum(tallies.get(table, {}).values()) for table in tables}
    failed: dict[str, dict[str, int]] = {}
    keyed: dict[tuple[str, str], dict[str, int]] = {}
    for route, items in item_tallies.items():
        for item, rows in items.items():
            kind, _, rest = item.partition(ITEM_SEPARATOR)
            if kind == KEY_ITEM and route in evaluated:
                rule, _, key = rest.partition(ITEM_SEPARATOR)
                by_key = keyed.setdefault((route, rule), {})
                by_key[key] = by_key.get(key, 0) + rows
            elif kind == HELD_ITEM and rest in evaluated:
                evaluated[rest] += rows
            elif kind == FAILED_ITEM and ITEM_SEPARATOR in rest:
                table, _, failures = rest.partition(ITEM_SEPARATOR)
                by_rule = failed.setdefault(table, {})
                for rule in failures.split(RULES_SEPARATOR):
                    name = rule.partition(ITEM_SEPARATOR)[2]
                    by_rule[name] = by_rule.get(name, 0) + rows
    for (table, rule), by_key in keyed.items():
        beyond_first = sum(by_key.values()) - len(by_key)
        if beyond_first:
            by_rule = failed.setdefault(table, {})
            by_rule[rule] = by_rule.get(rule, 0) + beyond_first
    return {table: TableCounts(evaluated[table], failed.get(table, {})) for table in tables}


def held_rows(items: dict[str, int]) -> int:
    """Of one route's item tallies: the rows rules held out of their tables (on the quarantine
    route, the rows drop rules sent there)."""
    return sum(rows for item, rows in items.items() if item.partition(ITEM_SEPARATOR)[0] == HELD_ITEM)
