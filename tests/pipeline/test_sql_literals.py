"""Values written into Spark SQL text read back unchanged, whatever characters they hold."""

from __future__ import annotations

from pyspark.sql import functions as F

from streamops.pipeline.runtime.sql_literals import is_in, string_literal

AWKWARD = ["plain", "it's", "back\\slash", "nul\x00inside", "tab\tand\nnewline", "\x7f", 'quote"d', "ünï\U0001f600", ""]


def test_every_value_reads_back_as_written(spark):
    row = spark.range(1).select(*[F.expr(string_literal(v)).alias(f"c{i}") for i, v in enumerate(AWKWARD)]).first()
    assert list(row) == AWKWARD


def test_in_matches_exactly_the_listed_values(spark):
    frame = spark.createDataFrame([(v,) for v in AWKWARD + ["other", "nul"]], "v string")
    kept = frame.where(is_in("v", AWKWARD[:5])).collect()
    assert sorted(r.v for r in kept) == sorted(AWKWARD[:5])
    assert frame.where(is_in("v", [])).count() == 0
