"""`streamops lake promote` on a lake written with delta-rs: no Spark."""

from __future__ import annotations

import pytest
from deltalake import DeltaTable
from promotion_lake import EVENT_TYPE, lake_with_a_rescued_score

from streamops.pipeline.exceptions import PipelineConfigError
from streamops.pipeline.registry.schema_compat import WIDENINGS
from streamops.pipeline.registry.schema_registry import SchemaRegistry
from streamops.pipeline.silver.column_promotion import ARROW_TYPES, plan_promotion, promote_column


def test_a_promotion_widens_the_column_and_moves_the_rescued_value_back(tmp_path):
    lake = lake_with_a_rescued_score(tmp_path)

    plan = plan_promotion(lake, EVENT_TYPE, "score", "double")
    assert (plan.old_type, plan.new_type, plan.rows, plan.recorded) == ("long", "double", 0, False)
    done = promote_column(lake, EVENT_TYPE, "score", "double")

    assert (done.rows, done.rescued_moved, done.recorded) == (2, 1, True)
    rows = DeltaTable(str(lake.silver(EVENT_TYPE))).to_pyarrow_table().sort_by("score").to_pylist()
    assert rows == [{"score": 1.0, "_rescued_data": None}, {"score": 2.5, "_rescued_data": None}]
    applied = SchemaRegistry.load(lake.schema_registry).applied_schema(EVENT_TYPE)
    assert applied["fields"][0]["type"] == "double"
    again = promote_column(lake, EVENT_TYPE, "score", "double")
    assert (again.rows, again.recorded) == (0, False)


def test_a_promotion_to_a_narrower_type_is_refused(tmp_path):
    lake = lake_with_a_rescued_score(tmp_path)
    with pytest.raises(PipelineConfigError, match="can be promoted to"):
        plan_promotion(lake, EVENT_TYPE, "score", "integer")


def test_each_promotion_target_maps_to_the_arrow_type_pyspark_gives_it():
    from pyspark.sql import types
    from pyspark.sql.pandas import types as arrow

    assert set(ARROW_TYPES) == set().union(*WIDENINGS.values())
    fields = [{"name": name, "type": name, "nullable": True, "metadata": {}} for name in ARROW_TYPES]
    schema = arrow.to_arrow_schema(types.StructType.fromJson({"type": "struct", "fields": fields}))
    assert {field.name: field.type for field in schema} == ARROW_TYPES
