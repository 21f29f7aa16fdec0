from streamops.pipeline.registry.schema_compat import evolve, promote, prune, unfit, without


def struct(*fields):
    return {"type": "struct", "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields]}


def test_first_schema_is_a_new_event_type():
    assert evolve(None, struct(("a", "long"))).kind == "new_event_type"


def test_identical_schema_is_unchanged():
    s = struct(("a", "long"), ("b", struct(("c", "string"))))
    assert evolve(s, s).kind == "unchanged"


def test_added_top_level_and_nested_fields_evolve():
    old = struct(("a", "long"), ("p", struct(("id", "long"))))
    new = struct(("a", "long"), ("n", "string"), ("p", struct(("id", "long"), ("guild", "string"))))
    result = evolve(old, new)
    assert result.kind == "added_fields"
    assert [c.path for c in result.added] == ["n", "p.guild"]
    names = [f["name"] for f in result.schema["fields"]]
    assert names == ["a", "p", "n"], "old columns keep their order, new ones append"
    assert [f["name"] for f in result.schema["fields"][1]["type"]["fields"]] == ["id", "guild"]


def test_numeric_widening_is_reported_and_the_column_keeps_its_type():
    result = evolve(struct(("score", "long")), struct(("score", "double")))
    assert result.kind == "widened"
    assert result.schema["fields"][0]["type"] == "long", "a wider type would rewrite the table"
    assert result.widened[0].as_dict() == {"path": "score", "old_type": "long", "new_type": "double"}
    assert unfit(result) == result.widened


def test_prune_and_without_split_a_schema_at_nested_and_array_paths():
    items = {"type": "array", "elementType": struct(("id", "long"), ("x", "string")), "containsNull": True}
    schema = struct(("a", "long"), ("p", struct(("level", "long"), ("id", "long"))), ("items", items))
    paths = ["p.level", "items[].x"]
    kept = prune(schema, paths)
    assert [f["name"] for f in kept["fields"]] == ["p", "items"]
    assert [f["name"] for f in kept["fields"][0]["type"]["fields"]] == ["level"]
    assert [f["name"] for f in kept["fields"][1]["type"]["elementType"]["fields"]] == ["x"]
    rest = without(schema, paths)
    assert [f["name"] for f in rest["fields"][1]["type"]["fields"]] == ["id"]
    assert [f["name"] for f in rest["fields"][2]["type"]["elementType"]["fields"]] == ["id"]
    assert without(schema, ["p"])["fields"] == schema["fields"][:1] + schema["fields"][2:]


def test_promote_sets_the_wider_type_at_a_path():
    schema = struct(("p", struct(("score", "long"))))
    assert promote(schema, "p.score", "double")["fields"][0]["type"]["fields"][0]["type"] == "double"


def test_narrower_value_fits_the_wider_column():
    assert evolve(struct(("score", "double")), struct(("score", "long"))).kind == "unchanged"


def test_number_to_string_is_incompatible_and_keeps_old_type():
    result = evolve(struct(("level", "long")), struct(("level", "string")))
    assert result.kind == "incompatible"
    assert result.schema["fields"][0]["type"] == "long"
    assert result.incompatible[0].as_dict() == {"path": "level", "old_type": "long", "new_type": "string"}


def test_struct_to_scalar_is_incompatible():
    result = evolve(struct(("p", struct(("id", "long")))), struct(("p", "string")))
    assert result.kind == "incompatible"
    assert result.incompatible[0].old_type == "struct"


def test_array_element_widening_and_incompatible_beats_widened():
    old = struct(("xs", {"type": "array", "elementType": "long", "containsNull": True}), ("lvl", "long"))
    new = struct(("xs", {"type": "array", "elementType": "double", "containsNull": True}), ("lvl", "string"))
    result = evolve(old, new)
    assert result.kind == "incompatible"
    assert [c.path for c in result.widened] == ["xs[]"]


def test_a_struct_that_becomes_a_number_is_incompatible_not_an_error():
    struct = {
        "type": "struct",
        "fields": [{"name": "a", "type": {"type": "struct", "fields": []}, "nullable": True, "metadata": {}}],
    }
    number = {"type": "struct", "fields": [{"name": "a", "type": "long", "nullable": True, "metadata": {}}]}
    assert evolve(struct, number).kind == "incompatible"
    assert evolve(number, struct).kind == "incompatible"
