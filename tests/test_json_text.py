"""ctxbench.json_text writes the text ``json.dumps(value, ensure_ascii=False)`` writes (sorted keys
too), for any JSON value: its kept C encoder, the direct string and int paths, and its fallback."""

import json
from json import encoder as std

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench import json_text

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
values = st.recursive(scalars, lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(values)
def test_the_text_is_json_dumps_text(value):
    assert json_text.compact(value) == json.dumps(value, ensure_ascii=False)
    assert json_text.compact_sorted(value) == json.dumps(value, ensure_ascii=False, sort_keys=True)


def test_an_int_subclass_and_a_bool_are_written_as_json_writes_them():
    class Level(int):
        pass

    for value in (True, False, Level(3), [True, Level(4)], {"k": False}):
        assert json_text.compact(value) == json.dumps(value, ensure_ascii=False)


def test_without_the_c_encoder_the_standard_one_is_used(monkeypatch):
    # A fake for what cannot be caused here: a Python without json's C accelerator.
    monkeypatch.setattr(std, "c_make_encoder", None)
    encode = json_text._compact(False)
    value = {"a": [1, 2.5, float("inf"), "é"], "b": None}
    assert encode(value) == json.dumps(value, ensure_ascii=False)


def test_an_unserialisable_value_is_refused_as_json_refuses_it():
    try:
        json_text.compact({"a": object()})
    except TypeError as exc:
        assert "not JSON serializable" in str(exc)
    else:
        raise AssertionError("encoded an object")


def test_every_code_point_and_a_lone_surrogate_are_escaped_as_json_escapes_them():
    every = "".join(map(chr, range(0xD800))) + "".join(map(chr, range(0xE000, 0x110000)))
    assert json_text._orjson_escape(every) == std.encode_basestring(every)
    for text in (every, "a\ud800b", "\udfff", 'x"\\\n\x00\x1f\x7f\u2028'):
        assert json_text.compact(text) == json.dumps(text, ensure_ascii=False)
        assert json_text.compact([text, {"k": text}]) == json.dumps([text, {"k": text}], ensure_ascii=False)
