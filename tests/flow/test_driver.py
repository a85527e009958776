"""The multi-round-trip driver: the sans-IO flow (no loop, no clock) and the anyio shell."""

from __future__ import annotations

import gc
import json
import logging
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from mrtr._wire.framing import utf8_size
from mrtr.errors import (
    ClientStateError,
    InputLimitExceededError,
    InputRequiredRoundsExceededError,
    InvalidInputResponseError,
    MCPError,
    ProtocolError,
    RequestStateRejectedError,
)
from mrtr.flow._driver import (
    DEFAULT_INPUT_REQUIRED_MAX_ROUNDS,
    CallIdentity,
    InputLimits,
    RoundEvent,
    run_input_required_driver,
)
from mrtr.flow._flow import DispatchInputs, Finish, FlowState, InputRequiredFlow, Retry, Wait
from mrtr.types import (
    CallToolResult,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    ErrorData,
    InputRequiredResult,
    ListRootsRequest,
    ListRootsResult,
    SamplingMessage,
    TextContent,
)

# --- helpers ----------------------------------------------------------------------------


def elicit(message: str = "Which region?") -> ElicitRequest:
    return ElicitRequest(
        params=ElicitRequestFormParams(
            message=message,
            requested_schema={"type": "object", "properties": {"region": {"type": "string"}}},
        )
    )


def sample() -> CreateMessageRequest:
    return CreateMessageRequest(
        params=CreateMessageRequestParams(
            messages=[SamplingMessage(role="user", content=TextContent(text="hi"))], max_tokens=5
        )
    )


ACCEPT = ElicitResult(action="accept", content={"region": "eu-west-1"})
ROOTS = ListRootsResult(roots=[])
SAMPLED = CreateMessageResult(role="assistant", content=TextContent(text="yo"), model="m")
DONE = CallToolResult(content=[TextContent(text="done")])


def asking(*keys: str, state: str | None = None) -> InputRequiredResult:
    return InputRequiredResult(input_requests={k: elicit(k) for k in keys}, request_state=state)


def state_only(state: str = "s") -> InputRequiredResult:
    return InputRequiredResult(request_state=state)


def answer_all(action: DispatchInputs) -> dict[str, Any]:
    return dict.fromkeys(action.requests, ACCEPT)


# --- the sans-IO flow -------------------------------------------------------------------


def test_terminal_first_result_finishes() -> None:
    flow = InputRequiredFlow()
    assert flow.receive_result(DONE) == Finish(DONE)
    assert flow.state.finished
    assert flow.state.round == 0
    with pytest.raises(ClientStateError, match="finished"):
        flow.receive_result(DONE)


def test_round_with_requests_dispatches_then_retries_with_state_echoed() -> None:
    flow = InputRequiredFlow()
    first = asking("a", "b", state="opaque \u00e9 token")
    action = flow.receive_result(first)
    assert isinstance(action, DispatchInputs)
    assert action.round == 1
    assert action.requests is first.input_requests
    assert flow.state.pending is first
    responses = answer_all(action)
    retry = flow.receive_responses(responses)
    assert retry == Retry(1, responses, "opaque \u00e9 token")
    assert retry.request_state is first.request_state  # the very same object: never rebuilt
    assert flow.state.pending is None
    assert flow.receive_result(DONE) == Finish(DONE)


def test_round_without_state_retries_with_none() -> None:
    flow = InputRequiredFlow()
    action = flow.receive_result(asking("a"))
    assert isinstance(action, DispatchInputs)
    assert flow.receive_responses({"a": ACCEPT}).request_state is None


def test_state_only_round_waits_then_retries_without_responses() -> None:
    flow = InputRequiredFlow()
    assert flow.receive_result(state_only("s1")) == Wait(1, 0.05)
    assert flow.wait_elapsed() == Retry(1, None, "s1")


def drive_state_only(flow: InputRequiredFlow, n: int) -> list[float]:
    waits = []
    for i in range(n):
        action = flow.receive_result(state_only(f"s{i}"))
        assert isinstance(action, Wait)
        waits.append(action.seconds)
        flow.wait_elapsed()
    return waits


