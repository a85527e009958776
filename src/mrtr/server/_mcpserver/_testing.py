"""The testing kit for server authors: preview a round, script the answers, check stability.

`ScriptedClient` speaks real JSON-RPC to the app's low-level server (sealing and all,
no transport): each call is driven round by round with answers looked up by key,
message pattern or callable, and leaves a `Transcript` (rounds, keys asked, state bytes,
resolver and body runs). An unanswered question fails loudly, naming its key.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from mrtr._lazy import publish

if TYPE_CHECKING:
    from mrtr.server._mcpserver._app import MCPServer
    from mrtr.server._mcpserver._resolve._handler import HandlerSpec
    from mrtr.server._mcpserver._rounds._engine import Outcome

__all__ = [
    "ACCEPT",
    "CANCEL",
    "DECLINE",
    "Answers",
    "Preview",
    "PreviewKind",
    "RoundRecord",
    "ScriptedClient",
    "Transcript",
    "assert_questions_stable",
    "preview",
]

DECLINE: dict[str, Any] = {"action": "decline"}
"""An answer that declines an elicitation."""
CANCEL: dict[str, Any] = {"action": "cancel"}
"""An answer that cancels an elicitation."""
ACCEPT: dict[str, Any] = {"action": "accept"}
"""Accept with no content (rarely right; for testing the engine's check)."""

_MODERN = "2026-07-28"
_ALL_CAPS: dict[str, Any] = {"elicitation": {"form": {}}, "sampling": {"tools": {}}, "roots": {}}


PreviewKind = Literal["tool", "prompt", "resource"]
"""Which kind of handler a preview or a stability check renders."""


@dataclass(frozen=True, slots=True)
class Preview:
    """What round 1 of a call asks (no client, no sealing).

    Attributes:
        questions: the input requests by key (empty when the call completes at once),
            whether the engine built them (resolvers, ``ctx.ask``) or the handler
            returned its own ``InputRequiredResult`` (the manual form).
        result: the body's return value when nothing is asked, else ``None``.
        request_state: the plain-text state a manual handler set with its questions
            (``None`` otherwise: the engine's own state is not shown).
    """

    questions: dict[str, Any]
    result: Any
    request_state: str | None = None

    @property
    def keys(self) -> list[str]:
        """The keys asked, in order."""
        return list(self.questions)

    @property
    def asks(self) -> bool:
        """Whether round 1 asks anything."""
        return bool(self.questions)

    def messages(self) -> dict[str, str]:
        """The message of each elicitation asked, by key."""
        found = {}
        for key, request in self.questions.items():
            message = getattr(getattr(request, "params", None), "message", None)
            if isinstance(message, str):
                found[key] = message
        return found

    def to_wire(self) -> dict[str, Any]:
        """The questions as the client would receive them, by key (JSON-ready)."""
        return {key: request.to_wire() for key, request in self.questions.items()}


def _spec_for(
    app: MCPServer, kind: PreviewKind, name: str, arguments: dict[str, Any]
) -> tuple[HandlerSpec, dict[str, Any]]:
    """The handler `kind` `name` serves, and the arguments it is called with (raw)."""
    registry = app.spec.registry
    if kind == "tool":
        tool = registry.tools.get(name)
        if tool is None:
            raise KeyError(f"no tool {name!r}")
        return tool.spec, arguments
    if kind == "prompt":
        prompt = registry.prompts.get(name)
        if prompt is None:
            raise KeyError(f"no prompt {name!r}")
        return prompt.spec, arguments
    if kind == "resource":
        found = app.spec.find_resource(name)
        if found is None:
            raise KeyError(f"no resource or resource template serves {name!r}")
        return found[0].spec, found[1]
    raise ValueError(f"kind must be 'tool', 'prompt' or 'resource', not {kind!r}")


async def preview(
    app: MCPServer,
    name: str,
    arguments: dict[str, Any] | None = None,
    *,
    kind: PreviewKind = "tool",
) -> Preview:
    """Run round 1 of a tool, prompt or resource in process and return what it asks.

    Args:
        app: the server.
        name: the tool or prompt name, or the resource URI (a concrete one: a template's
            variables are read from it).
        arguments: the tool's or prompt's arguments (none for a resource).
        kind: ``"tool"``, ``"prompt"`` or ``"resource"``.

    Raises:
        KeyError: nothing of that kind is registered under `name`.
        ValueError: another `kind`.
        pydantic.ValidationError: the arguments do not fit the signature.
    """
    from mrtr.server._mcpserver._rounds import _engine
    from mrtr.types import InputRequiredResult

    spec, raw = _spec_for(app, kind, name, dict(arguments or {}))
    outcome = await _engine.run(spec, app.spec, None, spec.validate(raw))
    result = outcome.result
    if isinstance(result, InputRequiredResult):  # the manual form: the handler's own
        return Preview(dict(result.input_requests or {}), None, result.request_state)
    if outcome.input_required and outcome.round is not None:
        return Preview(dict(outcome.round.open), None)
    return Preview({}, result)


Answer = Any
"""An answer: a response dict or model, `DECLINE`/`CANCEL`, or ``callable(request)``."""


class Answers:
    """Scripted answers, looked up by key, then by message pattern, then by a default.

    ``Answers({"region": {"region": "eu-west-1"}, "confirm": Answers.DECLINE})``: a plain dict
    that is not a response (no ``action``/``model``/``roots``) is accepted elicitation
    content; a scalar answers a one-field (``Elicit(msg, bool)``) form.

    Args:
        by_key: answers by question key.
        by_message: answers for the elicitations whose message matches a pattern.
        default: the answer to anything else (``None``: fail, naming the key).
    """

    DECLINE = DECLINE
    CANCEL = CANCEL

    def __init__(
        self,
        by_key: Mapping[str, Answer] | None = None,
        *,
        by_message: Mapping[str, Answer] | None = None,
        default: Answer | None = None,
    ) -> None:
        self.by_key = dict(by_key or {})
        self.by_message = [(re.compile(p), a) for p, a in (by_message or {}).items()]
        self.default = default

    def answer(self, key: str, request: Any) -> Any:
        """The wire answer to `request` under `key` (AssertionError when none fits)."""
        message = getattr(getattr(request, "params", None), "message", None)
        chosen: Any = self.by_key.get(key, _MISSING)
        if chosen is _MISSING and isinstance(message, str):
            for pattern, candidate in self.by_message:
                if pattern.search(message):
                    chosen = candidate
                    break
        if chosen is _MISSING:
            chosen = self.default if self.default is not None else _MISSING
        if chosen is _MISSING:
            raise AssertionError(f"no scripted answer for question {key!r} ({message!r})")
        if callable(chosen):
            chosen = chosen(request)
        return _wire_answer(request, chosen)


_MISSING = object()


def _wire_answer(request: Any, value: Any) -> Any:
    from pydantic import BaseModel

    from mrtr.server._mcpserver._asks import WRAPPED_FIELD

    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, exclude_none=True, mode="json")
    method = getattr(request, "method", None)
    if method != "elicitation/create":
        return value
    if isinstance(value, dict) and "action" in value:
        return value
    if not isinstance(value, dict):
        value = {WRAPPED_FIELD: value}
    return {"action": "accept", "content": value}


