"""The bronze/silver streaming pipeline: the only package that needs a running Spark.

from streamops.pipeline import LandingInput, RunOptions, run_pipeline
run_pipeline(RunOptions(lake="lake", input=LandingInput("landing"), until_idle=True))

Running it needs `streamops[pipeline]`; the parts that need no Spark work on a plain
`pip install streamops`: the generator, column promotion, the schema-compatibility rules, the
settings and the data-quality rules (`Expectation`, `load_expectations`). Each module that
needs Spark checks for it when it is imported (`streamops.core.extras.require`), so a missing
extra fails with one line naming it.
"""

from streamops.core.public_names import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "CdcSettings": "cdc.cdc_settings",
        "ConnectorName": "delta_connector.connector",
        "Expectation": "expectations.rules",
        "ExpectationSet": "expectations.rules",
        "GeneratorSettings": "generator.settings",
        "KafkaInput": "bronze.kafka_input",
        "LandingInput": "bronze.landing_input",
        "RunOptions": "run.pipeline_run",
        "SilverSettings": "silver.silver_stream",
        "build_spark": "run.spark_session",
        "change_mode": "run.ingest_modes",
        "generate": "generator.run",
        "load_expectations": "expectations.rules_file",
        "plan_promotion": "silver.column_promotion",
        "promote_column": "silver.column_promotion",
        "run_pipeline": "run.pipeline_run",
        "summarize_lake": "lake_summary",
    },
)