def test_backoff_schedule_doubles_to_cap_and_resets_on_requests() -> None:
    flow = InputRequiredFlow(max_rounds=20, limits=InputLimits(max_state_only_rounds=20))
    assert drive_state_only(flow, 5) == [0.05, 0.1, 0.2, 0.25, 0.25]
    action = flow.receive_result(asking("a"))
    assert isinstance(action, DispatchInputs)
    flow.receive_responses({"a": ACCEPT})
    assert drive_state_only(flow, 3) == [0.05, 0.1, 0.2]


def test_round_cap_counts_retries_and_carries_last() -> None:
    flow = InputRequiredFlow(max_rounds=2)
    drive_state_only(flow, 2)
    last = state_only("third")
    with pytest.raises(InputRequiredRoundsExceededError) as info:
        flow.receive_result(last)
    assert info.value.max_rounds == 2
    assert info.value.last is last
    assert flow.state.round == 2  # an error leaves the state as it was
    assert flow.state.pending is None


def test_zero_rounds_allows_only_the_first_leg() -> None:
    flow = InputRequiredFlow(max_rounds=0)
    with pytest.raises(InputRequiredRoundsExceededError):
        flow.receive_result(asking("a"))
    assert InputRequiredFlow(max_rounds=0).receive_result(DONE) == Finish(DONE)


def test_default_cap() -> None:
    assert DEFAULT_INPUT_REQUIRED_MAX_ROUNDS == 10
    assert InputRequiredFlow().max_rounds == 10
    assert InputRequiredFlow().limits == InputLimits()


@pytest.mark.parametrize("bad", [-1, 1.5, True, False, "3", None])
def test_bad_max_rounds_is_a_value_error(bad: Any) -> None:
    with pytest.raises(ValueError, match="max_rounds"):
        InputRequiredFlow(max_rounds=bad)


@pytest.mark.parametrize(
    "name", ["max_input_requests", "max_request_state_size", "max_state_only_rounds"]
)
@pytest.mark.parametrize("bad", [-1, True, 2.0])
def test_bad_limits_are_value_errors(name: str, bad: Any) -> None:
    with pytest.raises(ValueError, match=name):
        InputLimits(**{name: bad})


def test_too_many_input_requests() -> None:
    flow = InputRequiredFlow(limits=InputLimits(max_input_requests=3))
    assert isinstance(flow.receive_result(asking("a", "b", "c")), DispatchInputs)
    flow.receive_responses(dict.fromkeys("abc", ACCEPT))
    with pytest.raises(InputLimitExceededError) as info:
        flow.receive_result(asking("a", "b", "c", "d"))
    assert (info.value.limit, info.value.value, info.value.maximum) == ("max_input_requests", 4, 3)
    assert flow.state.round == 1


def test_default_input_request_limit() -> None:
    flow = InputRequiredFlow()
    with pytest.raises(InputLimitExceededError, match="max_input_requests"):
        flow.receive_result(asking(*(str(i) for i in range(65))))
    assert isinstance(flow.receive_result(asking(*(str(i) for i in range(64)))), DispatchInputs)


@pytest.mark.parametrize(
    ("state", "maximum", "size"),
    [
        ("x" * 10, 10, None),  # ASCII at the limit
        ("x" * 11, 10, 11),  # ASCII over
        ("\u00e9" * 5, 10, None),  # two bytes each: 10, at the limit
        ("\u00e9" * 5 + "x", 10, 11),  # 11 bytes, 6 characters
        ("\u20ac" * 2, 10, None),  # short non-ASCII: under the limit whatever it holds
        ("\u20ac" * 4, 10, 12),  # 12 bytes, 4 characters
        ("\U0001f600" * 3, 10, 12),
        ("\ud800" * 4, 10, 12),  # lone surrogates count as three bytes
        ("\u00e9" * 20, 10, 40),  # more characters than bytes allowed
    ],
)
def test_request_state_size_is_exact_utf8(state: str, maximum: int, size: int | None) -> None:
    flow = InputRequiredFlow(limits=InputLimits(max_request_state_size=maximum))
    if size is None:
        assert isinstance(flow.receive_result(state_only(state)), Wait)
        return
    with pytest.raises(InputLimitExceededError) as info:
        flow.receive_result(asking("a", state=state))
    assert (info.value.limit, info.value.value, info.value.maximum) == (
        "max_request_state_size",
        size,
        maximum,
    )


@given(st.text(max_size=300))
def test_utf8_size_matches_encoding(text: str) -> None:
    assert utf8_size(text) == len(text.encode("utf-8", "surrogatepass"))