@dataclass(slots=True)
class RoundRecord:
    """One round of a scripted call."""

    keys: list[str]
    state_bytes: int
    resolver_runs: dict[str, int]
    body_ran: bool


@dataclass(slots=True)
class Transcript:
    """What a scripted call did, round by round, and how it ended.

    ``exception`` is what made the call fail on the server (a resolver's, an override's
    or the body's), which the client only sees as "Error executing tool ..."; `why`
    says it in one line.
    """

    rounds: list[RoundRecord] = field(default_factory=list)
    result: Any = None
    error: dict[str, Any] | None = None
    exception: BaseException | None = None

    @property
    def why(self) -> str | None:
        """Why the call failed (the server's exception, else the error's message), or None."""
        if self.exception is not None:
            return f"{type(self.exception).__name__}: {self.exception}"
        if self.error is not None:
            return str(self.error.get("message"))
        if isinstance(self.result, dict) and self.result.get("isError"):
            content = self.result.get("content") or [{}]
            return str(content[0].get("text"))
        return None

    @property
    def body_runs(self) -> int:
        """How often the body ran."""
        return sum(1 for r in self.rounds if r.body_ran)

    def resolver_runs(self, key: str) -> int:
        """How often the resolver with question `key` ran over the call."""
        return sum(r.resolver_runs.get(key, 0) for r in self.rounds)

    @property
    def asked(self) -> list[list[str]]:
        """The keys asked by each round (the last, complete round asks none)."""
        return [r.keys for r in self.rounds]


