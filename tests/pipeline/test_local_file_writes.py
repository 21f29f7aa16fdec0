"""delta-spark's log and Spark's checkpoint files on the local file system, written through
java.nio (bronze/jvm/LocalFileLogStore.java, LocalFileCheckpointManager.java.in): the same
contract as Hadoop's writers (a file appears whole or not at all; put-if-absent where the name
must not exist), without the `chmod` and `readlink` processes Hadoop's local file system forks."""

from __future__ import annotations

import pytest
from py4j.protocol import Py4JJavaError

from streamops.core.checkpoint_format.metadata_log import crc_problem, hadoop_crc
from streamops.pipeline.bronze.jvm_classifier import (
    LOCAL_FILE_CHECKPOINT_MANAGER,
    LOCAL_FILE_LOG_STORE,
    checkpointing_package,
)

pytestmark = pytest.mark.spark


def java_lines(spark, lines: list[str]):
    values = spark._jvm.java.util.ArrayList()
    for line in lines:
        values.add(line)
    return values.iterator()


def test_the_log_store_writes_a_commit_once_and_refuses_a_second_one(spark, tmp_path):
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    store = jvm.streamops.jvm.LocalFileLogStore(conf)
    commit = jvm.org.apache.hadoop.fs.Path((tmp_path / "00000000000000000000.json").as_uri())
    store.write(commit, java_lines(spark, ['{"a":1}', '{"b":2}']), False, conf)
    assert (tmp_path / "00000000000000000000.json").read_text() == '{"a":1}\n{"b":2}\n'
    with pytest.raises(Py4JJavaError) as refused:
        store.write(commit, java_lines(spark, ['{"c":3}']), False, conf)
    assert refused.value.java_exception.getClass().getName() == "java.nio.file.FileAlreadyExistsException"
    assert (tmp_path / "00000000000000000000.json").read_text() == '{"a":1}\n{"b":2}\n', "the first commit stays"
    store.write(commit, java_lines(spark, ['{"d":4}']), True, conf)
    assert (tmp_path / "00000000000000000000.json").read_text() == '{"d":4}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["00000000000000000000.json"], "no temporary file is left"
    assert not store.isPartialWriteVisible(commit, conf)


def test_the_checkpoint_manager_publishes_whole_files_and_keeps_an_existing_one(spark, tmp_path):
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    path = jvm.org.apache.hadoop.fs.Path(tmp_path.as_uri())
    manager = jvm.streamops.jvm.LocalFileCheckpointManager(path, conf)
    target = jvm.org.apache.hadoop.fs.Path((tmp_path / "0").as_uri())
    stream = manager.createAtomic(target, False)
    stream.write(bytearray(b"v1\n{}\n"))
    assert not (tmp_path / "0").exists(), "nothing is visible before close"
    stream.close()
    assert (tmp_path / "0").read_bytes() == b"v1\n{}\n"
    assert crc_problem(tmp_path / "0") is None
    again = manager.createAtomic(target, False)
    again.write(bytearray(b"other"))
    with pytest.raises(Py4JJavaError) as refused:
        again.close()
    assert refused.value.java_exception.getClass().getName() == "org.apache.hadoop.fs.FileAlreadyExistsException"
    assert (tmp_path / "0").read_bytes() == b"v1\n{}\n"
    replaced = manager.createAtomic(target, True)
    replaced.write(bytearray(b"v2"))
    replaced.close()
    assert (tmp_path / "0").read_bytes() == b"v2"
    assert crc_problem(tmp_path / "0") is None, "Hadoop's checksum sidecar, as its local file system writes it"
    assert (tmp_path / ".0.crc").read_bytes() == hadoop_crc(b"v2")
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp.crc")], "no temporary sidecar is left"


def test_the_session_writes_delta_logs_and_streaming_checkpoints_through_them(spark, tmp_path):
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.delta.logStore.file.impl") == LOCAL_FILE_LOG_STORE
    assert conf.get("spark.sql.streaming.checkpointFileManagerClass") == LOCAL_FILE_CHECKPOINT_MANAGER
    hadoop = spark._jsparkSession.sessionState().newHadoopConf()
    package = checkpointing_package()
    factory = spark._jvm.java.lang.Class.forName(
        f"{package}.CheckpointFileManager$", True, spark._jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
    )
    made = factory.getField("MODULE$").get(None).create(spark._jvm.org.apache.hadoop.fs.Path(tmp_path.as_uri()), hadoop)
    assert made.getClass().getName() == LOCAL_FILE_CHECKPOINT_MANAGER
