"""The questions a resolver (or ``ctx.ask``) returns: `Elicit`, `Sample`, `ListRoots`.

A question knows three things the engine needs: the wire request it renders to, the
digest an answer is pinned to (message and schema, or the sampling parameters), and how
to turn the client's answer into the value the consumer receives. The form schema of an
`Elicit` is rendered from its type once per type (and checked: a shape the elicitation
schema cannot express is `InvalidSignature`, never a crash mid-call).
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar, Union, get_args, get_origin, overload

from pydantic import BaseModel, TypeAdapter, ValidationError
from typing_extensions import is_typeddict

import mrtr.types as wire
from mrtr._lazy import publish
from mrtr.server._mcpserver._answer import problems
from mrtr.server._mcpserver._errors import InvalidSignature, ToolError
from mrtr.server._mcpserver._outcomes import (
    AcceptedElicitation,
    CancelledElicitation,
    DeclinedElicitation,
)
from mrtr.types._validation import first_errors

__all__ = [
    "Ask",
    "Elicit",
    "ElicitUrl",
    "FormSchema",
    "ListRoots",
    "Resolve",
    "Sample",
    "digest",
    "form_of",
    "identity",
    "remember",
]

T = TypeVar("T")

_SCALARS = (bool, int, float, str)
_PRIMITIVE_TYPES = frozenset({"string", "number", "integer", "boolean"})
WRAPPED_FIELD = "value"
"""The one field of the form a scalar question (``Elicit(msg, bool)``) renders to."""


_CACHED = 512  # question types, rendered questions, message digests kept (cleared when full)
_CACHED_TEXT = 1024  # ... of messages up to this many characters only
_DIGESTS: dict[str, str] = {}
_REQUESTS: dict[tuple[str, str], Any] = {}


def remember(cache: dict[Any, Any], key: Any, value: Any, message: str) -> None:
    """Keep `value` for the next leg, unless `message` is long; start over when full."""
    if len(message) <= _CACHED_TEXT:
        if len(cache) >= _CACHED:
            cache.clear()
        cache[key] = value


def digest(value: Any) -> str:
    """A short, stable fingerprint of a JSON value (what an answer is pinned to)."""
    if isinstance(value, str):
        known = _DIGESTS.get(value)
        if known is not None:  # the same question on its next leg
            return known
        text = "s" + value  # a string needs no canonical JSON (and is most of the work)
    else:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    raw = hashlib.sha256(text.encode()).digest()[:16]
    found = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    if isinstance(value, str):
        remember(_DIGESTS, value, found, value)
    return found


def identity(fn: Any) -> Any:
    """What makes two references the same resolver (bound methods compare by owner).

    Two `Resolve` markers naming it share one node; a dependency override matches it.
    """
    owner = getattr(fn, "__self__", None)
    func = getattr(fn, "__func__", None)
    if owner is not None and func is not None:
        return (id(owner), func)
    return fn


def _not_accepted(key: str, response: Any) -> DeclinedElicitation | CancelledElicitation | None:
    """A declined or cancelled elicitation's outcome; ``None`` when it was accepted.

    Raises:
        ToolError: `response` is no elicitation result.
    """
    if not isinstance(response, wire.ElicitResult):
        raise ToolError(f"Resolver {key!r} received a non-elicitation response")
    if response.action == "decline":
        return DeclinedElicitation()
    if response.action == "cancel":
        return CancelledElicitation()
    return None


@dataclass(frozen=True, slots=True)
class Resolve:
    """Mark a parameter as filled by a resolver: ``Annotated[T, Resolve(fn)]``.

    Args:
        fn: the resolver, sync or async. It may take the `Context`, other resolved
            values (``Annotated[U, Resolve(g)]``) and the handler's arguments by name,
            and returns the value or a question (`Elicit`, `Sample`, `ListRoots`).
        key: the question's key on the wire (default: ``fn.__name__``); unique per
            handler. Keep it stable across deploys: in-flight answers are keyed by it.
    """

    fn: Callable[..., Any]
    key: str | None = None


@dataclass(frozen=True, slots=True)
class FormSchema:
    """A question type rendered: the wire schema and how to read an answer back."""

    schema: dict[str, Any]
    adapter: TypeAdapter[Any]
    wrapped: bool
    digest: str = ""

    def read(self, content: dict[str, Any]) -> Any:
        """The Python value of an accepted answer (raises ValidationError)."""
        if self.wrapped:
            return self.adapter.validate_python(content.get(WRAPPED_FIELD))
        return self.adapter.validate_python(content)


_FORMS: dict[Any, FormSchema] = {}


def _is_scalar(tp: Any) -> bool:
    if tp in _SCALARS or get_origin(tp) is Literal:
        return True
    return isinstance(tp, type) and issubclass(tp, enum.Enum)


def _is_object_type(tp: Any) -> bool:
    if not isinstance(tp, type):
        return False
    return issubclass(tp, BaseModel) or dataclasses.is_dataclass(tp) or is_typeddict(tp)


def _unwrap(name: str, prop: dict[str, Any], defs: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """`prop` without its Optional arm, null default or enum ``$ref``; and if optional."""
    optional = False
    if "default" in prop and prop["default"] is None:  # no null in a primitive schema
        prop = {k: v for k, v in prop.items() if k != "default"}
        optional = True
    if "anyOf" in prop:
        arms = [arm for arm in prop["anyOf"] if arm.get("type") != "null"]
        if len(arms) != 1 or len(arms) == len(prop["anyOf"]):
            raise InvalidSignature(_bad_field(name, prop))
        optional = True
        prop = {**{k: v for k, v in prop.items() if k != "anyOf"}, **arms[0]}
    if "$ref" in prop:
        target = defs.get(prop["$ref"].rsplit("/", 1)[-1], {})
        if "enum" not in target:  # a nested model: not a primitive field
            raise InvalidSignature(_bad_field(name, prop))
        prop = {**target, **{k: v for k, v in prop.items() if k != "$ref"}}
    if "type" not in prop and all(isinstance(v, str) for v in prop.get("enum", [None])):
        prop = {**prop, "type": "string"}
    return prop, optional


def _multi_select(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any] | None:
    """`prop` as a multi-select of strings (an array of enum), or ``None``."""
    items = prop.get("items")
    if prop.get("type") != "array" or not isinstance(items, dict):
        return None
    if "$ref" in items:
        items = defs.get(items["$ref"].rsplit("/", 1)[-1], {})
    if "enum" in items:
        return {**prop, "items": {"type": "string", "enum": items["enum"]}}
    choices = items.get("anyOf") or items.get("oneOf")
    if isinstance(choices, list) and choices and all("const" in c for c in choices):
        return prop  # a titled multi-select
    return None


def _flatten(name: str, prop: dict[str, Any], defs: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """One property as a primitive schema, and whether it may be left out (Optional)."""
    prop, optional = _unwrap(name, prop, defs)
    if prop.get("type") in _PRIMITIVE_TYPES:
        return prop, optional
    multi = _multi_select(prop, defs)
    if multi is None:
        raise InvalidSignature(_bad_field(name, prop))
    return multi, optional


def _bad_field(name: str, prop: dict[str, Any]) -> str:
    return (
        f"elicitation schema field {name!r} renders as {json.dumps(prop)}, which is not a "
        "primitive (string, number, integer, boolean, enum, or a multi-select of enums): "
        "a form cannot nest objects; flatten it or ask in two questions"
    )


def form_of(tp: Any) -> FormSchema:
    """Render (once per type) the form a question of type `tp` is asked with.

    Raises:
        InvalidSignature: the type is not a model, dataclass, TypedDict or scalar, or one
            of its fields is not a primitive the elicitation schema can carry.
    """
    try:
        cached = _FORMS.get(tp)
        hashable = True
    except TypeError:  # an unhashable annotation: rendered every time
        cached, hashable = None, False
    if cached is not None:
        return cached
    try:
        form = _render(tp)
    except InvalidSignature:
        raise
    except Exception as exc:  # pydantic cannot describe it (a typing.TypedDict on 3.11, ...)
        raise InvalidSignature(f"Elicit cannot ask for {tp!r}: {exc}") from exc
    if hashable:  # bounded like its siblings: a type built per call (a Literal of the
        remember(_FORMS, tp, form, "")  # client's options) would add an entry per call
    return form


def _render(tp: Any) -> FormSchema:
    if _is_scalar(tp):
        adapter: TypeAdapter[Any] = TypeAdapter(tp)
        prop, _ = _flatten(WRAPPED_FIELD, adapter.json_schema(), {})
        prop.pop("title", None)
        schema = {
            "type": "object",
            "properties": {WRAPPED_FIELD: prop},
            "required": [WRAPPED_FIELD],
        }
        form = FormSchema(schema, adapter, wrapped=True, digest=digest(schema))
    elif _is_object_type(tp):
        adapter = TypeAdapter(tp)
        raw = adapter.json_schema()
        defs = raw.get("$defs", {})
        properties: dict[str, Any] = {}
        required: list[str] = []
        for name, prop in raw.get("properties", {}).items():
            flat, optional = _flatten(name, prop, defs)
            properties[name] = flat
            if name in raw.get("required", ()) and not optional:
                required.append(name)
        schema = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        form = FormSchema(schema, adapter, wrapped=False, digest=digest(schema))
    else:
        raise InvalidSignature(
            f"Elicit cannot ask for a {tp!r}: use a pydantic model, a dataclass, a TypedDict, "
            "or bool, int, float, str, a Literal or an Enum"
        )
    return form


class Ask:
    """What every question has (private base): a key and a way to render and read it."""

    __slots__ = ("key",)
    kind: str = ""
    method: str = ""
    key: str | None

    def capability(self) -> dict[str, Any]:
        """The client capability this question needs."""
        raise NotImplementedError

    def parts(self, note: str | None = None) -> dict[str, str]:
        """The digests of what an answer is pinned to (`note`: a re-ask's reason)."""
        raise NotImplementedError

    def request(self, note: str | None = None) -> Any:
        """The input request to send."""
        raise NotImplementedError

    def backchannel_request(self, key: str) -> Any:
        """The request a legacy client is sent mid-call (the same, but for URL mode)."""
        return self.request()

    def read(self, key: str, response: Any) -> Any:
        """The outcome of an answer (raises ToolError when it is not one)."""
        raise NotImplementedError


class Elicit(Ask, Generic[T]):
    """Ask the user: ``return Elicit("Which region?", Region)`` from a resolver.

    Args:
        message: what the user reads. Build it only from the arguments and earlier
            answers: an answer counts only for the exact question it was given under.
        schema: the answer's type: a pydantic model, a dataclass, a TypedDict, or a
            scalar (``bool``, ``int``, ``float``, ``str``, a ``Literal``, an ``Enum``),
            which is asked as a one-field form and unwrapped. An answer is held to the
            rendered schema (strict JSON types, finite numbers, choices, bounds,
            formats) before the type reads it.
        key: the wire key (``ctx.ask``; a resolver's key comes from `Resolve`, and a
            resolver that returns a question with another key fails the call).
        pin: ``"question"`` (message and schema; the default) or ``"schema"``: an
            answer stays valid when only the message changed. Weaker (the user may
            have confirmed other text); for messages that show live data.
        on_invalid: ``"error"`` (an answer that does not fit the type ends the call)
            or ``"reask"`` (ask again, with the problem, at most ``max_reasks`` times).
        max_reasks: the bound on ``"reask"``.
    """

    __slots__ = ("form", "max_reasks", "message", "on_invalid", "pin", "schema")
    kind = "elicit"
    method = "elicitation/create"

    @overload
    def __init__(
        self: Elicit[T],
        message: str,
        schema: type[T],
        *,
        key: str | None = None,
        pin: Literal["question", "schema"] = "question",
        on_invalid: Literal["error", "reask"] = "error",
        max_reasks: int = 1,
    ) -> None: ...
    @overload
    def __init__(
        self: Elicit[Any],
        message: str,
        schema: Any,
        *,
        key: str | None = None,
        pin: Literal["question", "schema"] = "question",
        on_invalid: Literal["error", "reask"] = "error",
        max_reasks: int = 1,
    ) -> None: ...
    def __init__(
        self,
        message: str,
        schema: Any,
        *,
        key: str | None = None,
        pin: Literal["question", "schema"] = "question",
        on_invalid: Literal["error", "reask"] = "error",
        max_reasks: int = 1,
    ) -> None:
        if pin not in ("question", "schema"):
            raise ValueError(f"pin must be 'question' or 'schema', not {pin!r}")
        if on_invalid not in ("error", "reask"):
            raise ValueError(f"on_invalid must be 'error' or 'reask', not {on_invalid!r}")
        if max_reasks < 0:
            raise ValueError("max_reasks must not be negative")
        self.message = message
        self.schema = schema
        self.key = key
        self.pin = pin
        self.on_invalid = on_invalid
        self.max_reasks = max_reasks
        self.form = form_of(schema)

    def __repr__(self) -> str:
        return f"Elicit({self.message!r}, {getattr(self.schema, '__name__', self.schema)})"

    def capability(self) -> dict[str, Any]:
        """The client capability this question needs."""
        return {"elicitation": {"form": {}}}

    def _message(self, note: str | None) -> str:
        return self.message if note is None else f"{self.message}\n\n{note}"

    def parts(self, note: str | None = None) -> dict[str, str]:
        """The digests of what an answer is pinned to (`note`: a re-ask's reason)."""
        if self.pin == "schema":
            return {"schema": self.form.digest}
        return {"message": digest(self._message(note)), "schema": self.form.digest}

    def request(self, note: str | None = None) -> Any:
        """The input request to send."""
        message = self._message(note)
        key = (message, self.form.digest)
        known = _REQUESTS.get(key)
        if known is not None:  # a frozen model: the same question may share it
            return known
        params = wire.ElicitRequestFormParams(message=message, requested_schema=self.form.schema)
        request = wire.ElicitRequest(params=params)
        remember(_REQUESTS, key, request, message)
        return request

    def read(self, key: str, response: Any) -> Any:
        """The outcome of an answer (raises ToolError when it is not one)."""
        refused = _not_accepted(key, response)
        if refused is not None:
            return refused
        if response.content is None:
            raise ToolError(f"Resolver {key!r} received an accepted elicitation with no content")
        content = dict(response.content)
        # held to the advertised schema first: the type alone reads "nan" as a number
        found = problems(self.form.schema, content)
        if not found:
            try:
                return AcceptedElicitation(self.form.read(content))
            except ValidationError as exc:
                found = {
                    ".".join(str(p) for p in e["loc"]) or WRAPPED_FIELD: e["msg"]
                    for e in first_errors(exc, _NAMED_FIELDS + 1)
                }
        raise InvalidAnswer(key, found)


_NAMED_FIELDS = 10  # a hostile answer may hold many bad fields: the error names a few
_FIELD_NAME = 64  # ... each cut to this many characters


class InvalidAnswer(ToolError):
    """An accepted answer that does not fit the question's type (private).

    It names the fields and why (never the values), a few of them: a field name may be
    the client's own (an extra field a model forbids).
    """

    def __init__(self, key: str, found: dict[str, str]) -> None:
        names = sorted(found)
        shown = names[:_NAMED_FIELDS]
        more = ", ..." if len(names) > _NAMED_FIELDS else ""
        reasons = "; ".join(f"{name[:_FIELD_NAME]}: {found[name]}" for name in shown)
        super().__init__(
            f"Resolver {key!r} received an accepted elicitation whose content does not match "
            f"the requested schema ({reasons}{more})"
        )
        self.fields = [name[:_FIELD_NAME] for name in shown] + (["..."] if more else [])

    def note(self) -> str:
        """The reason shown to the user when the question is asked again."""
        return "The previous answer was not valid (" + ", ".join(self.fields) + "); try again."


class ElicitUrl(Ask):
    """Send the user to a URL out of band: ``return ElicitUrl("Sign in to Acme", url)``.

    For what must not pass through the client (credentials, a payment, a third-party
    OAuth consent). The outcome says whether the user agreed to go
    (``AcceptedElicitation(None)``, or declined / cancelled), not what happened there:
    check your own record of the flow after it, and ask again under another key (or
    another URL) when it is not finished.

    Args:
        message: why the user should go there (pinned with the URL, as `Elicit`'s).
        url: where to send them; the client shows it and never fetches it.
        elicitation_id: the id a 2025-11-25 client receives (and a later
            ``notifications/elicitation/complete`` names); default: the question's key.
            A 2026-07-28 request carries none (the state correlates the answer).
        key: the wire key (``ctx.ask``; a resolver's key comes from `Resolve`, and a
            resolver that returns a question with another key fails the call).
    """

    __slots__ = ("elicitation_id", "message", "url")
    kind = "elicit_url"
    method = "elicitation/create"

    def __init__(
        self,
        message: str,
        url: str,
        *,
        elicitation_id: str | None = None,
        key: str | None = None,
    ) -> None:
        self.message = message
        self.url = url
        self.elicitation_id = elicitation_id
        self.key = key

    def __repr__(self) -> str:
        return f"ElicitUrl({self.message!r}, {self.url!r})"

    def capability(self) -> dict[str, Any]:
        """The client capability this question needs."""
        return {"elicitation": {"url": {}}}

    def parts(self, note: str | None = None) -> dict[str, str]:
        """The digests of what an answer is pinned to: the message and the URL."""
        return {"message": digest(self.message), "url": digest(self.url)}

    def request(self, note: str | None = None) -> Any:
        """The input request to send (2026-07-28: no ``elicitationId``)."""
        params = wire.ElicitRequestURLParams(message=self.message, url=self.url)
        return wire.ElicitRequest(params=params)

    def backchannel_request(self, key: str) -> Any:
        """The request a 2025-11-25 client is sent (with its ``elicitationId``)."""
        params = wire.ElicitRequestURLParams(
            message=self.message, url=self.url, elicitation_id=self.elicitation_id or key
        )
        return wire.ElicitRequest(params=params)

    def read(self, key: str, response: Any) -> Any:
        """The outcome of an answer (raises ToolError when it is not one)."""
        refused = _not_accepted(key, response)
        return AcceptedElicitation(None) if refused is None else refused


class Sample(Ask):
    """Ask the client's model: ``return Sample("Summarise ...", max_tokens=200)``.

    ``messages`` is a list of `SamplingMessage` (or of plain strings, each a user
    message). The consumer receives the `CreateMessageResult`. Its answer rides the
    state on later rounds (bounded by ``max_state_bytes``).
    """

    __slots__ = ("params",)
    kind = "sample"
    method = "sampling/createMessage"

    def __init__(
        self,
        messages: Sequence[Any] | str,
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        include_context: Literal["none", "thisServer", "allServers"] | None = None,
        temperature: float | None = None,
        stop_sequences: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        model_preferences: Any = None,
        tools: list[Any] | None = None,
        tool_choice: Any = None,
        key: str | None = None,
    ) -> None:
        from mrtr.types import CreateMessageRequestParams, SamplingMessage, TextContent

        items = [messages] if isinstance(messages, str) else list(messages)
        built = [
            SamplingMessage(role="user", content=TextContent(type="text", text=m))
            if isinstance(m, str)
            else m
            for m in items
        ]
        self.key = key
        self.params = CreateMessageRequestParams(
            messages=built,
            max_tokens=max_tokens,
            system_prompt=system_prompt,
            include_context=include_context,
            temperature=temperature,
            stop_sequences=stop_sequences,
            metadata=metadata,
            model_preferences=model_preferences,
            tools=tools,
            tool_choice=tool_choice,
        )

    def __repr__(self) -> str:
        return f"Sample(max_tokens={self.params.max_tokens})"

    def capability(self) -> dict[str, Any]:
        """The client capability this question needs."""
        return {"sampling": {"tools": {}} if self.params.tools else {}}

    def parts(self, note: str | None = None) -> dict[str, str]:
        """The digests of what an answer is pinned to (`note`: a re-ask's reason)."""
        return {"sampling parameters": digest(self.params.to_wire())}

    def request(self, note: str | None = None) -> Any:
        """The input request to send."""
        from mrtr.types import CreateMessageRequest

        return CreateMessageRequest(params=self.params)

    def read(self, key: str, response: Any) -> Any:
        """The outcome of an answer (raises ToolError when it is not one)."""
        from mrtr.types import CreateMessageResult

        if not isinstance(response, CreateMessageResult):
            raise ToolError(f"Resolver {key!r} received a response of the wrong kind")
        return response


class ListRoots(Ask):
    """Ask which roots the client exposes; the consumer receives the `ListRootsResult`."""

    __slots__ = ()
    kind = "roots"
    method = "roots/list"

    def __init__(self, *, key: str | None = None) -> None:
        self.key = key

    def __repr__(self) -> str:
        return "ListRoots()"

    def capability(self) -> dict[str, Any]:
        """The client capability this question needs."""
        return {"roots": {}}

    def parts(self, note: str | None = None) -> dict[str, str]:
        """The digests of what an answer is pinned to (`note`: a re-ask's reason)."""
        return {"request": "roots/list"}

    def request(self, note: str | None = None) -> Any:
        """The input request to send."""
        from mrtr.types import ListRootsRequest

        return ListRootsRequest()

    def read(self, key: str, response: Any) -> Any:
        """The outcome of an answer (raises ToolError when it is not one)."""
        from mrtr.types import ListRootsResult

        if not isinstance(response, ListRootsResult):
            raise ToolError(f"Resolver {key!r} received a response of the wrong kind")
        return response


MARKERS: tuple[type, ...] = (Elicit, ElicitUrl, Sample, ListRoots)


def marker_arms(annotation: Any) -> list[Any]:
    """The question types a resolver's return annotation names (``Elicit[T] | Sample``)."""
    arms = get_args(annotation) if get_origin(annotation) in (Union, _union_type()) else ()
    candidates = arms or (annotation,)
    found = []
    for arm in candidates:
        base = get_origin(arm) or arm
        if isinstance(base, type) and issubclass(base, MARKERS):
            found.append(arm)
    return found


def _union_type() -> Any:
    import types

    return types.UnionType


publish("mrtr.server", Elicit, ElicitUrl, ListRoots, Resolve, Sample)
