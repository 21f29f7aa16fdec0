"""Rules files and the Python API: what they hold, and one line naming the file, the table and
the rule for every way a rules file can be wrong. Spark-free."""

from __future__ import annotations

import textwrap

import pytest

from streamops.pipeline import Expectation, ExpectationSet, load_expectations
from streamops.pipeline.exceptions import PipelineConfigError

ISSUE_EXAMPLE = """\
default:                       # every silver table
  - {name: has_id, expect: "event_id IS NOT NULL", action: warn}
tables:
  purchase:                    # a silver table (event type) or CDC table
    - {name: price_nonneg, expect: "price >= 0", action: drop}
    - {name: one_order, unique: [order_id], action: warn}
"""

ISSUE_RULES = ExpectationSet(
    default=(Expectation("has_id", "warn", expect="event_id IS NOT NULL"),),
    tables={
        "purchase": (
            Expectation("price_nonneg", "drop", expect="price >= 0"),
            Expectation("one_order", "warn", unique=("order_id",)),
        )
    },
)


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def refusal(path) -> str:
    with pytest.raises(PipelineConfigError) as caught:
        load_expectations(path)
    line = str(caught.value)
    assert "\n" not in line and line.startswith(f"{path}: "), line
    return line


def test_the_issues_example_reads_as_written(tmp_path):
    rules = load_expectations(write(tmp_path, "rules.yaml", ISSUE_EXAMPLE))
    assert rules == ISSUE_RULES
    assert [rule.name for rule in rules.for_table("purchase")] == ["has_id", "price_nonneg", "one_order"]
    assert [rule.name for rule in rules.for_table("login")] == ["has_id"]
    assert rules.bronze == ()


def test_toml_holds_the_same_rules_as_yaml(tmp_path):
    toml = """\
        [[default]]
        name = "has_id"
        expect = "event_id IS NOT NULL"

        [[tables.purchase]]
        name = "price_nonneg"
        expect = "price >= 0"
        action = "drop"

        [[tables.purchase]]
        name = "one_order"
        unique = ["order_id"]
    """
    assert load_expectations(write(tmp_path, "rules.toml", toml)) == ISSUE_RULES


def test_bronze_rules_and_a_cdc_table_are_read_and_action_defaults_to_warn(tmp_path):
    yaml = """\
        tables:
          public.orders:
            - {name: "amount is set", expect: "amount IS NOT NULL", action: fail}
        bronze:
          - name: has_value
            expect: value IS NOT NULL
    """
    rules = load_expectations(write(tmp_path, "rules.yml", yaml))
    assert rules.bronze == (Expectation("has_value", "warn", expect="value IS NOT NULL"),)
    assert rules.for_table("public.orders") == (Expectation("amount is set", "fail", expect="amount IS NOT NULL"),)


def test_a_tables_own_rule_wins_over_a_default_of_the_same_name(tmp_path):
    yaml = """\
        default: [{name: has_id, expect: "event_id IS NOT NULL"}]
        tables:
          purchase: [{name: has_id, expect: "order_id IS NOT NULL", action: drop}]
    """
    rules = load_expectations(write(tmp_path, "rules.yaml", yaml))
    assert rules.for_table("purchase") == (Expectation("has_id", "drop", expect="order_id IS NOT NULL"),)