def test_utf8_size_counts_a_lone_surrogate_as_three_bytes_and_is_the_only_one() -> None:
    import mrtr.flow._flow
    import mrtr.server._stream._shells

    assert utf8_size("a\ud800b") == 5  # JSON can carry one; measuring never raises
    assert mrtr.flow._flow.utf8_size is utf8_size is mrtr.server._stream._shells.utf8_size


def test_utf8_size_of_a_large_string_spans_chunks() -> None:
    text = "\u00e9" * 100_000 + "x"
    assert utf8_size(text) == 200_001


def test_consecutive_state_only_rounds_limit_resets_on_requests() -> None:
    flow = InputRequiredFlow(limits=InputLimits(max_state_only_rounds=2))
    drive_state_only(flow, 2)
    action = flow.receive_result(asking("a"))
    assert isinstance(action, DispatchInputs)
    flow.receive_responses({"a": ACCEPT})
    drive_state_only(flow, 2)
    assert flow.state.state_only_rounds == 2
    with pytest.raises(InputLimitExceededError) as info:
        flow.receive_result(state_only())
    assert (info.value.limit, info.value.value, info.value.maximum) == (
        "max_state_only_rounds",
        3,
        2,
    )


def test_empty_input_requests_is_a_state_only_round() -> None:
    flow = InputRequiredFlow()
    assert flow.receive_result(InputRequiredResult(input_requests={}, request_state="s")) == Wait(
        1, 0.05
    )


def test_misuse_is_reported() -> None:
    flow = InputRequiredFlow()
    with pytest.raises(ClientStateError):
        flow.receive_responses({})
    with pytest.raises(ClientStateError):
        flow.wait_elapsed()
    flow.receive_result(asking("a", "b"))
    with pytest.raises(ClientStateError, match="pending"):
        flow.receive_result(DONE)
    with pytest.raises(ClientStateError):
        flow.wait_elapsed()
    with pytest.raises(ClientStateError, match=r"missing \['b'\], extra \['c'\]"):
        flow.receive_responses({"a": ACCEPT, "c": ACCEPT})
    assert flow.state.pending is not None  # still waiting
    flow.receive_responses({"a": ACCEPT, "b": ACCEPT})
    flow.receive_result(state_only())
    with pytest.raises(ClientStateError):
        flow.receive_responses({})


def test_a_paused_flow_is_a_value_that_resumes() -> None:
    flow = InputRequiredFlow()
    drive_state_only(flow, 2)
    asked = asking("a", state="tok")
    flow.receive_result(asked)
    saved = flow.state
    assert saved == FlowState(round=3, delay=0.05, state_only_rounds=0, pending=asked)
    with pytest.raises(AttributeError):
        saved.round = 9  # type: ignore[misc]
    # written to a store and read back by another process
    restored = FlowState.from_json(json.loads(json.dumps(saved.to_json())))
    assert restored == saved
    resumed = InputRequiredFlow(state=restored)
    assert resumed.receive_responses({"a": ACCEPT}) == Retry(3, {"a": ACCEPT}, "tok")
    assert resumed.receive_result(DONE) == Finish(DONE)
    idle = FlowState()
    assert FlowState.from_json(idle.to_json()) == idle


def test_a_stored_state_must_hold_an_input_required_result() -> None:
    data = FlowState().to_json()
    data["pending"] = {"content": []}
    with pytest.raises(ProtocolError):
        FlowState.from_json(data)


# --- property tests over scripted servers -----------------------------------------------

KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz/_-0", min_size=1, max_size=6)
STATES = st.none() | st.text(max_size=40)


@st.composite
def scripted_round(draw: st.DrawFn) -> InputRequiredResult:
    keys = draw(st.lists(KEYS, max_size=4, unique=True))
    if not keys:
        return InputRequiredResult(request_state=draw(st.text(max_size=40)))
    makers: list[Callable[[], Any]] = [elicit, sample, ListRootsRequest]
    requests = {k: draw(st.sampled_from(makers))() for k in keys}
    return InputRequiredResult(input_requests=requests, request_state=draw(STATES))


ANSWERS: dict[str, Any] = {
    "elicitation/create": ACCEPT,
    "sampling/createMessage": SAMPLED,
    "roots/list": ROOTS,
}


