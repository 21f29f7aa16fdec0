"""The bronze/silver streaming pipeline: the only package that needs a running Spark.

from streamops.pipeline import RunOptions, run_pipeline
run_pipeline(RunOptions(lake="lake", landing="landing", until_idle=True))

Running it needs `streamops[pipeline]`; the parts that need no Spark work on a plain
`pip install streamops`: the generator, column promotion, the schema-compatibility rules and
the settings. Each module that needs Spark checks for it when it is imported
(`streamops.core.extras.require`), so a missing extra fails with one line naming it.
"""

from streamops.core.public_names import lazy_exports

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
