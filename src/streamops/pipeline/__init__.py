"""The bronze/silver streaming pipeline: the only package that needs a running Spark.

from streamops.pipeline import RunOptions, run_pipeline
run_pipeline(RunOptions(lake="lake", landing="landing", until_idle=True))
"""

from streamops.core.extras import require
from streamops.core.public_names import lazy_exports

require("pipeline", __name__)

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "GeneratorSettings": "generator.settings",
        "RunOptions": "run.pipeline_run",
        "build_spark": "run.spark_session",
        "generate": "generator.run",
        "plan_promotion": "silver.column_promotion",
        "promote_column": "silver.column_promotion",
        "run_pipeline": "run.pipeline_run",
        "summarize_lake": "lake_summary",
    },
)
