"""The JVM classifier (Spark SQL function) must say exactly what the Python reference says."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from streamops.pipeline.bronze import jvm_classifier
from streamops.pipeline.bronze.bronze_classifier import KAFKA_FIELDS, BatchClassifier, RecordLimits
from streamops.pipeline.bronze.events_mode import EventsMode
from streamops.pipeline.generator.run import generate
from streamops.pipeline.generator.settings import GeneratorSettings
from streamops.pipeline.records.record_rules import MAX_DEPTH, MAX_RECORD_BYTES

COMPARED = ["event_type", "event_id", "event_time_text", "schema_hash", "quarantine_reason", "payload"]

EDGE_CASES = [
    b'{"event_type":"a","event_id":7,"event_time":"t","n":-0,"big":123456789012345678901234567890}',
    b'{"event_type":"a","event_id":1.5,"event_time":true,"u":18446744073709551615}',
    b'{"event_type":"a","k":"\\u00e9\\n","nested":{"x":[1,2.5,"s",null,[true]],"y":{}}}',
    b'{"event_type":"a","arr":[{"a":1},{"b":"x"},{"a":null}],"e":[]}',
    b'{"event_type":"caf\xc3\xa9"}',
    b'{"event_type":"a","s":"\xc0\x80"}',
    b'{"event_type":"a","s":"\xed\xa0\x80"}',
    b'{"event_type":"a","s":"\xf4\x90\x80\x80"}',
    b'{"event_type":"a"} {"event_type":"b"}',
    b'{"event_type":"a",}',
    b'{"event_type":"a","x":01}',
    b'{"event_type":"a","x":NaN}',
    b'{"event_type":null}',
    b'{"event_type":["x"]}',
    b'{"event_type":""}',
    b'{"event_type":"a.b-c_9"}',
    b'{"event_type":"a..b"}',
    b"\t \r",
    b"true",
    b"null",
    b'{"event_type":"a","d":' + b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1) + b"}",
    b'{"event_type":"a","d":' + b"[" * MAX_DEPTH + b"]" * MAX_DEPTH + b"}",
    b'{"event_type":"a","d":' + b'{"x":' * 1500 + b"1" + b"}" * 1500 + b"}",
    b'{"x":' + b"[" * 40 + b"]" * 40 + b"}",
    b'{"event_type":"a","blob":"' + b"x" * (MAX_RECORD_BYTES - 30) + b'"}',
    b'\xef\xbb\xbf{"event_type":"bom","n":1}',
    b"\xef\xbb\xbf",
    b'{"event_type":"a","s":"\xef\xbb\xbf"}',
    b'{"event_type":"a",\xef\xbb\xbf"s":1}',
    b'{"event_type":"a","s":"\\ud800"}',
    b'{"event_type":"a","s":"\\udc00\\ud800"}',
    b'{"event_type":"a","\\ud83d\\ude00":"\\ud83d\\ude00"}',
    b'{"event_type":"a","s":"\\ud83d\\u0041"}',
    b'{"event_type":"a","s":"\\ud800","x":1,"x":2}',
    b'{"event_type":"a","s":"\\ud800" "broken"}',
    b'{"event_type":"a","x":Infinity}',
    b'{"event_type":"a","x":-Infinity}',
    b'{"event_type":"a","x":1e309,"y":-1e999,"z":1e-400}',
    b'{"event_type":"a","x":9223372036854775807,"y":-9223372036854775808}',
    b'{"event_type":"a","x":9223372036854775808}',
    b'{"event_type":"a","event_id":99999999999999999999}',
    b'{"event_type":"a","x":' + b"1" * 5000 + b"}",
    b'{"event_type":"a","x":0.' + b"1" * 5000 + b"}",
    b'{"event_type":"a","x":1,"x":2}',
    b'{"event_type":"a","event_type":"b"}',
    b'{"event_type":"a","event_type":null}',
    b'{"event_type":"a","x":1e999,"x":1}',
    b'{"event_type":"a","Ab":1,"aB":2}',
    b'{"event_type":"a","a":{"b":1},"a__b":2}',
    b'{"event_type":"a","_schema_hash":"x"}',
    b'{"event_type":"a","Event_Type":"x"}',
    b'{"event_type":"a","":1}',
    b'{"event_type":"a","k":[{"":1}]}',
    b'{"event_type":"a","a b":1,"a;b":2}',
    b'{"event_type":"a","x\\u0000":1,"x\\u0001":2}',
    b'{"event_type":"a","x":"raw\x01control"}',
    b'{"event_type":"a","x":"tab\there"}',
    b'{"event_type":"a","x":"nul\x00"}',
    b'\x00{"event_type":"a"}',
    b'{"event_type":"a","x":"\\x"}',
    b'{"event_type":"a","x":"\\u12"}',
    b'{"event_type":"a","x":"\\\xc3\xa9"}',
    b'{"event_type":"a","x":"unterminated [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[',
    b'{"event_type":"a","x":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}',
    b'{"event_type":"a","x":[' + b'{"y":' * 31 + b"1" + b"}" * 31 + b"]}",
    b'{"event_type":"a","x":[' + b'{"y":' * 32 + b"1" + b"}" * 32 + b"]}",
    b'}}}]]]{"event_type":"a"}',
    b'{"event_type":"a"} ',
    b'{"event_type":"a"}\t\r',
    b'{"event_type":"a","x":01}',
    b'{"event_type":"a","x":-}',
    b'{"event_type":"a","x":.5}',
    b'{"event_type":"a","x":1.}',
    b'{"event_type":"a","x":+1}',
    b"{'event_type':'a'}",
    b'{"event_type":"a"/*c*/}',
    b'{"event_type":"a\\u0000"}',
    b'{"event_type":12}',
    b'{"event_type":"lo\\u0067in","event_id":"\\u0031\\n","event_time":"t\\/1"}',
    b'{"event_type":"a","event_id":-0,"event_time":-120}',
    b'{"event_type":"a","event_id":123456789012345678,"event_time":1234567890123456789}',
    b'{"event_type":"a","event_id":{"x":1},"event_time":[1]}',
    b' {"event_type" : "a" , "x" : [ 1 , 2.50 , [ ] , { } ] } ',
    b'{"event_type":"a","caf\xc3\xa9":1,"k":"\xf0\x9f\x98\x80"}',
    b'{"event_type":"a","caf\xc3":1}',
    b'{"event_type":"a\xff"}',
    b'{"event_type":"a","s":"\\ud83d\\ude00 ok","t":"\\ud83dx","u":"\\ude00"}',
    b'{"event_type":"a","s":"\\ud83d\\ude00 ok"}',
    b'{"event_type":"a","s":"\\ude00"}',
    b'{"event_type":"a","d":' + b'{"x":' * MAX_DEPTH + b"1" + b"}" * MAX_DEPTH + b"}",
    b'{"event_type":"a","d":' + b'{"x":' * (MAX_DEPTH - 1) + b"1" + b"}" * (MAX_DEPTH - 1) + b"}",
    b'{"event_type":1e999}',
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> list[bytes]:
    out = tmp_path_factory.mktemp("corpus") / "landing"
    generate(GeneratorSettings(out=out, events=3000, event_types=20, drift=0.5, bad=0.05, seed=5))
    lines = [line for path in sorted(out.glob("*.ndjson")) for line in path.read_bytes().split(b"\n")[:-1]]
    return lines + EDGE_CASES


def test_the_jdk_builds_the_classifier_here(spark):
    assert jvm_classifier.classifier_jar() is not None
    assert jvm_classifier.register(spark)


def classified_alike(spark, corpus: list[bytes]) -> pa.Table:
    """The JVM classifier's rows for `corpus`, after checking they say what Python's say."""
    lines = spark.createDataFrame(
        pa.table(
            {
                "value": pa.array(corpus, pa.binary()),
                "source_file": pa.array(["f"] * len(corpus)),
                "source_mtime": pa.nulls(len(corpus), pa.timestamp("us", tz="UTC")),
                **{name: pa.nulls(len(corpus), kind) for name, kind in KAFKA_FIELDS},
            }
        )
    )
    jvm = EventsMode(classifier="jvm").classify(spark, lines, RecordLimits()).toArrow()
    python = BatchClassifier().classify(
        corpus, pa.array(["f"] * len(corpus)), pa.nulls(len(corpus), pa.timestamp("us", tz="UTC"))
    )
    assert jvm.num_rows == len(corpus)
    mismatches = [
        (i, corpus[i][:120], {c: (jvm.column(c)[i].as_py(), python.column(c)[i].as_py()) for c in COMPARED})
        for i in range(len(corpus))
        if any(jvm.column(c)[i].as_py() != python.column(c)[i].as_py() for c in COMPARED)
    ]
    assert not mismatches, mismatches[:5]
    return jvm


MUTATION_BYTES = b'{}[],:"\\ \t0159-+.eEtfnu\x00\x1f\x7f\x80\xc3\xff/x'


def mutated(lines: list[bytes], seed: int) -> list[bytes]:
    """Each line with one byte deleted, inserted or replaced by one that matters to JSON: the
    lines FastLineScan could wrongly accept or misread sit one byte away from good ones. Breadth
    (thousands of generated shapes in one Spark job); test_line_properties mutates one event in
    depth, a line per JVM call."""
    rng = random.Random(seed)
    out = []
    for line in lines:
        if not line:
            continue
        at = rng.randrange(len(line))
        byte = MUTATION_BYTES[rng.randrange(len(MUTATION_BYTES)) :][:1]
        how = rng.randrange(3)
        out.append(line[:at] + (b"" if how == 0 else byte) + line[at + (how != 1) :])
    return out


def test_jvm_and_python_classifiers_agree_on_every_line(spark, corpus):
    jvm = classified_alike(spark, [*corpus, None])
    reasons = set(jvm.column("quarantine_reason").to_pylist())
    assert {
        "tombstone",
        "malformed_json",
        "invalid_utf8",
        "too_deep",
        "too_large",
        "not_an_object",
        "missing_event_type",
        "invalid_event_type",
        "empty_line",
        "number_out_of_range",
        "duplicate_key",
        "unusable_key",
        None,
    } <= reasons


def test_jvm_and_python_classifiers_agree_on_lines_one_byte_from_good_ones(spark, corpus):
    lines = mutated(corpus[:2500], seed=11) + mutated(corpus[:2500], seed=12)
    jvm = classified_alike(spark, lines)
    reasons = jvm.column("quarantine_reason").to_pylist()
    assert 0 < reasons.count(None) < len(lines) and "malformed_json" in reasons
