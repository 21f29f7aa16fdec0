"""The sink's tasks keep the garbage collector of Spark's Python workers off their imports.

Each case runs in a new interpreter, as a worker does: freezing is per process and permanent.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap


def run_as_worker(script: str) -> dict:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_sink_task_freezes_what_the_imports_made_and_later_garbage_is_still_collected(tmp_path):
    found = run_as_worker(f"""
        import gc, json
        import pyarrow as pa
        from streamops.pipeline.delta_connector.lake_sink import LakeSinkWriter
        from streamops.pipeline.delta_connector.write_plan import ROUTE_COLUMN, TableTarget, WritePlan
        from streamops.core.delta_format.commit_metadata import BatchCommitInfo

        plan = WritePlan(
            commit=BatchCommitInfo("s", 0),
            tables={{"t": TableTarget({str(tmp_path / "t")!r}, columns={{"v": "v"}})}},
            commit_stages=(("t",),),
            report_path="",
        )
        before = gc.get_freeze_count()
        batch = pa.RecordBatch.from_pydict({{ROUTE_COLUMN: ["t", "t"], "v": [1, 2]}})
        written = LakeSinkWriter(plan).write(iter([batch]))
        frozen = gc.get_freeze_count()
        LakeSinkWriter(plan).write(iter([batch]))
        again = gc.get_freeze_count()

        class Node:
            pass
        cycle = Node()
        cycle.self = cycle
        del cycle
        unfrozen = len(gc.get_objects())
        gc.collect()
        nodes = sum(1 for o in gc.get_objects() if type(o).__name__ == "Node")
        print(json.dumps({{"before": before, "frozen": frozen, "again": again, "rows": written.files[0].rows,
                           "unfrozen": unfrozen, "nodes": nodes}}))
    """)
    assert found["before"] == 0
    assert found["rows"] == 2
    assert found["frozen"] > 10_000, "the imports' objects were not frozen"
    assert found["again"] == found["frozen"], "a later task froze again: only the first may"
    assert found["unfrozen"] < found["frozen"] // 10, "a full collection still walks most objects"
    assert found["nodes"] == 0, "garbage made after the freeze was not collected"


def test_freezing_collects_first_so_no_garbage_from_before_is_kept_for_ever():
    found = run_as_worker("""
        import gc, json
        gc.disable()

        class Node:
            pass
        cycle = Node()
        cycle.self = cycle
        del cycle
        from streamops.pipeline.runtime.worker_gc import freeze_imported_objects
        freeze_imported_objects()
        frozen = gc.get_freeze_count()
        gc.unfreeze()
        print(json.dumps({"frozen": frozen, "nodes": sum(1 for o in gc.get_objects() if type(o).__name__ == "Node")}))
    """)
    assert found["frozen"] > 0
    assert found["nodes"] == 0, "garbage that existed before the freeze was frozen with the imports"