def model_waits(script: list[InputRequiredResult]) -> list[float]:
    """The backoff schedule, computed independently of the flow."""
    waits, run = [], 0
    for result in script:
        if result.input_requests:
            run = 0
        else:
            waits.append(min(0.05 * 2**run, 0.25))
            run += 1
    return waits


@settings(max_examples=150, deadline=None)
@given(st.lists(scripted_round(), max_size=8), st.integers(min_value=0, max_value=6))
def test_flow_follows_any_script(script: list[InputRequiredResult], max_rounds: int) -> None:
    flow = InputRequiredFlow(max_rounds=max_rounds, limits=InputLimits(max_state_only_rounds=99))
    legs: list[Any] = [*script, DONE]
    sent = 1  # the first leg
    waits: list[float] = []
    try:
        for i, result in enumerate(legs):
            action = flow.receive_result(result)
            if isinstance(action, Finish):
                assert action.result is DONE
                break
            assert action.round == i + 1
            if isinstance(action, Wait):
                waits.append(action.seconds)
                retry = flow.wait_elapsed()
                assert retry.input_responses is None
            else:
                asked = action.requests
                responses = {k: ANSWERS[r.method] for k, r in asked.items()}
                retry = flow.receive_responses(responses)
                assert list(retry.input_responses or {}) == list(result.input_requests or {})
            assert retry.request_state is result.request_state  # echoed exactly, only if sent
            sent += 1
    except InputRequiredRoundsExceededError as exc:
        assert len(script) > max_rounds
        assert exc.last is script[max_rounds]
    else:
        assert len(script) <= max_rounds
    assert sent <= max_rounds + 1
    assert waits == model_waits(script[: sent - 1])


class FlowMachine(RuleBasedStateMachine):
    """Random interleavings of rounds, answers, waits and misuse, against a small model.

    (Terminal results are covered by the scripted tests above.)
    """

    LIMITS = InputLimits(max_input_requests=3, max_request_state_size=24, max_state_only_rounds=3)
    MAX_ROUNDS = 6

    def __init__(self) -> None:
        super().__init__()
        self.flow = InputRequiredFlow(max_rounds=self.MAX_ROUNDS, limits=self.LIMITS)
        self.round, self.delay, self.run = 0, 0.05, 0
        self.pending: InputRequiredResult | None = None

    def expected_error(self, result: InputRequiredResult) -> str | None:
        requests = result.input_requests or {}
        state = result.request_state
        if self.round + 1 > self.MAX_ROUNDS:
            return "rounds"
        if state is not None and len(state.encode("utf-8", "surrogatepass")) > 24:
            return "max_request_state_size"
        if len(requests) > 3:
            return "max_input_requests"
        if not requests and self.run + 1 > 3:
            return "max_state_only_rounds"
        return None

    @precondition(lambda self: self.pending is None)
    @rule(
        result=st.builds(
            lambda keys, state, only: (
                InputRequiredResult(request_state=state or "s")
                if only or not keys
                else InputRequiredResult(
                    input_requests={k: ListRootsRequest() for k in keys}, request_state=state
                )
            ),
            st.lists(KEYS, max_size=5, unique=True),
            STATES,
            st.booleans(),
        )
    )
    def server_asks(self, result: InputRequiredResult) -> None:
        error = self.expected_error(result)
        event(f"server asks: {error or 'ok'}")
        before = self.flow.state
        if error == "rounds":
            with pytest.raises(InputRequiredRoundsExceededError) as info:
                self.flow.receive_result(result)
            assert info.value.last is result
        elif error is not None:
            with pytest.raises(InputLimitExceededError) as limit:
                self.flow.receive_result(result)
            assert limit.value.limit == error
        if error is not None:
            assert self.flow.state == before
            return
        action = self.flow.receive_result(result)
        self.round += 1
        self.pending = result
        if result.input_requests:
            assert action == DispatchInputs(self.round, result.input_requests)
            self.delay, self.run = 0.05, 0
        else:
            assert action == Wait(self.round, self.delay)
            self.delay, self.run = min(self.delay * 2, 0.25), self.run + 1

    @precondition(lambda self: self.pending is not None and bool(self.pending.input_requests))
    @rule()
    def client_answers(self) -> None:
        assert self.pending is not None
        responses = dict.fromkeys(self.pending.input_requests or {}, ROOTS)
        retry = self.flow.receive_responses(responses)
        assert retry.input_responses is responses
        assert retry.request_state is self.pending.request_state
        self.pending = None

    @precondition(lambda self: self.pending is not None and not self.pending.input_requests)
    @rule()
    def client_waits(self) -> None:
        assert self.pending is not None
        retry = self.flow.wait_elapsed()
        assert retry == Retry(self.round, None, self.pending.request_state)
        self.pending = None

    @rule()
    def misuse_changes_nothing(self) -> None:
        before = self.flow.state
        if self.pending is not None:
            with pytest.raises(ClientStateError):
                self.flow.receive_result(DONE)
        if self.pending is None or not self.pending.input_requests:
            with pytest.raises(ClientStateError):
                self.flow.receive_responses({})
        if self.pending is None or self.pending.input_requests:
            with pytest.raises(ClientStateError):
                self.flow.wait_elapsed()
        assert self.flow.state == before

    @invariant()
    def state_matches_model_and_survives_a_store(self) -> None:
        state = self.flow.state
        assert state == FlowState(self.round, self.delay, self.run, self.pending)
        assert FlowState.from_json(json.loads(json.dumps(state.to_json()))) == state


