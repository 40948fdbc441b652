"""Compact JSON text of one value, as ``json.JSONEncoder(ensure_ascii=False, check_circular=False)``
writes it, for the many small values a cell encodes (its rows, the context recorder's entries).

``JSONEncoder.encode`` builds a new C encoder on every call, for an int too: on a dbgpt cell at 250k
that was most of encoding the recorder's 9,000 values and the published rows. Here one C encoder is
built per form and kept, a string is escaped directly and an int written as its ``repr`` (what the
C encoder does); where the C encoder is missing or takes other arguments (another Python) the
standard encoder is used, so the text is the same either way.

A string alone is escaped by orjson (SIMD; a message's text is most of what the context recorder
encodes: 3x faster than json's escape on the bundled and 250k texts), whose escapes are json's
with ``ensure_ascii=False`` for every code point (tests/test_json_text.py checks all; at import the
first 12,288 and the odd ones after, else json's own is used); a lone surrogate, which orjson
refuses, is escaped by json as before."""

from __future__ import annotations

import json
from collections.abc import Callable
from json import encoder as _std
from typing import Any

import orjson

Encode = Callable[[Any], str]

_SAMPLE = {"b": [1, -2, 2.5, 1e300, None, True, False, 'é\n"\\\x00'], "a": {"z": float("nan"), "y": []}, "": ""}


def _orjson_escape(value: str) -> str:
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:  # a lone surrogate (not UTF-8): json writes it as it is
        return _std.encode_basestring(value)  # type: ignore[no-any-return]


def _string_escape() -> Callable[[str], str]:
    """orjson's escape of a string if it writes json's text for every code point, else json's."""
    every = "".join(map(chr, range(0x3000))) + "\ufeff\uffef\uffff\U00010000\U0001f600\U0010ffff"
    if _orjson_escape(every) == _std.encode_basestring(every) and _orjson_escape("\ud800x") == '"\ud800x"':
        return _orjson_escape
    return _std.encode_basestring  # type: ignore[no-any-return]


_escape = _string_escape()


def string_bytes(value: str) -> bytes:
    """``json.dumps(value, ensure_ascii=False).encode()``: orjson's bytes as they are, without the
    text made of them and encoded again (a lone surrogate: json's text, which UTF-8 refuses)."""
    if _escape is _orjson_escape:
        try:
            return orjson.dumps(value)
        except orjson.JSONEncodeError:
            pass
    return _std.encode_basestring(value).encode()  # type: ignore[no-any-return]


def _compact(sort_keys: bool) -> Encode:
    reference = json.JSONEncoder(ensure_ascii=False, check_circular=False, sort_keys=sort_keys)
    make = getattr(_std, "c_make_encoder", None)
    escape = _escape
    if make is None:
        return reference.encode
    try:  # json's C escape inside values: a Python function there would be called once per string
        one = make(None, reference.default, _std.encode_basestring, None, ": ", ", ", sort_keys, False, True)
        same = "".join(one(_SAMPLE, 0)) == reference.encode(_SAMPLE)
    except TypeError:  # another signature: the standard encoder
        return reference.encode
    if not same:
        return reference.encode

    def encode(value: Any) -> str:
        kind = type(value)
        if kind is str:
            return escape(value)  # type: ignore[no-any-return]
        if kind is int:
            return int.__repr__(value)
        return "".join(one(value, 0))

    return encode


# ``json.dumps(value, ensure_ascii=False)``'s text, and with ``sort_keys=True``.
compact: Encode = _compact(False)
compact_sorted: Encode = _compact(True)
