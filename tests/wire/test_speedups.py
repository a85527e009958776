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
import anyio.lowlevel
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


# -- the server's shortcuts ------------------------------------------------------------------

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True)
_keys = st.text() | st.integers() | st.floats(allow_nan=False) | st.booleans() | st.none()
_canonical_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=20,
)


@SETTINGS
@given(value=_canonical_values)
def test_the_canonical_encoder_matches_json_encoder(value: Any) -> None:
    # mixed keys included: sorting them fails alike, or they sort and stringify alike
    fast = _speedups.canonical_encoder(_CANONICAL)
    assert _outcome(fast, value) == _outcome(_CANONICAL.encode, value)
    assert _outcome(fast, [value]) == _outcome(_CANONICAL.encode, [value])


def test_the_canonical_encoder_refuses_what_json_refuses() -> None:
    fast = _speedups.canonical_encoder(_CANONICAL)
    circular: list[Any] = []
    circular.append(circular)
    for bad in (circular, {"a": object()}, {(1, 2): "tuple key"}, {1: 1, "a": 2}):
        assert _outcome(fast, bad) == _outcome(_CANONICAL.encode, bad)
        assert _outcome(fast, bad)[0] != "ok"
    assert fast({"b": "\ud800", "a": math.nan}) == '{"a":NaN,"b":"\\ud800"}'  # no state kept


@SETTINGS
@given(value=_canonical_values)
def test_the_canonical_encoder_on_and_off_write_one_text(value: Any) -> None:
    # off: the interpreter has no C encoder, and the plain road is taken as it is
    fast = _speedups.canonical_encoder(_CANONICAL)
    saved = _speedups._C_MAKE_ENCODER
    _speedups._C_MAKE_ENCODER = None
    try:
        off = _speedups.canonical_encoder(_CANONICAL)
    finally:
        _speedups._C_MAKE_ENCODER = saved
    assert off == _CANONICAL.encode
    assert _outcome(fast, value) == _outcome(off, value)


@pytest.mark.anyio
async def test_a_loop_task_runs_on_asyncio_only_once_the_loop_runs(anyio_backend: str) -> None:
    ran = anyio.Event()
    calls: list[str] = []

    async def work(name: str) -> None:
        calls.append(name)
        ran.set()

    stop = _speedups.loop_task_soon(work, "first")
    if anyio_backend == "trio":
        assert stop is None  # a task group's task does it there
        return
    assert stop is not None
    assert calls == []  # nothing until the caller lets the loop run
    with anyio.fail_after(5):
        await ran.wait()
    assert calls == ["first"]
    stop()

    never = _speedups.loop_task_soon(work, "second")
    assert never is not None
    never()  # stopped before the loop ran: `work` is never called (nor left unawaited)
    await anyio.lowlevel.checkpoint()
    await anyio.lowlevel.checkpoint()
    assert calls == ["first"]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_a_loop_task_is_cancelled_by_its_stopper() -> None:
    started, ended = anyio.Event(), anyio.Event()

    async def wait_forever() -> None:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            ended.set()

    stop = _speedups.loop_task_soon(wait_forever)
    assert stop is not None
    with anyio.fail_after(5):
        await started.wait()
        stop()
        await ended.wait()


def test_no_loop_task_outside_a_loop() -> None:
    async def work() -> None:
        raise AssertionError("never started")

    assert _speedups.loop_task_soon(work) is None