TestFlowMachine = FlowMachine.TestCase
TestFlowMachine.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)


# --- the anyio shell --------------------------------------------------------------------


@dataclass
class Server:
    """A scripted server: each retry returns the next result and records what it got."""

    script: list[Any]
    legs: list[tuple[Mapping[str, Any] | None, str | None]] = field(default_factory=list)

    async def retry(self, responses: Mapping[str, Any] | None, state: str | None) -> Any:
        self.legs.append((responses, state))
        return self.script[len(self.legs) - 1]


@dataclass
class FakeClock:
    delays: list[float] = field(default_factory=list)

    async def sleep(self, seconds: float) -> None:
        self.delays.append(seconds)
        await anyio.lowlevel.checkpoint()


async def accept(key: str, request: Any) -> Any:
    return ANSWERS[request.method]


async def never_called(key: str, request: Any) -> Any:
    raise AssertionError("dispatch must not be called")


@pytest.mark.anyio
async def test_shell_returns_a_terminal_first_result_untouched() -> None:
    server = Server([])
    assert await run_input_required_driver(DONE, dispatch=never_called, retry=server.retry) is DONE
    assert server.legs == []


@pytest.mark.anyio
async def test_shell_lets_go_of_a_round_while_its_retry_waits() -> None:
    # With many calls in flight, what each keeps alive while its leg waits is what the
    # collector walks: an unobserved round keeps none of its result, requests or answers.
    script = [asking("a"), asking("b")]
    asked = [weakref.ref(result) for result in script]
    requests = [
        weakref.ref(next(iter((result.input_requests or {}).values()))) for result in script
    ]
    answers: list[weakref.ref[ElicitResult]] = []
    alive: list[tuple[bool, bool, bool]] = []

    async def dispatch(key: str, request: Any) -> Any:
        answer = ElicitResult(action="accept", content={"region": key})
        answers.append(weakref.ref(answer))
        return answer

    async def leg() -> Any:
        gc.collect()
        n = len(alive)
        alive.append((asked[n]() is not None, requests[n]() is not None, answers[n]() is not None))
        return script.pop(0) if script else DONE

    def retry(responses: Mapping[str, Any] | None, state: str | None) -> Any:
        assert responses is not None and set(responses) == {"ab"[len(alive)]}
        return leg()  # like the client's legs: the coroutine keeps only the wire params

    assert await run_input_required_driver(script.pop(0), dispatch=dispatch, retry=retry) is DONE
    assert alive == [(False, False, False), (False, False, False)]


@pytest.mark.anyio
async def test_shell_runs_rounds_to_completion_with_fake_sleep() -> None:
    clock = FakeClock()
    first = InputRequiredResult(
        input_requests={"r": ListRootsRequest(), "s": sample()}, request_state="1"
    )
    server = Server([state_only("2"), state_only("3"), asking("e"), DONE])
    result = await run_input_required_driver(
        first, dispatch=accept, retry=server.retry, sleep=clock.sleep
    )
    assert result is DONE
    assert clock.delays == [0.05, 0.1]
    assert server.legs == [
        ({"r": ROOTS, "s": SAMPLED}, "1"),
        (None, "2"),
        (None, "3"),
        ({"e": ACCEPT}, None),
    ]
    assert list(server.legs[0][0] or {}) == ["r", "s"]  # ordered as asked


