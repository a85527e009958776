"""Each shortcut of `mrtr._wire._speedups` does what its plain path does.

The shortcuts rest on CPython, asyncio and anyio internals. These tests compare them
with the public road on generated input, so an upgrade that changes an internal fails
here rather than changing a message on the wire.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mrtr._wire import _speedups
from mrtr._wire._speedups import compact_encoder, event_factory, loads_object, set_read_size

SETTINGS = settings(max_examples=300, deadline=None)

_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
_objects = st.dictionaries(st.text(), _json, max_size=5)


def _outcome(function: Any, value: Any) -> tuple[str, Any]:
    try:
        return ("ok", function(value))
    except (TypeError, ValueError, RecursionError) as exc:
        return (type(exc).__name__, str(exc))


def test_the_internals_are_there() -> None:
    # Without them the shortcuts fall back to the plain path: still right, but slower;
    # this says so when an upgrade removes one.
    assert _speedups._C_MAKE_ENCODER is not None
    assert callable(_speedups._SCAN)


@pytest.mark.parametrize("ensure_ascii", [False, True])
@SETTINGS
@given(message=_objects)
def test_the_compact_encoder_matches_json_encoder(ensure_ascii: bool, message: Any) -> None:
    plain = json.JSONEncoder(ensure_ascii=ensure_ascii, separators=(",", ":"), allow_nan=False)
    fast = compact_encoder(plain)
    assert _outcome(fast, message) == _outcome(plain.encode, message)


def test_the_compact_encoder_refuses_what_json_refuses() -> None:
    plain = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    fast = compact_encoder(plain)
    circular: dict[str, Any] = {}
    circular["self"] = circular
    for bad in ({"a": math.inf}, {"a": object()}, circular, {(1, 2): "tuple key"}):
        assert _outcome(fast, bad) == _outcome(plain.encode, bad)
        assert _outcome(fast, bad)[0] != "ok"
    assert fast({"after": "errors"}) == '{"after":"errors"}'  # no state left behind


def _plain_loads(text: str) -> tuple[str, Any]:
    try:
        return ("ok", repr(json.loads(text)))
    except json.JSONDecodeError as exc:
        return ("JSONDecodeError", (exc.msg, exc.pos))
    except (ValueError, RecursionError) as exc:
        return (type(exc).__name__, None)


def _fast_loads(text: str) -> tuple[str, Any]:
    try:
        return ("ok", repr(loads_object(text)))
    except json.JSONDecodeError as exc:
        return ("JSONDecodeError", (exc.msg, exc.pos))
    except (ValueError, RecursionError) as exc:
        return (type(exc).__name__, None)


_whitespace = st.text(alphabet=" \t\r\n\x0b\x0c", max_size=3)
_lines = st.one_of(
    # a valid object as a server writes it, with or without trailing space or garbage
    st.builds(
        lambda value, tail: json.dumps(value, ensure_ascii=False) + tail,
        _objects,
        _whitespace | st.text(max_size=3),
    ),
    # a prefix of one (a torn line), and anything at all that starts like an object
    st.builds(lambda value, cut: json.dumps(value)[:cut], _objects, st.integers(0, 40)),
    st.builds(lambda text: "{" + text, st.text(max_size=20)),
    st.text(max_size=20),
)


@SETTINGS
@given(line=_lines)
def test_loading_an_object_matches_json_loads(line: str) -> None:
    assert _fast_loads(line) == _plain_loads(line)


def test_loading_refuses_what_json_refuses() -> None:
    for line in ('{"a":' + "9" * 5000 + "}", '{"a":1} x', '{"a":NaN}', "{" * 100_000):
        assert _fast_loads(line) == _plain_loads(line)


@pytest.mark.anyio
@SETTINGS
@given(steps=st.lists(st.sampled_from(["set", "is_set", "wait_if_set"]), max_size=8))
async def test_a_factory_event_behaves_as_anyio_event(steps: list[str]) -> None:
    made, plain = event_factory()(), anyio.Event()
    assert type(made) is type(plain)
    seen: list[tuple[bool, bool]] = []
    for step in steps:
        if step == "set":
            made.set()
            plain.set()
        elif step == "wait_if_set" and plain.is_set():
            with anyio.fail_after(5):
                await made.wait()
                await plain.wait()
        seen.append((made.is_set(), plain.is_set()))
    assert all(a == b for a, b in seen)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_the_read_size_reaches_asyncios_pipe_transport() -> None:
    loop = asyncio.get_running_loop()
    read_end, write_end = os.pipe()
    try:
        transport, _ = await loop.connect_read_pipe(asyncio.Protocol, os.fdopen(read_end, "rb"))
        try:
            assert set_read_size(transport, 4096)
            assert transport.max_size == 4096  # type: ignore[attr-defined]
        finally:
            transport.close()
    finally:
        os.close(write_end)
    assert not set_read_size(object(), 4096)  # anything else: left alone, and said so
