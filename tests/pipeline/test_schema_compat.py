from pipeline.schema_compat import evolve


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


def test_numeric_widening_evolves():
    result = evolve(struct(("score", "long")), struct(("score", "double")))
    assert result.kind == "widened"
    assert result.schema["fields"][0]["type"] == "double"
    assert result.widened[0].as_dict() == {"path": "score", "old_type": "long", "new_type": "double"}


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
    struct = {"type": "struct", "fields": [{"name": "a", "type": {"type": "struct", "fields": []}, "nullable": True, "metadata": {}}]}
    number = {"type": "struct", "fields": [{"name": "a", "type": "long", "nullable": True, "metadata": {}}]}
    assert evolve(struct, number).kind == "incompatible"
    assert evolve(number, struct).kind == "incompatible"