@pytest.mark.anyio
async def test_dispatch_is_concurrent() -> None:
    keys = ["a", "b", "c"]
    arrived = {k: anyio.Event() for k in keys}

    async def wait_for_all(key: str, request: Any) -> Any:
        arrived[key].set()
        for other in arrived.values():  # deadlocks unless all run at once
            await other.wait()
        return ACCEPT

    server = Server([DONE])
    with anyio.fail_after(30):
        assert (
            await run_input_required_driver(
                asking(*keys), dispatch=wait_for_all, retry=server.retry
            )
            is DONE
        )
    assert server.legs == [(dict.fromkeys(keys, ACCEPT), None)]


@pytest.mark.anyio
async def test_error_data_cancels_siblings_and_raises_mcp_error() -> None:
    cancelled = anyio.Event()
    started = anyio.Event()

    async def dispatch(key: str, request: Any) -> Any:
        if key == "slow":
            started.set()
            try:
                await anyio.Event().wait()  # never set
            finally:
                cancelled.set()
        await started.wait()
        return ErrorData(code=-32601, message="Elicitation not supported", data={"why": "no"})

    server = Server([DONE])
    with anyio.fail_after(30), pytest.raises(MCPError) as info:
        await run_input_required_driver(asking("slow", "no"), dispatch=dispatch, retry=server.retry)
    assert (info.value.code, info.value.message, info.value.data) == (
        -32601,
        "Elicitation not supported",
        {"why": "no"},
    )
    assert info.value.method == "elicitation/create"
    assert cancelled.is_set()
    assert server.legs == []


@pytest.mark.anyio
async def test_error_data_on_a_single_request() -> None:
    async def refuse(key: str, request: Any) -> Any:
        return ErrorData(code=-32602, message="Invalid or expired requestState")

    with pytest.raises(RequestStateRejectedError):
        await run_input_required_driver(asking("a"), dispatch=refuse, retry=Server([]).retry)


class MyError(Exception):
    pass


class OtherError(Exception):
    pass


@pytest.mark.anyio
async def test_callback_exception_propagates_as_itself_and_cancels_siblings() -> None:
    cancelled = anyio.Event()
    started = anyio.Event()

    async def dispatch(key: str, request: Any) -> Any:
        if key == "slow":
            started.set()
            try:
                await anyio.Event().wait()
            except anyio.get_cancelled_exc_class():
                cancelled.set()
                raise OtherError("raised while being cancelled") from None
        await started.wait()
        raise MyError("boom")

    server = Server([DONE])
    with anyio.fail_after(30), pytest.raises(MyError) as info:
        await run_input_required_driver(
            asking("slow", "boom"), dispatch=dispatch, retry=server.retry
        )
    assert type(info.value) is MyError  # itself: not an exception group, not the sibling's
    assert cancelled.is_set()
    assert server.legs == []


@pytest.mark.anyio
async def test_single_callback_exception_propagates_as_itself() -> None:
    async def dispatch(key: str, request: Any) -> Any:
        raise MyError("boom")

    with pytest.raises(MyError):
        await run_input_required_driver(asking("a"), dispatch=dispatch, retry=Server([]).retry)


@pytest.mark.anyio
async def test_answers_are_checked_and_dicts_coerced() -> None:
    async def dispatch(key: str, request: Any) -> Any:
        return {"action": "accept", "content": {"region": "x"}} if key == "d" else ACCEPT

    server = Server([DONE])
    await run_input_required_driver(asking("d", "m"), dispatch=dispatch, retry=server.retry)
    responses = server.legs[0][0] or {}
    assert responses["d"] == ElicitResult(action="accept", content={"region": "x"})
    assert responses["m"] is ACCEPT  # the right model passes through, not copied


@pytest.mark.anyio
@pytest.mark.parametrize("keys", [("a",), ("a", "wrong")])
async def test_a_wrong_answer_names_its_key_and_nothing_is_sent(keys: tuple[str, ...]) -> None:
    async def dispatch(key: str, request: Any) -> Any:
        return ROOTS if key == keys[-1] else ACCEPT

    server = Server([DONE])
    with pytest.raises(InvalidInputResponseError) as info:
        await run_input_required_driver(asking(*keys), dispatch=dispatch, retry=server.retry)
    assert info.value.key == keys[-1]
    assert info.value.method == "elicitation/create"
    assert server.legs == []


