import pytest

from streamops.pipeline.records.strict_json import loads, structural_depth
from streamops.pipeline.registry.schema_variation import VariationCache, shape_verdict, variation_hash, variation_paths


def sig(text: str) -> str:
    return variation_hash(variation_paths(loads(text)))


def test_paths_are_recursive_sorted_and_typed():
    event = {"b": 1, "a": {"y": "s", "x": [1.5]}, "items": [{"id": 1}, {"name": "n"}], "ok": True}
    assert variation_paths(event) == [
        "a.x:array",
        "a.x[]:float",
        "a.y:string",
        "a:object",
        "b:integer",
        "items:array",
        "items[].id:integer",
        "items[].name:string",
        "items[]:object",
        "ok:bool",
    ]


def test_key_order_does_not_matter_but_types_do():
    assert sig('{"a":1,"b":{"c":"x","d":2}}') == sig('{"b":{"d":3,"c":"y"},"a":9}')
    assert sig('{"a":1}') != sig('{"a":"1"}')
    assert sig('{"a":1}') != sig('{"a":1.5}'), "int -> float widening must be a new variation"
    assert sig('{"a":{"b":1}}') != sig('{"a":1}')


def test_nulls_are_ignored():
    assert sig('{"a":1,"b":null}') == sig('{"a":1}')
    assert sig('{"a":1,"b":{"c":null}}') == sig('{"a":1,"b":{}}')


def test_new_nested_attribute_is_a_new_variation():
    assert sig('{"p":{"id":1}}') != sig('{"p":{"id":1,"guild":"g"}}')


@pytest.mark.parametrize(
    "text, depth",
    [
        ('{"a":1}', 0),
        ('{"a":{"b":1}}', 1),
        ('{"a":[[{"b":1}]]}', 3),
        ('{"a":[],"b":{"c":{}}}', 2),
        ('{"a":"[[[{{{"}', 0),
        ('{"a":"\\"[[["}', 0),
        ('{"a":"unterminated [[[', 0),
        ("42", -1),
        ("}}{{", -1),
    ],
)
def test_structural_depth_counts_brackets_outside_strings(text, depth):
    assert structural_depth(text.encode()) == depth


@pytest.mark.parametrize(
    "text, reason",
    [
        ('{"a":1,"a":2}', "duplicate_key"),
        ('{"a":{"b":1,"b":2}}', "duplicate_key"),
        ('{"a":9223372036854775808}', "number_out_of_range"),
        ('{"a":[-9223372036854775809]}', "number_out_of_range"),
        ('{"a":1e309}', "number_out_of_range"),
        ('{"a":9223372036854775807,"b":-9223372036854775808,"c":1e308}', None),
        ('{"A":1,"a":2}', "unusable_key"),
        ('{"a b":1,"a_b":2}', "unusable_key"),
        ('{"a":{"b":1},"a__B":2}', "unusable_key"),
        ('{"x":[{"k":1,"K":2}]}', "unusable_key"),
        ('{"x":[{"a":{"b":1},"a__b":2}]}', None),
        ('{"":1}', "unusable_key"),
        ('{"_Rescued_Data":1}', "unusable_key"),
        ('{"p":{"_rescued_data":1}}', None),
        ('{"a\\u0000b":1,"a b":2}', "unusable_key"),
    ],
)
def test_shape_verdicts(text, reason):
    assert shape_verdict(loads(text)).reason == reason


def test_cache_gives_the_same_answer_as_direct_computation():
    cache = VariationCache()
    texts = [
        '{"a":1,"b":{"c":"x"}}',
        '{"b":{"c":"y"},"a":2}',
        '{"a":1.5,"b":{"c":"x"}}',
        '{"a":1,"b":{"c":null}}',
        '{"a":1,"b":[1,"x"]}',
        '{"a":1,"b":["x",1]}',
        '{"a":1,"b":[{"k":1},{"k":"v"}]}',
    ]
    for _ in range(2):
        for text in texts:
            event = loads(text)
            assert cache.variation(event).hash == variation_hash(variation_paths(event))
