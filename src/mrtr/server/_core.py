"""The sans-IO-ish server core: one JSON-RPC message in, one response (or none) out.

`ServerConnection` holds what one connection knows (its era once chosen, the legacy
handshake) and turns each incoming message into its response; notifications a handler
emits while it runs (progress, log) go through the ``emit`` callable the shell passes.
The in-memory, stdio and HTTP shells all share it, so a request behaves the same on
every transport.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ValidationError

from mrtr.errors import INVALID_REQUEST_STATE_MESSAGE, InvalidRequestState, MCPError
from mrtr.server._context import LOG_LEVELS, Principal, ServerRequestContext
from mrtr.server._jsonrpc import (
    INVALID_RESULT_MESSAGE,
    HandlerError,
    JSONObject,
    error_response,
    result_response,
)
from mrtr.server._security import RequestBinding, RequestStateSecurity
from mrtr.types import (
    INPUT_REQUIRED_METHODS,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LEGACY_PROTOCOL_VERSIONS,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    MODERN_PROTOCOL_VERSIONS,
    SUPPORTED_PROTOCOL_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
    CallToolRequestParams,
    CallToolResult,
    ClientCapabilities,
    CreateMessageRequest,
    ElicitRequest,
    ElicitRequestURLParams,
    GetPromptRequestParams,
    GetPromptResult,
    Implementation,
    InitializeRequestParams,
    InputRequests,
    InputRequiredResult,
    InputResponses,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListRootsRequest,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    Result,
)

if TYPE_CHECKING:
    from mrtr.server._server import Server

__all__ = ["Emit", "ServerConnection"]

_logger = logging.getLogger("mrtr.server")
_state_logger = logging.getLogger("mrtr.server.request_state")

Emit = Callable[[JSONObject], Awaitable[None]]
Era = Literal["legacy", "modern"]


@dataclass(frozen=True, slots=True)
class _Route:
    params_model: type[BaseModel]
    handler: str
    result_type: type[Result]
    params_required: bool


_ROUTES: dict[str, _Route] = {
    "tools/list": _Route(PaginatedRequestParams, "on_list_tools", ListToolsResult, False),
    "tools/call": _Route(CallToolRequestParams, "on_call_tool", CallToolResult, True),
    "prompts/list": _Route(PaginatedRequestParams, "on_list_prompts", ListPromptsResult, False),
    "prompts/get": _Route(GetPromptRequestParams, "on_get_prompt", GetPromptResult, True),
    "resources/list": _Route(
        PaginatedRequestParams, "on_list_resources", ListResourcesResult, False
    ),
    "resources/templates/list": _Route(
        PaginatedRequestParams,
        "on_list_resource_templates",
        ListResourceTemplatesResult,
        False,
    ),
    "resources/read": _Route(
        ReadResourceRequestParams, "on_read_resource", ReadResourceResult, True
    ),
}


_CACHEABLE_METHODS = frozenset(
    {"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}
)


@dataclass(frozen=True, slots=True)
class _Envelope:
    """The era facts of one request."""

    era: Era
    protocol_version: str
    capabilities: ClientCapabilities | None
    client_info: Implementation | None
    log_level: str | None


@dataclass(slots=True)
class _ContextBase:
    """The per-request facts known before params are parsed (one context built from it)."""

    method: str
    request_id: str | int
    principal: Principal | None
    emit: Emit
    progress_token: str | int | None

    def context(
        self,
        envelope: _Envelope,
        *,
        input_responses: InputResponses | None = None,
        request_state: str | None = None,
    ) -> ServerRequestContext:
        return ServerRequestContext(
            method=self.method,
            request_id=self.request_id,
            protocol_version=envelope.protocol_version,
            input_responses=input_responses,
            request_state=request_state,
            principal=self.principal,
            client_capabilities=envelope.capabilities,
            client_info=envelope.client_info,
            _emit=self.emit,
            _progress_token=self.progress_token,
            _log_level=envelope.log_level,
        )


def _frozen_rejection(method: str, reason: str) -> HandlerError:
    _state_logger.warning("requestState rejected on %s: %s", method, reason)
    return HandlerError(INVALID_PARAMS, INVALID_REQUEST_STATE_MESSAGE)


def _invalid_params(method: str, exc: ValidationError) -> HandlerError:
    first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": str(exc)}
    where = ".".join(str(part) for part in first.get("loc", ())) or "params"
    return HandlerError(
        INVALID_PARAMS,
        f"Invalid params for {method}: {where}: {first.get('msg')}",
        {"errors": exc.error_count()},
    )


def _required_capabilities(
    requests: InputRequests, caps: ClientCapabilities | None
) -> dict[str, Any]:
    """The capabilities the input requests need that the client did not declare."""
    caps = caps or ClientCapabilities()
    missing: dict[str, Any] = {}
    for request in requests.values():
        if isinstance(request, ElicitRequest):
            mode = "url" if isinstance(request.params, ElicitRequestURLParams) else "form"
            declared = caps.elicitation
            if declared is None:
                ok = False
            elif mode == "url":
                ok = declared.url is not None
            else:  # an empty elicitation object means form
                ok = declared.form is not None or declared.url is None
            if not ok:
                missing.setdefault("elicitation", {})[mode] = {}
        elif isinstance(request, CreateMessageRequest):
            if caps.sampling is None:
                missing.setdefault("sampling", {})
            if request.params.tools and (caps.sampling is None or caps.sampling.tools is None):
                missing.setdefault("sampling", {})["tools"] = {}
        elif isinstance(request, ListRootsRequest) and caps.roots is None:
            missing["roots"] = {}
    return missing


def _ensure_object(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise HandlerError(INVALID_REQUEST, f"{what} must be a JSON object")
    return value


class ServerConnection:
    """One connection's protocol state; `handle` answers one message.

    A stream connection (stdio, in-memory) settles its era with its first request: a
    request carrying the modern ``_meta`` envelope makes it modern, ``initialize`` makes
    it legacy, and the other era is then refused. Each modern HTTP POST gets a fresh
    connection; a legacy HTTP session keeps one.
    """

    def __init__(self, server: Server) -> None:
        self._server = server
        self.era: Era | None = None
        self._legacy_version: str | None = None
        self._legacy_capabilities: ClientCapabilities | None = None
        self._legacy_client_info: Implementation | None = None
        self._legacy_log_level: str = "debug"
        self._last_envelope: tuple[tuple[Any, ...], _Envelope] | None = None

    @property
    def protocol_version(self) -> str | None:
        """The legacy version negotiated by ``initialize``, if any."""
        return self._legacy_version

    async def handle(
        self,
        message: JSONObject,
        *,
        emit: Emit,
        principal: Principal | None = None,
    ) -> JSONObject | None:
        """Answer one incoming message.

        Returns:
            The JSON-RPC response for a request; ``None`` for a notification or a
            response (the server sends no requests, so responses are ignored).
        """
        raw_id = message.get("id")
        request_id = (
            raw_id if isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool) else None
        )
        method = message.get("method")
        try:
            if message.get("jsonrpc") != "2.0":
                raise HandlerError(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
            if not isinstance(method, str):
                if "result" in message or "error" in message:
                    return None  # a response: this server sends no requests
                raise HandlerError(INVALID_REQUEST, 'Invalid Request: "method" must be a string')
            params = _ensure_object(message.get("params"), "Invalid Request: params")
            if "id" not in message:
                self._notification(method, params)
                return None
            if request_id is None:
                raise HandlerError(
                    INVALID_REQUEST, "Invalid Request: id must be a string or integer"
                )
            result = await self._request(request_id, method, params, emit, principal)
        except HandlerError as exc:
            return error_response(request_id, exc)
        except Exception:  # a bug in a hook (replay store, binder): never a traceback out
            _logger.exception("unexpected error while answering %s", method)
            return error_response(request_id, HandlerError(INTERNAL_ERROR, "Internal error"))
        return result_response(request_id, result)

    def _notification(self, method: str, params: dict[str, Any]) -> None:
        # notifications/initialized and notifications/cancelled need no answer here (the
        # stream shell handles cancellation); anything else is ignored.
        _logger.debug("notification %s", method)

    def _envelope(self, method: str, params: dict[str, Any]) -> _Envelope:
        meta = params.get("_meta")
        if isinstance(meta, dict) and META_PROTOCOL_VERSION in meta:
            return self._modern_envelope(meta)
        if self._legacy_version is None:
            raise HandlerError(
                INVALID_REQUEST,
                f"Invalid Request: {method} carries no protocol version; send initialize "
                f"first, or put {META_PROTOCOL_VERSION} in params._meta",
            )
        return _Envelope(
            "legacy",
            self._legacy_version,
            self._legacy_capabilities,
            self._legacy_client_info,
            self._legacy_log_level,
        )

    def _modern_envelope(self, meta: dict[str, Any]) -> _Envelope:
        # A client sends the same envelope on every request of a connection: comparing
        # the raw JSON with the last one that passed is much cheaper than validating it
        # again (the models are frozen, so sharing them between requests is safe).
        key = (
            meta.get(META_PROTOCOL_VERSION),
            meta.get(META_LOG_LEVEL),
            meta.get(META_CLIENT_CAPABILITIES),
            meta.get(META_CLIENT_INFO),
        )
        last = self._last_envelope
        if last is not None and last[0] == key and self.era == "modern":
            return last[1]
        envelope = self._validate_envelope(meta)
        self._last_envelope = (key, envelope)
        return envelope

    def _validate_envelope(self, meta: dict[str, Any]) -> _Envelope:
        version = meta.get(META_PROTOCOL_VERSION)
        if self.era == "legacy":
            raise HandlerError(
                INVALID_REQUEST,
                "Invalid Request: this connection negotiated a legacy version with initialize; "
                "requests on it must not carry the modern _meta envelope",
            )
        if version not in MODERN_PROTOCOL_VERSIONS:
            raise HandlerError(
                UNSUPPORTED_PROTOCOL_VERSION,
                f"Unsupported protocol version: {version!r}",
                {"supported": list(SUPPORTED_PROTOCOL_VERSIONS), "requested": str(version)},
            )
        if META_CLIENT_CAPABILITIES not in meta:
            raise HandlerError(
                INVALID_PARAMS, f"Invalid params: _meta lacks {META_CLIENT_CAPABILITIES}"
            )
        try:
            capabilities = ClientCapabilities.model_validate(meta[META_CLIENT_CAPABILITIES])
            raw_info = meta.get(META_CLIENT_INFO)
            info = None if raw_info is None else Implementation.model_validate(raw_info)
        except ValidationError as exc:
            raise _invalid_params("_meta", exc) from None
        level = meta.get(META_LOG_LEVEL)
        if level is not None and level not in LOG_LEVELS:
            raise HandlerError(INVALID_PARAMS, f"Invalid params: unknown log level {level!r}")
        self.era = "modern"
        return _Envelope("modern", str(version), capabilities, info, level)

    async def _request(
        self,
        request_id: str | int,
        method: str,
        params: dict[str, Any],
        emit: Emit,
        principal: Principal | None,
    ) -> JSONObject:
        if method == "initialize":
            return self._initialize(params)
        meta = params.get("_meta")
        if method == "ping" and not (isinstance(meta, dict) and META_PROTOCOL_VERSION in meta):
            return {}  # legacy ping, allowed even before initialize
        envelope = self._envelope(method, params)
        route = _ROUTES.get(method)
        if route is not None:
            return await self._call(route, request_id, method, params, envelope, emit, principal)
        if method == "server/discover" and envelope.era == "modern":
            return self._server.discover_result()
        if method == "logging/setLevel" and envelope.era == "legacy":
            return self._set_level(params)
        raise HandlerError(METHOD_NOT_FOUND, f"Method not found: {method}", {"method": method})

    def _initialize(self, params: dict[str, Any]) -> JSONObject:
        if self.era == "modern":
            requested = params.get("protocolVersion")
            raise HandlerError(
                UNSUPPORTED_PROTOCOL_VERSION,
                "this connection serves the modern protocol; initialize is not accepted",
                {"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": str(requested)},
            )
        try:
            init = InitializeRequestParams.model_validate(params)
        except ValidationError as exc:
            raise _invalid_params("initialize", exc) from None
        requested = init.protocol_version
        version = (
            requested if requested in LEGACY_PROTOCOL_VERSIONS else LEGACY_PROTOCOL_VERSIONS[0]
        )
        self.era = "legacy"
        self._legacy_version = version
        self._legacy_capabilities = init.capabilities
        self._legacy_client_info = init.client_info
        return self._server.initialize_result(version)

    def _set_level(self, params: dict[str, Any]) -> JSONObject:
        level = params.get("level")
        if level not in LOG_LEVELS:
            raise HandlerError(INVALID_PARAMS, f"Invalid params: unknown log level {level!r}")
        self._legacy_log_level = str(level)
        return {}

    async def _call(
        self,
        route: _Route,
        request_id: str | int,
        method: str,
        params: dict[str, Any],
        envelope: _Envelope,
        emit: Emit,
        principal: Principal | None,
    ) -> JSONObject:
        handler = getattr(self._server, route.handler)
        if handler is None:
            raise HandlerError(METHOD_NOT_FOUND, f"Method not found: {method}", {"method": method})
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        base = _ContextBase(
            method, request_id, principal, emit, token if isinstance(token, (str, int)) else None
        )
        policy = self._server.request_state_policy
        # the binding is only needed to open or seal a token: an unsealed server skips it
        binding = None if policy is None else RequestBinding.of(method, params)
        sealed = params.get("requestState")
        if sealed is not None and method in INPUT_REQUIRED_METHODS:
            if not isinstance(sealed, str):
                raise _frozen_rejection(method, "requestState is not a string")
            if binding is not None:
                plaintext = await self._open_state(base.context(envelope), binding, sealed)
                params = {**params, "requestState": plaintext}
        try:
            parsed = route.params_model.model_validate(params)
        except ValidationError as exc:
            raise _invalid_params(method, exc) from None
        ctx = base.context(
            envelope,
            input_responses=getattr(parsed, "input_responses", None),
            request_state=getattr(parsed, "request_state", None),
        )
        result = await self._run_handler(
            handler, ctx, parsed if params or route.params_required else None
        )
        return self._finish(route, ctx, binding, result)

    async def _open_state(
        self, ctx: ServerRequestContext, binding: RequestBinding, token: str
    ) -> str:
        policy = self._server.request_state_policy
        if policy is None:
            return token
        try:
            principal = policy.principal_for(ctx)
            return await policy.open_state(
                token, binding=binding, principal=principal, audience=self._server.audience
            )
        except InvalidRequestState as exc:
            raise _frozen_rejection(ctx.method, str(exc)) from None

    async def _run_handler(
        self, handler: Callable[..., Awaitable[Any]], ctx: ServerRequestContext, params: Any
    ) -> Any:
        try:
            return await handler(ctx, params)
        except MCPError as exc:
            raise HandlerError(exc.code, exc.message, exc.data) from None
        except Exception:
            _logger.log(
                self._server.handler_error_log_level,
                "the %s handler raised (request %r)",
                ctx.method,
                ctx.request_id,
                exc_info=True,
            )
            raise HandlerError(INTERNAL_ERROR, "Internal error") from None

    def _finish(
        self,
        route: _Route,
        ctx: ServerRequestContext,
        binding: RequestBinding | None,
        result: Any,
    ) -> JSONObject:
        if isinstance(result, InputRequiredResult):
            return self._finish_input_required(ctx, binding, result)
        if not isinstance(result, route.result_type):
            _logger.error(
                "the %s handler returned a %s, not a %s",
                ctx.method,
                type(result).__name__,
                route.result_type.__name__,
            )
            raise HandlerError(INTERNAL_ERROR, INVALID_RESULT_MESSAGE)
        wire = result.to_wire()
        if ctx.is_modern:
            wire.setdefault("resultType", "complete")
            if ctx.method in _CACHEABLE_METHODS:
                # required on these results since 2026-07-28; the safe default is
                # "do not reuse across users, re-fetch at will"
                wire.setdefault("ttlMs", 0)
                wire.setdefault("cacheScope", "private")
        else:
            wire.pop("resultType", None)
        return wire

    def _finish_input_required(
        self,
        ctx: ServerRequestContext,
        binding: RequestBinding | None,
        result: InputRequiredResult,
    ) -> JSONObject:
        if ctx.method not in INPUT_REQUIRED_METHODS or not ctx.is_modern:
            _logger.error(
                "the %s handler returned InputRequiredResult on a %s request; check "
                "ctx.protocol_version first (only 2026-07-28 requests can carry it)",
                ctx.method,
                ctx.protocol_version,
            )
            raise HandlerError(INTERNAL_ERROR, INVALID_RESULT_MESSAGE)
        if not result.input_requests and result.request_state is None:
            _logger.error("the %s handler returned an empty InputRequiredResult", ctx.method)
            raise HandlerError(INTERNAL_ERROR, INVALID_RESULT_MESSAGE)
        missing = _required_capabilities(result.input_requests or {}, ctx.client_capabilities)
        if missing:
            raise HandlerError(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                "Missing required client capability: " + ", ".join(sorted(missing)),
                {"requiredCapabilities": missing},
            )
        wire = result.to_wire()
        wire["resultType"] = "input_required"
        if result.request_state is not None:
            wire["requestState"] = self._seal(ctx, binding, result.request_state)
        return wire

    def _seal(self, ctx: ServerRequestContext, binding: RequestBinding | None, state: str) -> str:
        policy: RequestStateSecurity | None = self._server.request_state_policy
        if policy is None or binding is None:
            return state
        try:
            principal = policy.principal_for(ctx)
            return policy.seal_state(
                state, binding=binding, principal=principal, audience=self._server.audience
            )
        except Exception:
            _logger.exception("could not seal the requestState of %s", ctx.method)
            raise HandlerError(INTERNAL_ERROR, "Internal error") from None


def server_info_meta(info: Mapping[str, Any]) -> dict[str, Any]:
    """The ``_meta`` of a discover result: the server's implementation."""
    return {META_SERVER_INFO: dict(info)}
