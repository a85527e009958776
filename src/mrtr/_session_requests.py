"""The typed request wrappers of `ClientSession`, on the JSON-RPC core.

Each wrapper names its method, builds its params and reads the answer with
`mrtr.types.parse_result` (the strict rules, validated once on arrival). The three calls
that may ask for input share one path, `TypedRequests._request_with_input`, which `Client`
also uses for every leg of its loop, with params built once per call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, cast, overload

from mrtr._session_context import ProgressCallback
from mrtr._session_core import SessionCore
from mrtr.errors import InputRequiredNotAllowedError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from mrtr.transports import JSONObject
    from mrtr.types import (
        CallToolResult,
        CompleteResult,
        EmptyResult,
        GetPromptResult,
        InputRequiredResult,
        InputResponse,
        ListPromptsResult,
        ListResourcesResult,
        ListResourceTemplatesResult,
        ListToolsResult,
        ReadResourceResult,
    )

__all__ = ["TypedRequests"]

_InputMethod = Literal["tools/call", "prompts/get", "resources/read"]


def _call_params(
    method: _InputMethod, name: str, arguments: Mapping[str, Any] | None
) -> JSONObject:
    """The params of a call that may ask for input, before any round's answers.

    `name` is the tool or prompt name, or the resource URI. `Client` builds these once
    per call and sends them on every leg.
    """
    if method == "resources/read":
        return {"uri": name}
    params: JSONObject = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments if type(arguments) is dict else dict(arguments)
    return params


def _leg_params(
    params: JSONObject,
    input_responses: Mapping[str, InputResponse | Mapping[str, Any]] | None,
    request_state: str | None,
) -> JSONObject:
    """`params` with this leg's answers and state: a new dict, `params` is never changed.

    Without either, `params` itself: the first leg of a call sends it as it is.
    """
    if input_responses is None and request_state is None:
        return params
    from pydantic import BaseModel

    leg = params.copy()
    if input_responses is not None:
        # any pydantic model (ours, or another SDK's), dumped as `WireModel.to_wire` does
        leg["inputResponses"] = {
            key: value.model_dump(by_alias=True, exclude_none=True, mode="json")
            if isinstance(value, BaseModel)
            else dict(value)
            for key, value in input_responses.items()
        }
    if request_state is not None:
        leg["requestState"] = request_state
    return leg


class TypedRequests(SessionCore):
    """The typed method wrappers; `ClientSession` adds the era's envelope and callbacks."""

    async def send_ping(self, *, read_timeout_seconds: float | None = None) -> EmptyResult:
        """Ping the server (legacy era).

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        from mrtr.types import EmptyResult, parse_result

        raw = await self.send_request("ping", None, timeout=read_timeout_seconds)
        return cast(EmptyResult, parse_result("ping", raw))

    async def list_tools(
        self, cursor: str | None = None, *, read_timeout_seconds: float | None = None
    ) -> ListToolsResult:
        """List one page of tools (``tools/list``).

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        page: ListToolsResult = await self._list_page("tools/list", cursor, read_timeout_seconds)
        return page

    async def list_prompts(
        self, cursor: str | None = None, *, read_timeout_seconds: float | None = None
    ) -> ListPromptsResult:
        """List one page of prompts (``prompts/list``).

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        page: ListPromptsResult = await self._list_page(
            "prompts/list", cursor, read_timeout_seconds
        )
        return page

    async def list_resources(
        self, cursor: str | None = None, *, read_timeout_seconds: float | None = None
    ) -> ListResourcesResult:
        """List one page of resources (``resources/list``).

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        page: ListResourcesResult = await self._list_page(
            "resources/list", cursor, read_timeout_seconds
        )
        return page

    async def list_resource_templates(
        self, cursor: str | None = None, *, read_timeout_seconds: float | None = None
    ) -> ListResourceTemplatesResult:
        """List one page of resource templates (``resources/templates/list``).

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        page: ListResourceTemplatesResult = await self._list_page(
            "resources/templates/list", cursor, read_timeout_seconds
        )
        return page

    async def _list_page(self, method: str, cursor: str | None, timeout: float | None) -> Any:
        from mrtr.types import parse_result

        params = {"cursor": cursor} if cursor is not None else None
        return parse_result(method, await self.send_request(method, params, timeout=timeout))

    async def complete(
        self,
        ref: Mapping[str, Any] | BaseModel,
        argument: Mapping[str, str],
        context_arguments: Mapping[str, str] | None = None,
        *,
        read_timeout_seconds: float | None = None,
    ) -> CompleteResult:
        """Ask for completions of a prompt or resource-template argument.

        Args:
            ref: a `PromptReference` / `ResourceTemplateReference` (or its wire dict).
            argument: ``{"name": ..., "value": ...}``, the argument being completed.
            context_arguments: values of arguments already filled in.
            read_timeout_seconds: this request's timeout.

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        from pydantic import BaseModel

        from mrtr.types import parse_result

        wire_ref = (
            ref.model_dump(by_alias=True, exclude_none=True)
            if isinstance(ref, BaseModel)
            else dict(ref)
        )
        params: JSONObject = {"ref": wire_ref, "argument": dict(argument)}
        if context_arguments is not None:
            params["context"] = {"arguments": dict(context_arguments)}
        raw = await self.send_request("completion/complete", params, timeout=read_timeout_seconds)
        return parse_result("completion/complete", raw)

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = ...,
        read_timeout_seconds: float | None = ...,
        progress_callback: ProgressCallback | None = ...,
        *,
        input_responses: Mapping[str, InputResponse | Mapping[str, Any]] | None = ...,
        request_state: str | None = ...,
        allow_input_required: Literal[False] = ...,
    ) -> CallToolResult: ...
    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = ...,
        read_timeout_seconds: float | None = ...,
        progress_callback: ProgressCallback | None = ...,
        *,
        input_responses: Mapping[str, InputResponse | Mapping[str, Any]] | None = ...,
        request_state: str | None = ...,
        allow_input_required: Literal[True],
    ) -> CallToolResult | InputRequiredResult: ...
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        read_timeout_seconds: float | None = None,
        progress_callback: ProgressCallback | None = None,
        *,
        input_responses: Mapping[str, InputResponse | Mapping[str, Any]] | None = None,
        request_state: str | None = None,
        allow_input_required: bool = False,
    ) -> CallToolResult | InputRequiredResult:
        """Call a tool once (one leg of a possibly multi-round exchange).

        Args:
            name: the tool name.
            arguments: the tool arguments.
            input_responses: answers to the previous round's input requests, by key.
            request_state: the previous round's ``requestState``, echoed verbatim.
            allow_input_required: return an `InputRequiredResult` instead of raising.
            progress_callback: receives this leg's progress notifications.
            read_timeout_seconds: this leg's timeout.

        Returns:
            The `CallToolResult`, or with ``allow_input_required=True`` possibly an
            `InputRequiredResult` to answer and retry.

        Raises:
            InputRequiredNotAllowedError: the server needs input and the caller did not
                opt in (pass ``allow_input_required=True``, or use `Client`).
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        result = await self._request_with_input(
            "tools/call",
            _call_params("tools/call", name, arguments),
            input_responses=input_responses,
            request_state=request_state,
            allow_input_required=allow_input_required,
            progress_callback=progress_callback,
            read_timeout_seconds=read_timeout_seconds,
        )
        return cast("CallToolResult | InputRequiredResult", result)

    @overload
    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = ...,
        *,
        input_responses: Mapping[str, InputResponse | Mapping[str, Any]] | None = ...,
        request_state: str | None = ...,
        allow_input_required: Literal[False] = ...,
        progress_callback: ProgressCallback | None = ...,
        read_timeout_seconds: float | None = ...,
    ) -> GetPromptResult: ...
    @overload
    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = ...,
        *,
        input_responses: Mapping[str, InputResponse | Mapping[str, Any]] | None = ...,
        request_state: str | None = ...,
        allow_input_required: Literal[True],
        progress_callback: ProgressCallback | None = ...,
        read_timeout_seconds: float | None = ...,
    ) -> GetPromptResult | InputRequiredResult: ...
    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        input_responses: Mapping[str, InputResponse | Mapping[str, Any]] | None = None,
        request_state: str | None = None,
        allow_input_required: bool = False,
        progress_callback: ProgressCallback | None = None,
        read_timeout_seconds: float | None = None,
    ) -> GetPromptResult | InputRequiredResult:
        """Get a prompt once (one leg); keywords as in `call_tool`.

        Raises:
            InputRequiredNotAllowedError: the server needs input and the caller did not
                opt in.
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        result = await self._request_with_input(
            "prompts/get",
            _call_params("prompts/get", name, arguments),
            input_responses=input_responses,
            request_state=request_state,
            allow_input_required=allow_input_required,
            progress_callback=progress_callback,
            read_timeout_seconds=read_timeout_seconds,
        )
        return cast("GetPromptResult | InputRequiredResult", result)

    @overload
    async def read_resource(
        self,
        uri: str,
        *,
        input_responses: Mapping[str, InputResponse | Mapping[str, Any]] | None = ...,
        request_state: str | None = ...,
        allow_input_required: Literal[False] = ...,
        progress_callback: ProgressCallback | None = ...,
        read_timeout_seconds: float | None = ...,
    ) -> ReadResourceResult: ...
    @overload
    async def read_resource(
        self,
        uri: str,
        *,
        input_responses: Mapping[str, InputResponse | Mapping[str, Any]] | None = ...,
        request_state: str | None = ...,
        allow_input_required: Literal[True],
        progress_callback: ProgressCallback | None = ...,
        read_timeout_seconds: float | None = ...,
    ) -> ReadResourceResult | InputRequiredResult: ...
    async def read_resource(
        self,
        uri: str,
        *,
        input_responses: Mapping[str, InputResponse | Mapping[str, Any]] | None = None,
        request_state: str | None = None,
        allow_input_required: bool = False,
        progress_callback: ProgressCallback | None = None,
        read_timeout_seconds: float | None = None,
    ) -> ReadResourceResult | InputRequiredResult:
        """Read a resource once (one leg); keywords as in `call_tool`.

        Raises:
            InputRequiredNotAllowedError: the server needs input and the caller did not
                opt in.
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        result = await self._request_with_input(
            "resources/read",
            _call_params("resources/read", str(uri), None),
            input_responses=input_responses,
            request_state=request_state,
            allow_input_required=allow_input_required,
            progress_callback=progress_callback,
            read_timeout_seconds=read_timeout_seconds,
        )
        return cast("ReadResourceResult | InputRequiredResult", result)

    async def _request_with_input(
        self,
        method: _InputMethod,
        params: JSONObject,
        *,
        input_responses: Mapping[str, InputResponse | Mapping[str, Any]] | None,
        request_state: str | None,
        allow_input_required: bool,
        progress_callback: ProgressCallback | None,
        read_timeout_seconds: float | None,
    ) -> Any:
        """Send one leg of a call that may ask for input, and parse its result strictly.

        `params` is not changed (a leg with answers or state sends a copy), so `Client`
        passes the same dict on every leg of a call.

        Raises:
            InputRequiredNotAllowedError: an `InputRequiredResult` without the opt-in.
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        from mrtr.types import InputRequiredResult, parse_result

        raw = await self.send_request(
            method,
            _leg_params(params, input_responses, request_state),
            timeout=read_timeout_seconds,
            progress_callback=progress_callback,
        )
        result = parse_result(method, raw)
        if not allow_input_required and isinstance(result, InputRequiredResult):
            raise InputRequiredNotAllowedError(result, method=method)
        return result
