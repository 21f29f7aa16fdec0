"""Whether each rule's `expect` is a condition Spark can run, judged once before the run's
queries start, so a typo stops the run in one line instead of failing a group mid-stream.

Spark's parser and analyzer judge, against a table with no columns: a condition that does not
parse, calls a function the session does not know, or could never be a row filter (an
aggregate, a window, a non-boolean literal) is refused by its error class. A column the table
has no column for is not refused: the tables are not known before the run, and a rule on a
column a table does not have yet is reported as not applicable while the run goes on. Bronze's
columns are known: a bronze rule is judged against them, and one naming another is refused."""

from __future__ import annotations

from streamops.core.extras import require

require("pipeline", __name__)

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from pyspark.errors import PySparkException
from pyspark.logger import PySparkLogger
from pyspark.sql import functions as F

from streamops.pipeline.exceptions import PipelineConfigError
from streamops.pipeline.expectations.rules import ExpectationSet
from streamops.pipeline.lake_tables import BRONZE_RULE_COLUMNS, BRONZE_SCHEMA

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

NOT_YET_KNOWN = ("UNRESOLVED_COLUMN", "UNRESOLVED_FIELD", "UNRESOLVED_MAP_KEY")
"""Error classes (before their `.subclass`) that only say a column is missing: a table may
have it by the time the rule applies."""
QUERY_CONTEXT_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")
"""PySpark logs every analysis error with a query context at ERROR on these; a refused rule is
reported once, as the run's one line."""


def check_expectations(spark: SparkSession, rules: ExpectationSet) -> None:
    """Raise `PipelineConfigError` naming the first rule whose `expect` Spark cannot run, and
    its table; return when every one can (or names only columns not known yet)."""
    if not rules:
        return
    no_columns = spark.range(0).select()
    with _quiet_query_context_logs():
        for where, section in rules.sections():
            for rule in section:
                if rule.expect is None:
                    continue
                try:
                    no_columns.where(F.expr(rule.expect)).schema  # noqa: B018 - analysing it is the check
                except PySparkException as error:
                    condition = error.getCondition() or ""
                    if condition.split(".", 1)[0] in NOT_YET_KNOWN:
                        continue
                    raise PipelineConfigError(
                        f"expectation `{rule.name}` of {where} is not a condition Spark can run "
                        f"({_first_line(error)}): fix `{' '.join(rule.expect.split())}` in the expectations"
                    ) from None
        _check_bronze(spark, rules)


def _check_bronze(spark: SparkSession, rules: ExpectationSet) -> None:
    """Each bronze rule resolves against bronze's columns, or the run is refused naming it."""
    from pyspark.sql.pandas.types import from_arrow_schema

    if not rules.bronze:
        return
    import pyarrow as pa

    columns = pa.schema([BRONZE_SCHEMA.field(name) for name in BRONZE_RULE_COLUMNS])
    bronze = spark.createDataFrame([], from_arrow_schema(columns))
    for rule in rules.bronze:
        named = [F.expr(rule.expect)] if rule.expect is not None else [F.col(name) for name in rule.unique]
        try:
            bronze.select(*named).schema  # noqa: B018 - analysing it is the check
        except PySparkException as error:
            raise PipelineConfigError(
                f"expectation `{rule.name}` of bronze rules cannot run on bronze's columns ({_first_line(error)}): "
                f"a bronze rule may name {', '.join(BRONZE_RULE_COLUMNS)}"
            ) from None


@contextmanager
def _quiet_query_context_logs() -> Iterator[None]:
    loggers = [PySparkLogger.getLogger(name) for name in QUERY_CONTEXT_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _first_line(error: PySparkException, limit: int = 200) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0][:limit] if lines else str(error.getCondition())