class ScriptedClient:
    """Drive calls against an app in process with scripted answers (a test client).

    ``async with app.test_client(answers=Answers({...})) as client:`` then
    ``transcript = await client.call_tool("provision", {"name": "db"})``.

    Args:
        app: the server.
        answers: the script (`Answers`, or a plain mapping by key).
        capabilities: the client capabilities declared (default: all of them).
        max_rounds: the bound on rounds per call (AssertionError past it).
    """

    def __init__(
        self,
        app: MCPServer,
        *,
        answers: Answers | Mapping[str, Answer] | None = None,
        capabilities: dict[str, Any] | None = None,
        max_rounds: int = 10,
    ) -> None:
        self.app = app
        self.answers = answers if isinstance(answers, Answers) else Answers(answers)
        self.capabilities = _ALL_CAPS if capabilities is None else capabilities
        self.max_rounds = max_rounds
        self._ids = 0
        self._outcomes: list[Outcome] = []
        self._failures: list[BaseException] = []

    async def __aenter__(self) -> ScriptedClient:
        self.app.spec.observers.append(self._outcomes.append)
        self.app.spec.failure_observers.append(self._failures.append)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.app.spec.observers.remove(self._outcomes.append)
        self.app.spec.failure_observers.remove(self._failures.append)

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> Transcript:
        """Call tool `name` until it completes; its `Transcript` (``.result`` the wire)."""
        return await self._drive("tools/call", {"name": name, "arguments": arguments or {}})

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> Transcript:
        """Get prompt `name` until it completes."""
        return await self._drive("prompts/get", {"name": name, "arguments": arguments or {}})

    async def read_resource(self, uri: str) -> Transcript:
        """Read `uri` until it completes."""
        return await self._drive("resources/read", {"uri": uri})

    async def _drive(self, method: str, params: dict[str, Any]) -> Transcript:
        from mrtr.types import validate_input_response
        from mrtr.types._input import ElicitRequest

        connection = self.app.connection()
        transcript = Transcript()
        extra: dict[str, Any] = {}
        for _ in range(self.max_rounds + 1):
            self._ids += 1
            self._outcomes.clear()
            self._failures.clear()
            message = {
                "jsonrpc": "2.0",
                "id": self._ids,
                "method": method,
                "params": {**params, **extra, "_meta": self._meta()},
            }
            response = await connection.handle(message, emit=_discard)
            assert response is not None
            outcome = self._outcomes[-1] if self._outcomes else None
            if self._failures:
                transcript.exception = self._failures[-1]
            if "error" in response:
                transcript.error = response["error"]
                self._record(transcript, [], 0, outcome)
                return transcript
            result = response["result"]
            if result.get("resultType") != "input_required":
                transcript.result = result
                self._record(transcript, [], 0, outcome)
                return transcript
            requests = result.get("inputRequests") or {}
            state = result.get("requestState")
            self._record(transcript, list(requests), len(state or ""), outcome)
            answers: dict[str, Any] = {}
            for key, raw in requests.items():
                request = _parse_request(raw)
                wire = self.answers.answer(key, request)
                method_of = (
                    "elicitation/create"
                    if isinstance(request, ElicitRequest)
                    else raw.get("method")
                )
                validate_input_response(str(method_of), wire, key=key)
                answers[key] = wire
            extra = {"inputResponses": answers}
            if state is not None:
                extra["requestState"] = state
        raise AssertionError(f"{method} did not complete within {self.max_rounds} rounds")

    def _meta(self) -> dict[str, Any]:
        return {
            "io.modelcontextprotocol/protocolVersion": _MODERN,
            "io.modelcontextprotocol/clientCapabilities": self.capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": "mrtr-scripted", "version": "1"},
        }

    @staticmethod
    def _record(
        transcript: Transcript, keys: list[str], state_bytes: int, outcome: Outcome | None
    ) -> None:
        transcript.rounds.append(
            RoundRecord(
                keys=keys,
                state_bytes=state_bytes,
                resolver_runs=dict(outcome.resolver_runs) if outcome else {},
                body_ran=bool(outcome and outcome.body_ran),
            )
        )


def _parse_request(raw: dict[str, Any]) -> Any:
    from pydantic import TypeAdapter

    from mrtr.types import InputRequest

    return TypeAdapter(InputRequest).validate_python(raw)


async def _discard(message: dict[str, Any]) -> None:
    return None


async def assert_questions_stable(
    app: MCPServer,
    name: str,
    arguments: dict[str, Any] | None = None,
    *,
    kind: PreviewKind = "tool",
    between: Callable[[], Any] | None = None,
) -> None:
    """Fail when a handler asks a different round-1 question twice in a row.

    Renders round 1 of the tool (or, with `kind`, the prompt or the resource URI) twice,
    calling `between` in between (e.g. a fake clock's tick), and compares the questions:
    a question built from the clock or a live rate fails here, in CI, instead of making
    users answer twice.

    Raises:
        AssertionError: a question changed, naming its key and what changed.
        KeyError: nothing of that kind is registered under `name`.
    """
    first = await preview(app, name, arguments, kind=kind)
    if between is not None:
        outcome = between()
        if hasattr(outcome, "__await__"):
            await outcome
    second = await preview(app, name, arguments, kind=kind)
    a, b = first.to_wire(), second.to_wire()
    if a != b:
        changed = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        parts = sorted({part for k in changed for part in _changed_parts(a.get(k), b.get(k))})
        raise AssertionError(
            f"{kind} {name!r}: the questions {changed} change between renders "
            f"({', '.join(parts)} differs); build them only from the arguments and "
            "earlier answers"
        )


def _changed_parts(a: Any, b: Any) -> list[str]:
    """Which parts of one question differ between two renders (asked / not asked too)."""
    if a is None or b is None:
        return ["whether it is asked"]
    pa, pb = a.get("params") or {}, b.get("params") or {}
    if a.get("method") != b.get("method"):
        return ["kind"]
    if a.get("method") == "elicitation/create":
        names = [n for n in ("message", "requestedSchema") if pa.get(n) != pb.get(n)]
        return [{"requestedSchema": "schema"}.get(n, n) for n in names] or ["question"]
    return ["sampling parameters" if a.get("method") == "sampling/createMessage" else "request"]


publish(
    "mrtr.server",
    Answers,
    Preview,
    RoundRecord,
    ScriptedClient,
    Transcript,
    assert_questions_stable,
)
