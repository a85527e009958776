"""`ClientSession`: one MCP connection in either protocol era, with typed method wrappers.

The session adds the era's envelope to every request (modern: ``params._meta`` with the
protocol version, the client's capabilities and its info; legacy: nothing after the
``initialize`` handshake), answers the server's requests on legacy connections through
the same callbacks the multi-round-trip loop uses, and turns raw results into typed
models with `mrtr.types.parse_result` (validated once, on arrival). The typed wrappers
themselves live in `mrtr._session_requests`, which this class builds on.

Notification callbacks (progress, logging, the message handler) run in order on the
reader task: keep them quick, and do not await a request on the same session from one
(start a task instead). Server requests on the back-channel each run in their own task.

Multi-round-trip calls are *manual* here: with ``allow_input_required=True`` the
wrappers return the `InputRequiredResult` for the caller to answer and retry. `Client`
runs that loop for you.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, cast

from mrtr._session_context import (
    ChangeCallback,
    ClientRequestContext,
    ElicitationCallback,
    ListRootsCallback,
    LoggingCallback,
    MessageHandler,
    SamplingCallback,
)
from mrtr._session_core import SessionState
from mrtr._session_requests import TypedRequests
from mrtr.errors import InvalidInputResponseError, NotInThisEraError, ProtocolError
from mrtr.types import (
    INPUT_REQUIRED_METHODS,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LATEST_PROTOCOL_VERSION,
    LEGACY_PROTOCOL_VERSIONS,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    METHOD_NOT_FOUND,
    MODERN_PROTOCOL_VERSIONS,
)

if TYPE_CHECKING:
    from pydantic import BaseModel

    from mrtr.transports import JSONObject, RequestId, Transport
    from mrtr.types import (
        DiscoverResult,
        EmptyResult,
        ErrorData,
        Implementation,
        InitializeResult,
        InputRequest,
        InputResponse,
        ServerCapabilities,
    )

__all__ = ["ClientRequestContext", "ClientSession", "SessionState"]

_logger = logging.getLogger("mrtr.session")

_NOT_SUPPORTED = {
    "elicitation/create": "Elicitation not supported",
    "sampling/createMessage": "Sampling not supported",
    "roots/list": "List roots not supported",
}
_URL_MODE_NOT_SUPPORTED = "URL-mode elicitation not supported"


def _input_request_model(method: str) -> type[BaseModel] | None:
    """Return the request model for a back-channel `method` (imported on first use)."""
    from mrtr.types import CreateMessageRequest, ElicitRequest, ListRootsRequest

    models: dict[str, type[BaseModel]] = {
        "elicitation/create": ElicitRequest,
        "sampling/createMessage": CreateMessageRequest,
        "roots/list": ListRootsRequest,
    }
    return models.get(method)


Era = Literal["legacy", "modern"]


def _default_client_info() -> Implementation:
    from mrtr import __version__
    from mrtr.types import Implementation

    return Implementation(name="mrtr", version=__version__)


class ClientSession(TypedRequests):
    """One MCP connection: JSON-RPC correlation plus the era's envelope and typed methods.

    Use it as ``async with ClientSession(transport, ...) as session:`` (the transport must
    already be open), then settle the era with `initialize` (legacy) or `discover`
    (modern) before other requests. `Client` does all of that for you.

    Args:
        transport: an open transport.
        client_info: who the client is (default: ``mrtr`` and its version).
        elicitation_callback: answers ``elicitation/create``; advertised only if given.
        elicitation_url_mode: the elicitation callback also handles URL mode.
        sampling_callback: answers ``sampling/createMessage``; advertised only if given.
        sampling_tools: the sampling callback handles tool-enabled sampling.
        list_roots_callback: answers ``roots/list``; advertised only if given.
        logging_callback: receives the params of every ``notifications/message``.
        log_level: the level asked of modern servers (``io.modelcontextprotocol/logLevel``);
            defaults to ``"info"`` when a logging callback is given, none otherwise.
        message_handler: receives every other notification as its typed model
            (``.to_wire()`` is the message as it came).
        change_callback: receives a `ChangeEvent` for each change notification outside
            a ``subscriptions/listen`` stream (legacy: ``notifications/tools/list_changed``,
            ``notifications/resources/updated``, ...).
        read_timeout_seconds: default per-request timeout (``None``: none).
        capabilities: advertise exactly these client capabilities instead of deriving
            them from the callbacks: for the manual loop, where the answers to input
            requests come from the caller rather than from callbacks.

    Raises:
        ValueError: ``read_timeout_seconds`` is not positive.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        client_info: Implementation | None = None,
        elicitation_callback: ElicitationCallback | None = None,
        elicitation_url_mode: bool = False,
        sampling_callback: SamplingCallback | None = None,
        sampling_tools: bool = False,
        list_roots_callback: ListRootsCallback | None = None,
        logging_callback: LoggingCallback | None = None,
        log_level: str | None = None,
        message_handler: MessageHandler | None = None,
        change_callback: ChangeCallback | None = None,
        read_timeout_seconds: float | None = None,
        capabilities: Mapping[str, Any] | BaseModel | None = None,
    ) -> None:
        from pydantic import BaseModel

        super().__init__(
            transport,
            read_timeout_seconds=read_timeout_seconds,
            logging_callback=logging_callback,
            message_handler=message_handler,
            change_callback=change_callback,
        )
        self._client_info = client_info or _default_client_info()
        self._elicitation_callback = elicitation_callback
        self._sampling_callback = sampling_callback
        self._list_roots_callback = list_roots_callback
        self._url_mode = elicitation_url_mode
        self._log_level = log_level or ("info" if logging_callback is not None else None)
        if capabilities is None:
            self._capabilities = self._build_capabilities(elicitation_url_mode, sampling_tools)
        elif isinstance(capabilities, BaseModel):
            self._capabilities = capabilities.model_dump(by_alias=True, exclude_none=True)
        else:
            self._capabilities = dict(capabilities)
        self._era: Era | None = None
        self._protocol_version: str | None = None
        self._envelope: JSONObject | None = None
        self._bare_params: JSONObject | None = None
        self._initialize_result: InitializeResult | None = None
        self._discover_result: DiscoverResult | None = None

    def _build_capabilities(self, url_mode: bool, sampling_tools: bool) -> JSONObject:
        capabilities: JSONObject = {}
        if self._elicitation_callback is not None:
            capabilities["elicitation"] = {"form": {}, "url": {}} if url_mode else {"form": {}}
        if self._sampling_callback is not None:
            capabilities["sampling"] = {"tools": {}} if sampling_tools else {}
        if self._list_roots_callback is not None:
            capabilities["roots"] = {}
        return capabilities

    # -- what was negotiated ---------------------------------------------------------

    @property
    def era(self) -> Era | None:
        """``"legacy"`` or ``"modern"`` once settled, else ``None``."""
        return self._era

    @property
    def protocol_version(self) -> str | None:
        """The negotiated protocol version, or ``None`` before negotiation."""
        return self._protocol_version

    @property
    def client_capabilities(self) -> JSONObject:
        """The capabilities this session advertises (derived from its callbacks)."""
        return self._capabilities

    @property
    def client_info(self) -> Implementation:
        """Who this client says it is."""
        return self._client_info

    @property
    def initialize_result(self) -> InitializeResult | None:
        """The server's answer to ``initialize`` (legacy), if any."""
        return self._initialize_result

    @property
    def discover_result(self) -> DiscoverResult | None:
        """The server's answer to ``server/discover`` (modern), if any."""
        return self._discover_result

    @property
    def server_info(self) -> Implementation | None:
        """The server's self-description, when the server gave one."""
        from pydantic import ValidationError

        from mrtr.types import Implementation

        if self._initialize_result is not None:
            return self._initialize_result.server_info
        meta = self._discover_result.meta if self._discover_result is not None else None
        info = meta.get(META_SERVER_INFO) if meta else None
        if info is None:
            return None
        try:
            return Implementation.model_validate(info)
        except ValidationError:
            _logger.warning("ignoring a malformed server info in server/discover: %r", info)
            return None

    @property
    def server_capabilities(self) -> ServerCapabilities | None:
        """The server's capabilities, once negotiated."""
        if self._initialize_result is not None:
            return self._initialize_result.capabilities
        if self._discover_result is not None:
            return self._discover_result.capabilities
        return None

    # -- the envelope ----------------------------------------------------------------

    def _make_envelope(self, version: str) -> JSONObject:
        envelope: JSONObject = {
            META_PROTOCOL_VERSION: version,
            META_CLIENT_CAPABILITIES: self._capabilities,
            META_CLIENT_INFO: self._client_info.to_wire(),
        }
        if self._log_level is not None:
            envelope[META_LOG_LEVEL] = self._log_level
        return envelope

    def _set_envelope(self, envelope: JSONObject | None) -> None:
        self._envelope = envelope
        self._bare_params = None if envelope is None else {"_meta": envelope}

    def _request_params(
        self, params: Mapping[str, Any] | None, progress_token: RequestId | None
    ) -> Mapping[str, Any] | None:
        envelope = self._envelope
        if envelope is None:
            return super()._request_params(params, progress_token)
        if params is None and progress_token is None:
            return self._bare_params
        user_meta = params.get("_meta") if params else None
        if user_meta is None and progress_token is None:
            meta: Mapping[str, Any] = envelope
        else:
            meta = {**(user_meta or {}), **envelope}
            if progress_token is not None:
                meta["progressToken"] = progress_token
        return {**(params or {}), "_meta": meta}

    def adopt(self, version: str, discover_result: DiscoverResult | None = None) -> None:
        """Speak the modern era at `version` from now on (no handshake needed).

        Raises:
            ValueError: `version` is not a modern version this library speaks.
        """
        if version not in MODERN_PROTOCOL_VERSIONS:
            raise ValueError(f"{version!r} is not a modern protocol version")
        self._set_envelope(self._make_envelope(version))
        self._era = "modern"
        self._protocol_version = version
        self._discover_result = discover_result

    # -- era negotiation ---------------------------------------------------------------

    async def discover(
        self, version: str = LATEST_PROTOCOL_VERSION, *, timeout: float | None = None
    ) -> DiscoverResult:
        """Ask a modern server what it supports (``server/discover``) at `version`.

        If the server lists `version` among its supported versions, the session adopts
        the modern era at that version; otherwise nothing changes.

        Raises:
            MCPError: the server refused (-32022 names the versions it speaks).
            ProtocolError: the answer is not a valid DiscoverResult.
            RequestTimeoutError, TransportError: no answer.
        """
        from mrtr.types import parse_result

        previous = self._envelope
        self._set_envelope(self._make_envelope(version))
        try:
            raw = await self.send_request("server/discover", None, timeout=timeout)
            result = parse_result("server/discover", raw)
        except BaseException:
            self._set_envelope(previous)
            raise
        if version in result.supported_versions:
            self.adopt(version, result)
        else:
            self._set_envelope(previous)
        return result

    async def initialize(self, *, timeout: float | None = None) -> InitializeResult:
        """Run the legacy handshake: ``initialize``, then ``notifications/initialized``.

        Raises:
            MCPError: the server refused.
            ProtocolError: the server chose a protocol version this client does not speak.
            RequestTimeoutError, TransportError: no answer.
        """
        from mrtr.types import parse_result

        self._set_envelope(None)
        params = {
            "protocolVersion": LEGACY_PROTOCOL_VERSIONS[0],
            "capabilities": self._capabilities,
            "clientInfo": self._client_info.to_wire(),
        }
        raw = await self.send_request("initialize", params, timeout=timeout)
        result = parse_result("initialize", raw)
        if result.protocol_version not in LEGACY_PROTOCOL_VERSIONS:
            raise ProtocolError(
                f"the server chose protocol version {result.protocol_version!r}, which this "
                f"client does not speak (it speaks {', '.join(LEGACY_PROTOCOL_VERSIONS)})",
                method="initialize",
            )
        self._initialize_result = result
        self._era = "legacy"
        self._protocol_version = result.protocol_version
        await self.send_notification("notifications/initialized")
        return result

    # -- the rest of the protocol: era-specific requests and notifications ---------------

    def _legacy_only(self, method: str, instead: str) -> None:
        if self._era == "modern":
            raise NotInThisEraError(method, self._protocol_version, instead)

    async def send_ping(self, *, read_timeout_seconds: float | None = None) -> EmptyResult:
        """Ping the server (legacy era only: 2026-07-28 has no ``ping``).

        Raises:
            NotInThisEraError: the connection is 2026-07-28 (nothing is sent).
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        self._legacy_only("ping", "2026-07-28 has no ping; any request shows the server is up")
        return await super().send_ping(read_timeout_seconds=read_timeout_seconds)

    async def subscribe_resource(
        self, uri: str, *, read_timeout_seconds: float | None = None
    ) -> EmptyResult:
        """Ask for ``notifications/resources/updated`` about `uri` (legacy era).

        The updates reach the change callback (``ResourceUpdated``) and the message
        handler. On a 2026-07-28 connection use ``Client.listen(resource_subscriptions=...)``.

        Raises:
            NotInThisEraError: the connection is 2026-07-28 (nothing is sent).
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        return await self._legacy_empty(
            "resources/subscribe", {"uri": str(uri)}, read_timeout_seconds
        )

    async def unsubscribe_resource(
        self, uri: str, *, read_timeout_seconds: float | None = None
    ) -> EmptyResult:
        """Stop the updates about `uri` (legacy era); raises as `subscribe_resource`."""
        return await self._legacy_empty(
            "resources/unsubscribe", {"uri": str(uri)}, read_timeout_seconds
        )

    async def _legacy_empty(
        self, method: str, params: JSONObject, timeout: float | None
    ) -> EmptyResult:
        from mrtr.types import EmptyResult

        self._legacy_only(method, "use Client.listen(...) on a 2026-07-28 connection")
        await self.send_request(method, params, timeout=timeout)
        return EmptyResult()

    async def set_logging_level(
        self, level: str, *, read_timeout_seconds: float | None = None
    ) -> EmptyResult:
        """Ask the server for log messages at `level` and above.

        Legacy: sends ``logging/setLevel``. 2026-07-28: every later request carries the
        level in ``_meta`` (``io.modelcontextprotocol/logLevel``); nothing is sent now.

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        from mrtr.types import EmptyResult

        self._log_level = level
        if self._era == "modern" and self._protocol_version is not None:
            self._set_envelope(self._make_envelope(self._protocol_version))
            return EmptyResult()
        await self.send_request("logging/setLevel", {"level": level}, timeout=read_timeout_seconds)
        return EmptyResult()

    async def send_roots_list_changed(self) -> None:
        """Tell the server the client's roots changed (``notifications/roots/list_changed``).

        On a 2026-07-28 connection nothing is sent: the server asks for the roots with
        each request that needs them, so it always gets the current list.

        Raises:
            TransportError, ClientStateError: as `send_notification`.
        """
        if self._era == "modern":
            _logger.debug(
                "roots/list_changed does not exist at %s; nothing sent", self._protocol_version
            )
            return
        await self.send_notification("notifications/roots/list_changed")

    async def send_progress_notification(
        self,
        progress_token: str | int,
        progress: float,
        total: float | None = None,
        message: str | None = None,
    ) -> None:
        """Report progress on a request the server sent (legacy back-channel).

        Raises:
            NotInThisEraError: the connection is 2026-07-28 (progress flows from the
                server only).
            TransportError, ClientStateError: as `send_notification`.
        """
        self._legacy_only(
            "notifications/progress", "at 2026-07-28 only the server reports progress"
        )
        params: JSONObject = {"progressToken": progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.send_notification("notifications/progress", params)

    # -- answering input requests ----------------------------------------------------

    async def answer_input_request(
        self, request: InputRequest, context: ClientRequestContext
    ) -> InputResponse | ErrorData:
        """Route one input request to its callback and check the answer.

        The legacy back-channel answers with this; the modern loop uses
        `call_input_callback` and lets the driver check each answer once.

        Returns:
            The checked answer, or `ErrorData` (the callback declined, or there is no
            callback for this kind: ``"Elicitation not supported"`` and so on).

        Raises:
            InvalidInputResponseError: the callback answered with the wrong kind.
            Exception: whatever the callback raised, unchanged.
        """
        from mrtr.types import ErrorData, validate_input_response

        answer = await self.call_input_callback(request, context)
        if isinstance(answer, ErrorData):
            return answer
        return validate_input_response(request.method, answer, key=context.key)

    async def call_input_callback(
        self, request: InputRequest, context: ClientRequestContext
    ) -> Any:
        """Call the callback for one input request's kind; its answer is not checked.

        Returns:
            What the callback returned, or `ErrorData` with ``"Elicitation not
            supported"`` (resp. sampling, list roots) when there is no such callback, or
            ``"URL-mode elicitation not supported"`` for a URL-mode request when URL mode
            was not enabled (it was not advertised either).

        Raises:
            Exception: whatever the callback raised, unchanged.
        """
        from mrtr.types import (
            CreateMessageRequest,
            ElicitRequest,
            ElicitRequestURLParams,
            ErrorData,
        )

        method = request.method
        if isinstance(request, ElicitRequest):
            if self._elicitation_callback is None:
                return ErrorData(code=INVALID_REQUEST, message=_NOT_SUPPORTED[method])
            if isinstance(request.params, ElicitRequestURLParams) and not self._url_mode:
                # Not advertised, so the callback was never promised to handle it.
                return ErrorData(code=INVALID_REQUEST, message=_URL_MODE_NOT_SUPPORTED)
            return await self._elicitation_callback(context, request.params)
        if isinstance(request, CreateMessageRequest):
            if self._sampling_callback is None:
                return ErrorData(code=INVALID_REQUEST, message=_NOT_SUPPORTED[method])
            return await self._sampling_callback(context, request.params)
        if self._list_roots_callback is None:
            return ErrorData(code=INVALID_REQUEST, message=_NOT_SUPPORTED[method])
        return await self._list_roots_callback(context)

    def _backchannel_context(self, request_id: RequestId) -> ClientRequestContext:
        """What is known about a server request on the legacy back-channel.

        The wire does not say which call a server request belongs to; when exactly one
        call that may ask for input is in flight, it is that one.
        """
        calls = [p for p in self._pending.values() if p.method in INPUT_REQUIRED_METHODS]
        method = name = arguments = None
        if len(calls) == 1:
            params = calls[0].params or {}
            method = calls[0].method
            name = params.get("name", params.get("uri"))
            arguments = params.get("arguments")
        return ClientRequestContext(
            session=self,
            method=method,
            name=name,
            arguments=arguments,
            protocol_version=self._protocol_version,
            request_id=request_id,
        )

    async def _serve_request(self, request_id: RequestId, method: str, message: JSONObject) -> None:
        from pydantic import ValidationError

        if method == "ping":
            await self._send_response(request_id, {})
            return
        model = _input_request_model(method)
        if model is None:
            await self._send_error(request_id, METHOD_NOT_FOUND, f"Method not found: {method}")
            return
        try:
            request = model.model_validate({"method": method, "params": message.get("params")})
        except ValidationError as exc:
            await self._send_error(
                request_id, INVALID_PARAMS, f"Invalid params for {method}: {exc}"
            )
            return
        await self._answer_backchannel(request_id, cast("InputRequest", request))

    async def _answer_backchannel(self, request_id: RequestId, request: InputRequest) -> None:
        from mrtr.types import ErrorData

        context = self._backchannel_context(request_id)
        try:
            answer = await self.answer_input_request(request, context)
        except InvalidInputResponseError as exc:
            _logger.error("not sending a wrong answer to the server's %s: %s", request.method, exc)
            await self._send_error(request_id, INTERNAL_ERROR, str(exc))
            return
        except Exception:
            _logger.exception("the %s callback raised", request.method)
            await self._send_error(request_id, INTERNAL_ERROR, "the client's callback failed")
            return
        if isinstance(answer, ErrorData):
            await self._send_error(request_id, answer.code, answer.message, answer.data)
        else:
            await self._send_response(request_id, answer.to_wire())