def test_an_empty_file_holds_no_rules(tmp_path):
    assert not load_expectations(write(tmp_path, "rules.yaml", "# nothing yet\n"))
    assert not load_expectations(write(tmp_path, "rules.toml", ""))


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("defaults: []\n", "unknown key `defaults` at the top"),
        ("tables: {purchase: [{name: p, expect: 'price > 0', level: drop}]}\n", "table `purchase`, rule `p`: unknown key `level`"),
        ("tables: {purchase: [{name: p, expect: 'price > 0'}, {expect: 'x > 0'}]}\n", "table `purchase`, rule 2 has no `name`"),
        ("tables: {purchase: [{name: p, expect: 'price > 0', unique: [id]}]}\n", "table `purchase`, rule `p`: give exactly one of `expect`"),
        ("default: [{name: p, action: drop}]\n", "default rules, rule `p`: give exactly one of `expect`"),
        ("bronze: [{name: p, expect: 'value > 0', action: dropp}]\n", "bronze rules, rule `p`: action `dropp` is not one of warn, drop, fail"),
        ("tables: {purchase: [{name: p, expect: 'a > 0'}, {name: p, expect: 'b > 0'}]}\n", "table `purchase`: two rules are named `p`"),
        ("tables: {../etc: [{name: p, expect: 'a > 0'}]}\n", "`../etc` is not a valid table name"),
        ("tables: {7: [{name: p, expect: 'a > 0'}]}\n", "`7` is not a valid table name"),
        ("tables: {purchase: [{name: p, unique: order_id}]}\n", "table `purchase`, rule `p`: `unique` takes a list of column names"),
        ("tables: {purchase: [{name: p, unique: []}]}\n", "table `purchase`, rule `p`: give exactly one of `expect`"),
        ("tables: {purchase: [{name: p, unique: [id, id]}]}\n", "table `purchase`, rule `p`: `unique` names a column twice"),
        ("tables: {purchase: [{name: p, expect: yes}]}\n", "table `purchase`, rule `p`: `expect` takes a Spark SQL condition as a string"),
        ("tables: {purchase: [{name: 'a,b', expect: 'x > 0'}]}\n", "table `purchase`, rule `a,b`: `a,b` is not a valid rule name"),
        ("tables: {purchase: {name: p, expect: 'x > 0'}}\n", "table `purchase`: give a list of rules"),
        ("tables: [purchase]\n", "`tables` maps each table name to its list of rules"),
        ("- {name: p, expect: 'x > 0'}\n", "give a mapping with `default`, `tables`, `bronze` at the top"),
        ("tables:\n  purchase: [{name: p, expect: 'a > 0'}]\n  purchase: [{name: q, expect: 'b > 0'}]\n", "not valid YAML at line 3: `purchase` is given twice"),
        ("tables: {purchase: [{name: p, expect: 'a > 0'}\n", "not valid YAML at line 2"),
    ],
)  # fmt: skip
def test_a_malformed_yaml_file_is_refused_in_one_line_naming_table_and_rule(tmp_path, text, says):
    assert says in refusal(write(tmp_path, "rules.yaml", text))


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('[[tables.purchase]]\nname = "p"\nexpect = "a > 0"\naction = "block"\n', "table `purchase`, rule `p`: action `block` is not one of"),
        ('[[tables.purchase]]\nexpect = "a > 0"\n', "table `purchase`, rule 1 has no `name`"),
        ('[[tables.purchase]]\nname = "p"\nexpect = "a > 0"\n[[tables.purchase]]\nname = "p"\nunique = ["id"]\n', "two rules are named `p`"),
        ('[[tables.purchase]]\nname = "p"\nexpect = "a > 0"\n[[tables."a/b"]]\nname = "q"\nexpect = "b > 0"\n', "`a/b` is not a valid table name"),
        ('[[tables.purchase]]\nname = "p"\nexpect = "a > 0"\nwhen = 1\n', "table `purchase`, rule `p`: unknown key `when`"),
        ('[[tables.purchase]]\nname = "p"\nexpect = \n', "not valid TOML"),
    ],
)  # fmt: skip
def test_a_malformed_toml_file_is_refused_in_one_line_naming_table_and_rule(tmp_path, text, says):
    assert says in refusal(write(tmp_path, "rules.toml", text))


def test_a_missing_unreadable_or_misnamed_file_is_refused_in_one_line(tmp_path):
    assert "no such expectations file" in refusal(tmp_path / "absent.yaml")
    assert "ends in .yaml, .yml or .toml" in refusal(write(tmp_path, "rules.json", "{}"))
    (tmp_path / "latin1.yaml").write_bytes("default: [{name: caf\xe9, expect: 'a > 0'}]\n".encode("latin-1"))
    assert "not UTF-8 text" in refusal(tmp_path / "latin1.yaml")
    (tmp_path / "folder.yaml").mkdir()
    assert "cannot read the expectations file" in refusal(tmp_path / "folder.yaml")


