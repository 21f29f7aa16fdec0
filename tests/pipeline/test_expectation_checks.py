"""A rule Spark cannot run refuses the run before any query starts, in one line naming the rule
and its table; a rule on a column no table has yet does not."""

from __future__ import annotations

import pytest

from streamops.core.lake_layout import LakeLayout
from streamops.pipeline import Expectation, ExpectationSet
from streamops.pipeline.exceptions import PipelineConfigError

pytestmark = pytest.mark.spark


def refusal(spark, rules: ExpectationSet) -> str:
    from streamops.pipeline.expectations.rule_checks import check_expectations

    with pytest.raises(PipelineConfigError) as caught:
        check_expectations(spark, rules)
    line = str(caught.value)
    assert "\n" not in line, line
    return line


def test_a_condition_that_does_not_parse_is_refused_naming_rule_and_table(spark, capsys):
    rules = ExpectationSet(tables={"purchase": (Expectation("price_nonneg", "drop", expect="price >=\n  0 0"),)})
    line = refusal(spark, rules)
    assert line.startswith(
        "expectation `price_nonneg` of table `purchase` is not a condition Spark can run ([PARSE_SYNTAX_ERROR]"
    )
    assert line.endswith("fix `price >= 0 0` in the expectations")
    assert "SQLQueryContextLogger" not in capsys.readouterr().err


def test_an_unknown_function_is_refused_even_beside_unknown_columns(spark):
    rules = ExpectationSet(default=(Expectation("has_id", expect="event_id IS NOT NULL AND no_such_fn(price) > 0"),))
    assert refusal(spark, rules).startswith(
        "expectation `has_id` of default rules is not a condition Spark can run ([UNRESOLVED_ROUTINE]"
    )


@pytest.mark.parametrize(
    ("expect", "condition"),
    [("count(*) > 0", "INVALID_WHERE_CONDITION"), ("abs(1, 2) > 0", "WRONG_NUM_ARGS"), ("1 + 1", "DATATYPE_MISMATCH")],
)
def test_a_condition_no_row_filter_can_be_is_refused(spark, expect, condition):
    rules = ExpectationSet(bronze=(Expectation("whole_batch", expect=expect),))
    assert f"expectation `whole_batch` of bronze rules is not a condition Spark can run ([{condition}" in refusal(
        spark, rules
    )


def test_rules_on_columns_no_table_has_yet_pass(spark):
    from streamops.pipeline.expectations.rule_checks import check_expectations

    rules = ExpectationSet(
        default=(Expectation("has_id", expect="event_id IS NOT NULL"),),
        tables={
            "purchase": (
                Expectation("price_nonneg", "drop", expect="price >= 0 AND lower(currency) IN ('eur', 'usd')"),
                Expectation("nested", expect="item.sku IS NOT NULL AND tags['kind'] <> 'test'"),
                Expectation("one_order", unique=("order_id",)),
            )
        },
        bronze=(Expectation("recent", "fail", expect="event_time > current_timestamp() - INTERVAL 1 DAY"),),
    )
    check_expectations(spark, rules)


@pytest.mark.parametrize(
    "rule",
    [
        Expectation("recent", "fail", expect="ingested_at > current_timestamp() - INTERVAL 1 DAY"),
        Expectation("one_batch", unique=("batch_id",)),
    ],
)
def test_a_bronze_rule_naming_a_column_bronze_lines_do_not_have_is_refused(spark, rule):
    """Bronze's columns are known before the run: a rule naming another is a typo, or a column
    the commit fills (`batch_id`, `ingest_time`)."""
    line = refusal(spark, ExpectationSet(bronze=(rule,)))
    assert line.startswith(f"expectation `{rule.name}` of bronze rules cannot run on bronze's columns (")
    assert line.endswith(
        "a bronze rule may name event_type, event_id, event_time, schema_hash, payload, "
        "source_file, kafka_topic, kafka_partition, kafka_offset, kafka_timestamp, kafka_key"
    )


def test_the_run_refuses_before_any_query_starts(spark, tmp_path):
    from streamops.pipeline.bronze.landing_input import LandingInput
    from streamops.pipeline.run.pipeline_run import RunOptions, run_pipeline

    (tmp_path / "landing").mkdir()
    rules = ExpectationSet(tables={"purchase": (Expectation("price_nonneg", expect="price >>= 0"),)})
    options = RunOptions(
        lake=tmp_path / "lake", input=LandingInput(tmp_path / "landing"), until_idle=True, expectations=rules
    )
    with pytest.raises(
        PipelineConfigError, match=r"^expectation `price_nonneg` of table `purchase` is not a condition"
    ):
        run_pipeline(options)
    lake = LakeLayout.at(tmp_path / "lake")
    assert spark.streams.active == []
    assert not lake.checkpoints_root.exists() and not lake.bronze_events.exists()