@pytest.mark.anyio
async def test_rounds_exceeded_carries_last() -> None:
    script = [asking("a", state=str(i)) for i in range(1, 10)]
    server = Server(script)
    with pytest.raises(InputRequiredRoundsExceededError) as info:
        await run_input_required_driver(
            asking("a", state="0"), dispatch=accept, retry=server.retry, max_rounds=3
        )
    assert len(server.legs) == 3  # 4 requests in all, with the first
    assert info.value.max_rounds == 3
    assert info.value.last is script[2]


@pytest.mark.anyio
async def test_bad_max_rounds_fails_before_anything() -> None:
    with pytest.raises(ValueError, match="max_rounds"):
        await run_input_required_driver(
            asking("a"), dispatch=never_called, retry=Server([]).retry, max_rounds=-1
        )


@pytest.mark.anyio
async def test_hostile_round_of_5000_requests_dispatches_nothing() -> None:
    server = Server([asking(*(str(i) for i in range(5000)))])
    with pytest.raises(InputLimitExceededError) as info:
        await run_input_required_driver(asking("a"), dispatch=accept, retry=server.retry)
    assert (info.value.limit, info.value.value) == ("max_input_requests", 5000)
    with pytest.raises(InputLimitExceededError):
        await run_input_required_driver(
            asking(*(str(i) for i in range(5000))), dispatch=never_called, retry=Server([]).retry
        )


@pytest.mark.anyio
@pytest.mark.parametrize(
    "first", [asking("a", state="x" * (20 << 20)), state_only("x" * (20 << 20))]
)
async def test_a_20_mib_state_is_never_echoed(first: InputRequiredResult) -> None:
    async def no_retry(responses: Any, state: Any) -> Any:
        raise AssertionError("retry must not be called")

    with pytest.raises(InputLimitExceededError) as info:
        await run_input_required_driver(first, dispatch=never_called, retry=no_retry)
    assert (info.value.limit, info.value.value) == ("max_request_state_size", 20 << 20)


@pytest.mark.anyio
async def test_limits_are_configurable() -> None:
    clock = FakeClock()
    server = Server([state_only(), state_only()])
    with pytest.raises(InputLimitExceededError, match="max_state_only_rounds"):
        await run_input_required_driver(
            state_only(),
            dispatch=never_called,
            retry=server.retry,
            limits=InputLimits(max_state_only_rounds=2),
            sleep=clock.sleep,
        )
    assert len(server.legs) == 2


@pytest.mark.anyio
async def test_on_round_events() -> None:
    events: list[RoundEvent] = []
    call = CallIdentity("tools/call", "provision", {"name": "orders"})
    first = InputRequiredResult(
        input_requests={"q": elicit(), "r": ListRootsRequest()}, request_state="\u00e9t\u00e9"
    )
    server = Server([state_only("abc"), DONE])
    await run_input_required_driver(
        first,
        dispatch=accept,
        retry=server.retry,
        on_round=events.append,
        call=call,
        sleep=FakeClock().sleep,
    )
    assert [(e.round, e.keys, e.kinds, e.request_state_size, e.outcome) for e in events] == [
        (1, ("q", "r"), ("elicitation/create", "roots/list"), 5, "input_required"),
        (2, (), (), 3, "complete"),
    ]
    assert all(e.call is call and e.error is None for e in events)
    assert events[0].wait_seconds == 0.0
    assert events[1].wait_seconds == 0.05
    assert events[1].callback_seconds == 0.0
    assert all(e.callback_seconds >= 0 and e.wire_seconds >= 0 for e in events)


@pytest.mark.anyio
async def test_on_round_reports_failed_rounds() -> None:
    events: list[RoundEvent] = []

    async def dispatch(key: str, request: Any) -> Any:
        raise MyError

    with pytest.raises(MyError):
        await run_input_required_driver(
            asking("a"), dispatch=dispatch, retry=Server([]).retry, on_round=events.append
        )
    with pytest.raises(InputRequiredRoundsExceededError):
        await run_input_required_driver(
            asking("a"),
            dispatch=accept,
            retry=Server([asking("b")]).retry,
            on_round=events.append,
            max_rounds=1,
        )
    assert [(e.round, e.keys, e.outcome, e.error) for e in events] == [
        (1, ("a",), "error", "MyError"),
        (1, ("a",), "input_required", None),
        (2, ("b",), "error", "InputRequiredRoundsExceededError"),
    ]
    assert events[0].request_state_size is None


