"""Every shortcut through a CPython, asyncio or anyio internal, in one place.

Each function here does what a public API does, by a shorter road that one message per
leg makes worth taking, and each keeps the public road for where the internal is
missing. They rely on details no release promises: `json.encoder.c_make_encoder` and
its nine positional arguments, the decoder's ``scan_once``, the class `anyio.Event()`
returns on the running backend, the ``max_size`` of asyncio's read-pipe transport, and
an anyio cancel scope that a bare asyncio task (not one of anyio's) may cancel.
``tests/wire/test_speedups.py`` checks each against its plain path (with Hypothesis
where the input varies), so a Python or anyio upgrade that changes one breaks a test
instead of a behaviour.
"""

from __future__ import annotations

import json
import json.encoder
import sys
import types
from collections.abc import Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "canonical_encoder",
    "compact_encoder",
    "event_factory",
    "first_step",
    "loads_object",
    "loop_task_soon",
    "resume",
    "set_read_size",
]

_C_MAKE_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)
_DECODER = json.JSONDecoder()
_SCAN: Callable[[str, int], tuple[Any, int]] = getattr(_DECODER, "scan_once")  # noqa: B009
_JSON_WHITESPACE = " \t\n\r"


def compact_encoder(encoder: json.JSONEncoder) -> Callable[[dict[str, Any]], str]:
    """``encoder.encode`` for a dict, without the two Python frames around the C encoder.

    `encoder` must be compact (``separators=(",", ":")``), with ``allow_nan=False``,
    ``sort_keys=False``, no indent and the default ``ensure_ascii`` handling of its own;
    the result is what ``encoder.encode(message)`` returns, with the same errors
    (circular references included: each call gets a fresh ``markers`` map).
    """
    if _C_MAKE_ENCODER is None:  # an interpreter without the C accelerator
        return encoder.encode
    make, default = _C_MAKE_ENCODER, encoder.default
    quote = (
        json.encoder.encode_basestring_ascii
        if encoder.ensure_ascii
        else json.encoder.encode_basestring
    )
    join = "".join

    def encode(message: dict[str, Any]) -> str:
        # markers, default, encoder, indent, key_separator, item_separator, sort_keys,
        # skipkeys, allow_nan: what `JSONEncoder.iterencode` passes for these options
        return join(make({}, default, quote, None, ":", ",", False, False, False)(message, 0))

    return encode


def loads_object(text: str) -> Any:
    """``json.loads(text)``, with the usual line (an object) scanned directly.

    Raises:
        ValueError: not JSON (`json.JSONDecodeError`), or an integer over 4,300 digits.
        RecursionError: nested too deep.
    """
    if not text.startswith("{"):
        return json.loads(text)  # leading whitespace, a byte order mark, not an object...
    try:
        value, end = _SCAN(text, 0)
    except StopIteration as exc:
        raise json.JSONDecodeError("Expecting value", text, exc.value) from None
    if end != len(text):
        rest = text[end:].lstrip(_JSON_WHITESPACE)
        if rest:
            raise json.JSONDecodeError("Extra data", text, len(text) - len(rest))
    return value


def event_factory() -> Callable[[], anyio.Event]:
    """The running backend's `anyio.Event` class, to create events without a lookup.

    `anyio.Event()` looks up the running backend on every call; code that creates one
    event per message (a pending request, a wake-up) calls this once, in async context,
    and keeps what it returns.
    """
    return type(anyio.Event())


def set_read_size(transport: object, size: int) -> bool:
    """Make an asyncio read-pipe transport read at most `size` bytes at once, if it can.

    The attribute is ``max_size`` of asyncio's Unix read-pipe transport (no public
    setter). Returns whether it was there to set.
    """
    if not isinstance(getattr(transport, "max_size", None), int):
        return False
    transport.max_size = size  # type: ignore[attr-defined]
    return True


