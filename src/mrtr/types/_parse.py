"""Reading results by method, with the strict-result rules, and checking input responses.

Nothing here raises a raw `pydantic.ValidationError`: a bad result from the server is a
`ProtocolError`, a bad answer from a local callback is an `InvalidInputResponseError`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from mrtr.errors import InvalidInputResponseError, ProtocolError
from mrtr.types._base import EmptyResult, Result
from mrtr.types._constants import INPUT_REQUIRED_METHODS
from mrtr.types._content import ContentBlock
from mrtr.types._input import (
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    InputRequest,
    InputRequiredResult,
    InputResponse,
    ListRootsResult,
)
from mrtr.types._validation import first_errors

if TYPE_CHECKING:
    from mrtr.types._features import (
        CompleteResult,
        GetPromptResult,
        ListPromptsResult,
        ListResourcesResult,
        ListResourceTemplatesResult,
        ReadResourceResult,
    )
    from mrtr.types._lifecycle import DiscoverResult, InitializeResult
    from mrtr.types._tool_calls import CallToolResult
    from mrtr.types._tools import ListToolsResult

__all__ = [
    "CONTENT_BLOCK_ADAPTER",
    "ELICIT_REQUEST_PARAMS_ADAPTER",
    "INPUT_REQUEST_ADAPTER",
    "INPUT_RESPONSE_ADAPTER",
    "INPUT_RESPONSE_MODELS",
    "RESULT_MODELS",
    "parse_result",
    "result_model",
    "validate_input_response",
]

_DEFERRED = ConfigDict(defer_build=True)

INPUT_REQUEST_ADAPTER: TypeAdapter[InputRequest] = TypeAdapter(InputRequest, config=_DEFERRED)
"""Validates one input request (`{"method": ..., "params": ...}`) into its model."""
INPUT_RESPONSE_ADAPTER: TypeAdapter[InputResponse] = TypeAdapter(InputResponse, config=_DEFERRED)
"""Validates one bare input response by its shape (prefer `validate_input_response`)."""
ELICIT_REQUEST_PARAMS_ADAPTER: TypeAdapter[ElicitRequestParams] = TypeAdapter(
    ElicitRequestParams, config=_DEFERRED
)
"""Validates elicitation params into the form or URL model (a missing `mode` is form)."""
CONTENT_BLOCK_ADAPTER: TypeAdapter[ContentBlock] = TypeAdapter(ContentBlock, config=_DEFERRED)
"""Validates one content block by its `type`."""

_RESULT_MODEL_HOMES: dict[str, tuple[str, str]] = {
    "server/discover": ("mrtr.types._lifecycle", "DiscoverResult"),
    "initialize": ("mrtr.types._lifecycle", "InitializeResult"),
    "tools/list": ("mrtr.types._tools", "ListToolsResult"),
    "tools/call": ("mrtr.types._tool_calls", "CallToolResult"),
    "prompts/list": ("mrtr.types._features", "ListPromptsResult"),
    "prompts/get": ("mrtr.types._features", "GetPromptResult"),
    "resources/list": ("mrtr.types._features", "ListResourcesResult"),
    "resources/templates/list": ("mrtr.types._features", "ListResourceTemplatesResult"),
    "resources/read": ("mrtr.types._features", "ReadResourceResult"),
    "completion/complete": ("mrtr.types._features", "CompleteResult"),
    "tasks/get": ("mrtr.types._tasks", "GetTaskResult"),
    "tasks/update": ("mrtr.types._tasks", "UpdateTaskResult"),
    "tasks/cancel": ("mrtr.types._tasks", "CancelTaskResult"),
}
"""Where the complete-result model of each method lives, imported on first use: a tool
call never defines the prompt, resource and completion models."""

RESULT_MODELS: dict[str, type[Result]] = {
    "ping": EmptyResult,
    "logging/setLevel": EmptyResult,
    "resources/subscribe": EmptyResult,
    "resources/unsubscribe": EmptyResult,
}
"""The complete-result model of each method a client sends, filled in from
`_RESULT_MODEL_HOMES` as methods are first answered; other methods parse as `Result`."""


def result_model(method: str) -> type[Result]:
    """The complete-result model of `method` (`Result` for a method without one)."""
    model = RESULT_MODELS.get(method)
    if model is None:
        home = _RESULT_MODEL_HOMES.get(method)
        if home is None:
            return Result
        model = getattr(importlib.import_module(home[0]), home[1])
        RESULT_MODELS[method] = model
    return model


TASK_RESULT_METHODS: frozenset[str] = frozenset({"tools/call"})
"""The methods a server may answer with a task handle (``resultType: "task"``)."""

INPUT_RESPONSE_MODELS: dict[str, type[BaseModel]] = {
    "elicitation/create": ElicitResult,
    "sampling/createMessage": CreateMessageResult,
    "roots/list": ListRootsResult,
}
"""The answer model for each kind of input request."""

_R = TypeVar("_R", bound=Result)


def _describe(exc: ValidationError) -> str:
    parts = []
    for error in first_errors(exc, 3):
        where = ".".join(str(part) for part in error["loc"]) or "(top level)"
        parts.append(f"{where}: {error['msg']}")
    more = exc.error_count() - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def _validate(model: type[_R], raw: dict[str, Any], method: str) -> _R:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ProtocolError(
            f"the server's result for {method} is not a valid {model.__name__}: {_describe(exc)}",
            method=method,
        ) from None


def _check_input_requests(raw: dict[str, Any], method: str) -> None:
    requests = raw.get("inputRequests")
    has_state = raw.get("requestState") is not None
    if not requests and not has_state:  # an empty map asks for nothing either
        raise ProtocolError(
            f"the server answered {method} with an InputRequiredResult that has neither "
            "inputRequests nor requestState",
            method=method,
        )
    if not isinstance(requests, dict):
        return  # absent (state only) or malformed: validation reports the latter
    for key, request in requests.items():
        kind = request.get("method") if isinstance(request, dict) else None
        if kind not in INPUT_RESPONSE_MODELS:
            raise ProtocolError(
                f"the server answered {method} with input request {key!r} of unknown method "
                f"{kind!r}; expected one of {', '.join(sorted(INPUT_RESPONSE_MODELS))}",
                method=method,
            )


def _parse_input_required(raw: dict[str, Any], method: str) -> InputRequiredResult:
    if method not in INPUT_REQUIRED_METHODS:
        raise ProtocolError(
            f"the server answered {method} with an InputRequiredResult, which only "
            "tools/call, prompts/get and resources/read may return",
            method=method,
        )
    _check_input_requests(raw, method)
    return _validate(InputRequiredResult, raw, method)


@overload
def parse_result(
    method: Literal["tools/call"], raw: dict[str, Any]
) -> CallToolResult | InputRequiredResult: ...
@overload
def parse_result(
    method: Literal["prompts/get"], raw: dict[str, Any]
) -> GetPromptResult | InputRequiredResult: ...
@overload
def parse_result(
    method: Literal["resources/read"], raw: dict[str, Any]
) -> ReadResourceResult | InputRequiredResult: ...
@overload
def parse_result(method: Literal["server/discover"], raw: dict[str, Any]) -> DiscoverResult: ...
@overload
def parse_result(method: Literal["initialize"], raw: dict[str, Any]) -> InitializeResult: ...
@overload
def parse_result(method: Literal["tools/list"], raw: dict[str, Any]) -> ListToolsResult: ...
@overload
def parse_result(method: Literal["prompts/list"], raw: dict[str, Any]) -> ListPromptsResult: ...
@overload
def parse_result(method: Literal["resources/list"], raw: dict[str, Any]) -> ListResourcesResult: ...
@overload
def parse_result(
    method: Literal["resources/templates/list"], raw: dict[str, Any]
) -> ListResourceTemplatesResult: ...
@overload
def parse_result(method: Literal["completion/complete"], raw: dict[str, Any]) -> CompleteResult: ...
@overload
def parse_result(method: str, raw: dict[str, Any]) -> Result: ...
def parse_result(method: str, raw: dict[str, Any]) -> Result:
    """Read the raw `result` object of a response to `method`, applying the strict rules.

    An absent `resultType` means complete. An `InputRequiredResult` is accepted only for
    tools/call, prompts/get and resources/read, and only with `inputRequests` or
    `requestState`, each request of a known method. A `CreateTaskResult` (the Tasks
    extension's ``resultType: "task"``) is accepted only for tools/call. Methods without
    a model of their own parse as a plain `Result` (unknown fields kept).

    Args:
        method: the JSON-RPC method of the request this result answers.
        raw: the response's `result` member, as parsed from JSON.

    Returns:
        The method's result model, an `InputRequiredResult` or a `CreateTaskResult`.

    Raises:
        ProtocolError: the result breaks a rule above, has an unknown `resultType`, or
            does not validate; `.method` names the method.
    """
    if not isinstance(raw, dict):
        raise ProtocolError(f"the server's result for {method} is not a JSON object", method=method)
    result_type = raw.get("resultType")
    if result_type is None or result_type == "complete":
        return _validate(result_model(method), raw, method)
    if result_type == "input_required":
        return _parse_input_required(raw, method)
    if result_type == "task" and method in TASK_RESULT_METHODS:
        # the Tasks extension's handle; whether the caller opted in is the caller's check
        from mrtr.types._tasks import CreateTaskResult

        return _validate(CreateTaskResult, raw, method)
    raise ProtocolError(
        f"the server answered {method} with unknown resultType {result_type!r}", method=method
    )


def validate_input_response(method: str, value: object, *, key: str | None = None) -> InputResponse:
    """Check a callback's answer to an input request of `method`, coercing a plain dict.

    Args:
        method: the input request's method (`elicitation/create`, ...).
        value: the answer: the right model, another pydantic model with the same fields
            (such as the official SDK's), or a plain dict in wire or Python names.
        key: the input-request key, for the error message.

    Returns:
        The answer as `ElicitResult`, `CreateMessageResult` or `ListRootsResult`.

    Raises:
        InvalidInputResponseError: the answer is of another kind or does not validate;
            nothing has been sent.
    """
    expected = INPUT_RESPONSE_MODELS.get(method)
    where = f"input request {key!r}" if key is not None else "an input request"
    if expected is None:
        raise InvalidInputResponseError(
            f"{where} has unknown method {method!r}", key=key, method=method
        )
    if isinstance(value, expected):
        return value  # type: ignore[return-value]  # expected is one of InputResponse
    if isinstance(value, (ElicitResult, CreateMessageResult, ListRootsResult)):
        raise InvalidInputResponseError(
            f"the answer to {where} ({method}) must be a {expected.__name__}, "
            f"not a {type(value).__name__}",
            key=key,
            method=method,
        )
    if isinstance(value, BaseModel):
        value = value.model_dump(by_alias=True, exclude_none=True, mode="json")
    if not isinstance(value, dict):
        raise InvalidInputResponseError(
            f"the answer to {where} ({method}) must be a {expected.__name__} or a dict, "
            f"not {type(value).__name__}",
            key=key,
            method=method,
        )
    try:
        return expected.model_validate(value)  # type: ignore[return-value]
    except ValidationError as exc:
        raise InvalidInputResponseError(
            f"the answer to {where} ({method}) is not a valid {expected.__name__}: "
            f"{_describe(exc)}",
            key=key,
            method=method,
        ) from None