def test_the_python_api_holds_rules_to_the_same_shape():
    rules = ExpectationSet(tables={"purchase": [Expectation("one_order", unique=["order_id"])]})
    assert rules.for_table("purchase") == (Expectation("one_order", "warn", unique=("order_id",)),)
    with pytest.raises(PipelineConfigError, match=r"^expectation `p`: action `stop` is not one of warn, drop, fail$"):
        Expectation("p", "stop", expect="a > 0")  # type: ignore[arg-type]
    with pytest.raises(PipelineConfigError, match=r"^expectation `p`: give exactly one of"):
        Expectation("p")
    with pytest.raises(PipelineConfigError, match=r"^table `purchase`: two rules are named `p`"):
        ExpectationSet(tables={"purchase": (Expectation("p", expect="a > 0"), Expectation("p", expect="b > 0"))})
    with pytest.raises(PipelineConfigError, match=r"^`a b/c` is not a valid table name"):
        ExpectationSet(tables={"a b/c": ()})


@pytest.mark.parametrize("command", [["run", "--lake", "lake", "--landing", "landing", "--until-idle"], ["demo"]])
@pytest.mark.parametrize(
    ("text", "says"),
    [
        (None, "rules.yaml: no such expectations file"),
        ("tables: {purchase: [{name: p, expect: 'a > 0', action: block}]}\n", "rules.yaml: table `purchase`, rule `p`: action `block`"),
    ],
)  # fmt: skip
def test_a_bad_rules_file_is_refused_in_one_line_before_spark_starts(
    tmp_path, monkeypatch, capsys, command, text, says
):
    from streamops.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "landing").mkdir()
    if text is not None:
        write(tmp_path, "rules.yaml", text)
    code = main([*command, "--expectations", "rules.yaml"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith(f"streamops: error: {says}"), err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["landing", "rules.yaml"][: 2 if text else 1]


def _field(name: str, kind) -> dict:
    return {"name": name, "type": kind, "nullable": True, "metadata": {}}


def test_the_struct_parsed_for_rules_holds_only_the_fields_they_may_name():
    """Silver parses, for its rules, a struct of the fields they name rather than the whole
    union of a layer's schemas (written into every row of the batch)."""
    from streamops.pipeline.expectations.rule_columns import TableRules, rule_struct

    session = {"type": "struct", "fields": [_field("id", "string"), _field("seq", "long")]}
    player = {"type": "struct", "fields": [_field("id", "string"), _field("level", "long")]}
    context = {"type": "struct", "fields": [_field("session", session), _field("client", "string")]}
    schema = {
        "type": "struct",
        "fields": [
            _field("event_id", "string"),
            _field("player", player),
            _field("context", context),
            _field("price", "double"),
            _field("tags", {"type": "array", "elementType": "string", "containsNull": True}),
        ],
    }
    rules = TableRules(
        "purchase",
        1,
        (
            Expectation("has_player", "warn", expect="player__id IS NOT NULL AND _source_file IS NOT NULL"),
            Expectation("one_session", "warn", unique=("context__session__seq",)),
        ),
    )
    kept = rule_struct(schema, (rules,))
    assert kept == {
        "type": "struct",
        "fields": [
            _field("player", {"type": "struct", "fields": [_field("id", "string")]}),
            _field(
                "context",
                {
                    "type": "struct",
                    "fields": [_field("session", {"type": "struct", "fields": [_field("seq", "long")]})],
                },
            ),
        ],
    }
    assert rule_struct(
        schema, (TableRules("purchase", 1, (Expectation("any", "warn", expect="size(tags) > 0"),)),)
    ) == {
        "type": "struct",
        "fields": [_field("tags", {"type": "array", "elementType": "string", "containsNull": True})],
    }


def test_a_rows_outcome_uses_no_higher_order_function_and_counts_each_rule_it_failed(spark):
    """A row's route, detail and tally items come from its failed rules through string functions,
    which Spark generates code for (one higher-order function would leave the whole select out of
    the stage's generated code); `counted` reads each rule back from the row's one item."""
    from pyspark.sql import functions as F

    from streamops.pipeline.expectations.rule_columns import FAILED_COLUMN, TableCounts, counted, rule_outcome

    rows = spark.createDataFrame(
        [("t", ["warn\x00a"]), ("t", ["drop\x00b", "warn\x00a"]), ("t", ["fail\x00c"]), ("t", [])],
        f"table string, {FAILED_COLUMN} array<string>",
    )
    nothing = F.lit(None).cast("string")
    actions = ("warn", "drop", "fail")
    outcome = rule_outcome(F.lit(True), F.col("table"), F.lit("t"), nothing, nothing, "halt", "quarantine", actions)
    out = rows.select(outcome.route.alias("route"), outcome.detail.alias("detail"), outcome.items.alias("items"))

    assert "lambdafunction" not in out._jdf.queryExecution().optimizedPlan().toString()
    found = out.collect()
    assert [(r["route"], r["detail"]) for r in found] == [
        ("t", None),
        ("quarantine", "b, a"),
        ("halt", None),
        ("t", None),
    ]
    items: dict[str, int] = {}
    for row in found:
        for item in row["items"]:
            items[item] = items.get(item, 0) + 1
    routed = {"t": {"": 2}}
    assert counted(routed, {"t": items}, {"t"}) == {"t": TableCounts(4, {"a": 2, "b": 1, "c": 1})}


def test_a_rows_failures_are_searched_only_for_the_actions_its_rules_have(spark):
    """Where the rules are all `warn`, no row is searched for a drop or fail (a string built and
    searched per row, for nothing): every row keeps its route and still counts its failures."""
    from pyspark.sql import functions as F

    from streamops.pipeline.expectations.rule_columns import FAILED_COLUMN, rule_outcome

    rows = spark.createDataFrame([("t", ["warn\x00a"]), ("t", [])], f"table string, {FAILED_COLUMN} array<string>")
    nothing = F.lit(None).cast("string")
    outcome = rule_outcome(F.lit(True), F.col("table"), F.lit("t"), nothing, nothing, "halt", "quarantine", {"warn"})
    out = rows.select(outcome.route.alias("route"), outcome.items.alias("items"))

    assert "contains(" not in out._jdf.queryExecution().optimizedPlan().toString().lower()
    assert [(r["route"], len(r["items"])) for r in out.collect()] == [("t", 1), ("t", 0)]


def test_a_keys_text_is_its_value_where_spark_casts_it_to_one_text_per_value_else_json(spark):
    """A keyed rule's rows carry their key as text, counted per key: the value itself where
    Spark's cast gives each value its own text (no JSON written for every row), JSON for
    several columns, floating point and nested values. Separators in a key stay in the key."""
    from datetime import datetime
    from decimal import Decimal

    from streamops.pipeline.expectations.rule_columns import key_text

    array = {"type": "array", "elementType": "string", "containsNull": True}
    kinds = {
        "id": "string",
        "n": "long",
        "price": "double",
        "at": "timestamp",
        "amount": "decimal(10,2)",
        "tags": array,
    }
    rows = spark.createDataFrame(
        [("a\x00b", 5, 1.5, datetime(2026, 1, 2, 3, 4, 5, 6), Decimal("1.50"), ["x"])],
        "id string, n long, price double, at timestamp, amount decimal(10,2), tags array<string>",
    )
    keys = [("id",), ("n",), ("at",), ("amount",), ("price",), ("id", "n"), ("tags",)]

    texts = rows.select(*[key_text(names, kinds).alias(str(i)) for i, names in enumerate(keys)]).first()

    assert list(texts) == [
        "a\x00b",
        "5",
        "2026-01-02 03:04:05.000006",
        "1.50",
        '{"price":1.5}',
        '{"id":"a\\u0000b","n":5}',
        '{"tags":["x"]}',
    ]


def test_a_keyed_rules_failures_are_its_rows_beyond_each_keys_first_in_the_route_of_their_table():
    """A key item names its rule, not its table: the route that carried it is the table (a
    halted batch's items are on the halt route, and no counts of it are written)."""
    from streamops.pipeline.expectations.rule_columns import TableCounts, counted

    items = {
        "t": {"expect_key\x00one\x00a": 3, "expect_key\x00one\x00b\x00c": 1, "expect_key\x00other\x00a": 1},
        "u": {"expect_key\x00one\x00a": 1},
        "halt": {"expect_key\x00one\x00a": 5},
    }

    found = counted({"t": {"": 4}, "u": {"": 1}}, items, {"t", "u"})

    assert found == {"t": TableCounts(4, {"one": 2}), "u": TableCounts(1, {})}