# -- the server's shortcuts: the canonical encoder of sealing, the loop-task watcher --------


def canonical_encoder(encoder: json.JSONEncoder) -> Callable[[Any], str]:
    """``encoder.encode``, calling the C encoder directly for objects and arrays.

    `encoder` is the sealing's canonical one: ``sort_keys=True``, compact separators,
    ``ensure_ascii=True``, ``allow_nan`` left on, no indent. ``encode`` goes through two
    Python frames and builds the C encoder on every call, and a sealed leg encodes two
    canonical texts. Scalars keep the plain road; each call gets a fresh ``markers`` map,
    so circular references are refused as ``encode`` refuses them.
    """
    if _C_MAKE_ENCODER is None:  # an interpreter without the C accelerator
        return encoder.encode
    make, default, quote = _C_MAKE_ENCODER, encoder.default, json.encoder.encode_basestring_ascii
    plain = encoder.encode

    def encode(value: Any) -> str:
        if not isinstance(value, (dict, list)):
            return plain(value)
        # markers, default, encoder, indent, key_separator, item_separator, sort_keys,
        # skipkeys, allow_nan: what `JSONEncoder.iterencode` passes for these options
        return "".join(make({}, default, quote, None, ":", ",", True, False, True)(value, 0))

    return encode


def loop_task_soon(
    function: Callable[..., Coroutine[Any, Any, None]], *args: Any
) -> Callable[[], None] | None:
    """Run ``function(*args)`` as a bare asyncio task once the loop next runs, if on asyncio.

    Returns a stopper that cancels the task (or its start, if the caller never let the
    loop run: then ``function`` is never called), or ``None`` when the caller is not an
    asyncio task (on trio), where a task group's task does the work. A bare task saves
    what an anyio task group and its task cost, several times a small request's own
    work; it may cancel an anyio scope of the caller's, as anyio's own tasks do. The
    stopper must be called before the caller's scope exits.
    """
    aio = sys.modules.get("asyncio")  # not imported: not on asyncio (nor worth importing)
    if aio is None:
        return None
    try:
        loop = aio.get_running_loop()
    except RuntimeError:
        return None
    if aio.current_task(loop) is None:
        return None
    tasks: list[asyncio.Task[None]] = []

    def start() -> None:
        tasks.append(loop.create_task(function(*args)))

    handle = loop.call_soon(start)

    def stop() -> None:
        handle.cancel()
        for task in tasks:
            task.cancel()

    return stop


# --- stepping a coroutine by hand (the resolver engine of `MCPServer`) -----------------
# Most resolvers return without waiting; awaiting each in a task group of its own would
# cost a scheduler pass per request. The engine steps a resolver's coroutine once in the
# request's task (`first_step`) and, only when it waits, finishes it there (`resume`):
# the same as ``await coro`` on asyncio and trio, by a road the scheduler never sees.


def first_step(coro: Any) -> tuple[bool, Any]:
    """Run a fresh coroutine to its first suspension: ``(True, value)`` if it returned.

    Else ``(False, trap)``: what it yielded to the scheduler (``None`` for a bare yield),
    to be handed to `resume` in this same task.
    """
    try:
        return False, coro.send(None)
    except StopIteration as done:
        return True, done.value


@types.coroutine
def resume(coro: Any, trap: Any) -> Generator[Any, Any, Any]:
    """Go on awaiting a coroutine `first_step` suspended in this task (``yield from`` it).

    The first suspension happened in this task, so its trap belongs to this task (trio
    notes the current task when it parks one): it is resumed here, never handed to
    another task. A cancellation (any exception thrown in) goes into the coroutine.
    """
    value = trap
    while True:
        try:
            sent = yield value
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # cancellation and the like: into the coroutine
            try:
                value = coro.throw(exc)
            except StopIteration as done:
                return done.value
        else:
            try:
                value = coro.send(sent)
            except StopIteration as done:
                return done.value