@pytest.mark.anyio
async def test_a_raising_on_round_is_logged_and_the_call_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def hook(event: RoundEvent) -> None:
        raise MyError("hook")

    with caplog.at_level(logging.WARNING, logger="mrtr.driver"):
        result = await run_input_required_driver(
            asking("a"), dispatch=accept, retry=Server([DONE]).retry, on_round=hook
        )
    assert result is DONE
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert record.exc_info is not None and record.exc_info[0] is MyError


@pytest.mark.anyio
async def test_rounds_are_logged_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="mrtr.driver"):
        await run_input_required_driver(
            asking("a", state="st"),
            dispatch=accept,
            retry=Server([DONE]).retry,
            call=CallIdentity("prompts/get", "briefing"),
        )
        await run_input_required_driver(asking("a"), dispatch=accept, retry=Server([DONE]).retry)
    messages = [r.getMessage() for r in caplog.records if r.name == "mrtr.driver"]
    assert len(messages) == 2
    assert messages[0].startswith("round 1 of prompts/get: 1 input request(s) elicitation/create")
    assert "state 2 bytes" in messages[0] and messages[0].endswith("-> complete")
    assert "a call" in messages[1]


@pytest.mark.anyio
async def test_retry_errors_propagate() -> None:
    events: list[RoundEvent] = []

    async def retry(responses: Any, state: Any) -> Any:
        await anyio.lowlevel.checkpoint()  # the server's time, however short
        raise MCPError(-32602, "Invalid or expired requestState")

    with pytest.raises(MCPError):
        await run_input_required_driver(
            asking("a"), dispatch=accept, retry=retry, on_round=events.append
        )
    assert [e.outcome for e in events] == ["error"]
    assert events[0].wire_seconds > 0  # the refused retry's time is reported, not 0


@pytest.mark.anyio
async def test_outer_cancellation_is_not_swallowed() -> None:
    started = anyio.Event()

    async def dispatch(key: str, request: Any) -> Any:
        started.set()
        await anyio.Event().wait()

    server = Server([DONE])
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                await run_input_required_driver(
                    asking("a", "b"), dispatch=dispatch, retry=server.retry
                )

            tg.start_soon(run)
            await started.wait()
            tg.cancel_scope.cancel()
    assert server.legs == []


@settings(max_examples=40, deadline=None)
@given(st.lists(scripted_round(), max_size=6), st.integers(min_value=0, max_value=5))
def test_shell_follows_any_script(script: list[InputRequiredResult], max_rounds: int) -> None:
    async def main() -> None:
        clock = FakeClock()
        first, rest = (script[0], [*script[1:], DONE]) if script else (DONE, [])
        server = Server(rest)
        asked: list[tuple[str, str]] = []

        async def dispatch(key: str, request: Any) -> Any:
            asked.append((key, request.method))
            return ANSWERS[request.method]

        try:
            result = await run_input_required_driver(
                first,
                dispatch=dispatch,
                retry=server.retry,
                max_rounds=max_rounds,
                limits=InputLimits(max_state_only_rounds=99),
                sleep=clock.sleep,
            )
        except InputRequiredRoundsExceededError as exc:
            assert exc.last is script[max_rounds]
        else:
            assert result is DONE
        assert len(server.legs) <= max_rounds  # + the first leg: at most max_rounds + 1
        for (responses, state), result_ in zip(server.legs, script, strict=False):
            assert state is result_.request_state
            expected = result_.input_requests or None
            assert (responses is None) == (expected is None)
            assert list(responses or {}) == list(expected or {})
        assert clock.delays == model_waits(script[: len(server.legs)])

    anyio.run(main)


def test_round_event_and_call_identity_are_frozen_values() -> None:
    call = CallIdentity("resources/read", "file:///x")
    assert call.arguments is None
    with pytest.raises(AttributeError):
        call.method = "x"  # type: ignore[misc]
