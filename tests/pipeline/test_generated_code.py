"""A steady stream runs the same generated code every batch.

Spark compiles each query's expressions to Java (Janino), and the JVM then compiles the hot
classes again (the JIT); identical code is found in Spark's cache and costs nothing. A value
that changes every batch (a batch id, an ingest time) written as a literal would be inlined into
the code: a new class for every batch, compiled again by Janino and the JIT (BENCHMARKS.md), so
per-batch values are filled in by the sink instead (pipeline/delta_connector/write_plan.py).
Counted with Spark's own metric of Janino compilations. Silver also builds its projection's
Columns once per schema change, not per batch (each is Py4J calls into the JVM).
"""

from __future__ import annotations

from small_landing import event, write_events

from streamops.core.lake_layout import LakeLayout
from streamops.pipeline.bronze.bronze_stream import BronzeBatchWriter
from streamops.pipeline.bronze.landing_input import LandingInput
from streamops.pipeline.delta_connector.connector import EmbeddedDelta
from streamops.pipeline.pipeline_events import Unmonitored
from streamops.pipeline.run.supervisor import PipelineSettings, Supervisor
from streamops.pipeline.silver import silver_stream
from streamops.pipeline.silver.silver_stream import SilverGroupWriter, SilverSettings


class CompilationsPerBatch:
    """Janino compilations counted after each batch of each stream."""

    def __init__(self, spark) -> None:
        self.metric = spark.sparkContext._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()
        self.after: dict[str, list[int]] = {}

    def record(self, stream: str) -> None:
        self.after.setdefault(stream, []).append(self.metric.getCount())

    def new_after_first(self, stream: str) -> list[int]:
        """New compilations in each batch after the first (bronze's second batch tests the
        variations the first one registered: new code, once)."""
        counts = self.after[stream]
        return [later - earlier for earlier, later in zip(counts, counts[1:])]


def test_batches_after_the_first_compile_no_new_code(spark, tmp_path, monkeypatch):
    lake, landing = LakeLayout.at(tmp_path / "lake"), tmp_path / "landing"
    for n in range(4):
        write_events(
            landing,
            f"{n}.ndjson",
            [event(t, n * 10 + i, score=i, player={"id": i}) for t in ("a", "b") for i in range(5)] + ["[]"],
        )
    counted = CompilationsPerBatch(spark)
    bronze_call, silver_write = BronzeBatchWriter.__call__, SilverGroupWriter.write

    def bronze(self, df, batch_id):
        bronze_call(self, df, batch_id)
        counted.record("bronze")

    def silver(self, rows, schemas, commit):
        result = silver_write(self, rows, schemas, commit)
        counted.record(commit.stream)
        return result

    built = []
    build_routes = silver_stream.silver_routes

    def routes(schemas, on_incompatible, rules=None):
        built.append(sorted(schemas))
        return build_routes(schemas, on_incompatible, rules)

    monkeypatch.setattr(BronzeBatchWriter, "__call__", bronze)
    monkeypatch.setattr(SilverGroupWriter, "write", silver)
    monkeypatch.setattr(silver_stream, "silver_routes", routes)
    settings = PipelineSettings(
        lake, LandingInput(landing, max_files_per_trigger=1), silver=SilverSettings(max_files_per_trigger=1)
    )
    report = Supervisor(spark, settings, EmbeddedDelta(), Unmonitored(), log=lambda line: None).run_until_idle()

    assert report.failures == {} and report.bronze_batches == 4
    assert sorted(counted.after) == ["bronze", "silver_g0001"]
    assert len(counted.after["silver_g0001"]) == 4, "one silver batch per bronze version"
    assert counted.new_after_first("bronze")[1:] == [0, 0], "after the batch that first knows every variation"
    assert counted.new_after_first("silver_g0001") == [0, 0, 0]
    assert built == [["a", "b"]], "silver's projection is built once while its schemas stay the same"
