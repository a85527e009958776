"""`Server`: handlers by method, the request-state policy, and the ways to serve it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, final

from mrtr.server._context import Principal, ServerRequestContext
from mrtr.server._security import RequestStateSecurity
from mrtr.transports import DEFAULT_MAX_MESSAGE_SIZE

if TYPE_CHECKING:
    from mrtr.server._core import ServerConnection
    from mrtr.server._http import ASGIApp
    from mrtr.server._resource import ProtectedResource
    from mrtr.transports import Transport
    from mrtr.types import (
        CallToolRequestParams,
        CallToolResult,
        GetPromptRequestParams,
        GetPromptResult,
        InputRequiredResult,
        PaginatedRequestParams,
        ReadResourceRequestParams,
        ReadResourceResult,
    )

__all__ = ["UNSEALED", "Server", "TokenVerifier"]


@final
class _Unsealed:
    """The type of `UNSEALED`."""

    _instance: _Unsealed | None = None

    def __new__(cls) -> _Unsealed:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSEALED"


UNSEALED = _Unsealed()
"""Pass as ``request_state_security=UNSEALED`` to send ``requestState`` as plain text.

A named value rather than ``None``: ``None`` conventionally means "the default", and the
default here is to seal. Opting out of integrity protection should be visible (and
searchable) in code review. Only safe when the state cannot affect authorization,
resource access or business logic.
"""

ListHandler = Callable[[ServerRequestContext, "PaginatedRequestParams | None"], Awaitable[Any]]
CallToolHandler = Callable[
    [ServerRequestContext, "CallToolRequestParams"],
    Awaitable["CallToolResult | InputRequiredResult"],
]
GetPromptHandler = Callable[
    [ServerRequestContext, "GetPromptRequestParams"],
    Awaitable["GetPromptResult | InputRequiredResult"],
]
ReadResourceHandler = Callable[
    [ServerRequestContext, "ReadResourceRequestParams"],
    Awaitable["ReadResourceResult | InputRequiredResult"],
]
TokenVerifier = Callable[[str], Awaitable[Principal | None]]
"""Maps a bearer token to the principal it authenticates, or ``None`` to reject it."""

_UNSET_VERSION = "0.0.0"


class Server:
    """A minimal MCP server whose handlers may answer with ``InputRequiredResult``.

    Handlers are ``async def handler(ctx: ServerRequestContext, params) -> result``;
    ``on_call_tool``, ``on_get_prompt`` and ``on_read_resource`` may also return an
    ``InputRequiredResult`` (modern requests only: check ``ctx.protocol_version``). The
    list handlers get ``PaginatedRequestParams`` or ``None``.

    Every ``requestState`` a handler sets is sealed before it leaves, and every one that
    comes back on tools/call, prompts/get and resources/read is verified before a
    handler runs (handlers read and write plain text). Without a policy the server seals
    with a key made at start-up (`RequestStateSecurity.ephemeral`); pass shared ``keys``
    when several instances serve one client, or `UNSEALED` to opt out.

    Args:
        name: the server's name (``serverInfo``), also the audience of its state.
        version: the server's version (``serverInfo``).
        instructions: guidance for the model, sent by discover and initialize.
        on_list_tools: answers ``tools/list``.
        on_call_tool: answers ``tools/call``.
        on_list_prompts: answers ``prompts/list``.
        on_get_prompt: answers ``prompts/get``.
        on_list_resources: answers ``resources/list``.
        on_list_resource_templates: answers ``resources/templates/list``.
        on_read_resource: answers ``resources/read``.
        request_state_security: the sealing policy; ``None`` (the default) seals with an
            ephemeral key, `UNSEALED` turns sealing off.

    Raises:
        ValueError: an explicit policy without ``audience`` on a server without a real
            (non-blank) name: the audience claim is what keeps another service that
            shares the keys from redeeming this server's state.
        TypeError: ``request_state_security`` is not a policy, ``None`` or `UNSEALED`.
    """

    def __init__(
        self,
        name: str,
        *,
        version: str | None = None,
        instructions: str | None = None,
        on_list_tools: ListHandler | None = None,
        on_call_tool: CallToolHandler | None = None,
        on_list_prompts: ListHandler | None = None,
        on_get_prompt: GetPromptHandler | None = None,
        on_list_resources: ListHandler | None = None,
        on_list_resource_templates: ListHandler | None = None,
        on_read_resource: ReadResourceHandler | None = None,
        request_state_security: RequestStateSecurity | _Unsealed | None = None,
    ) -> None:
        self.name = name
        self.version = version
        self.instructions = instructions
        self.on_list_tools = on_list_tools
        self.on_call_tool = on_call_tool
        self.on_list_prompts = on_list_prompts
        self.on_get_prompt = on_get_prompt
        self.on_list_resources = on_list_resources
        self.on_list_resource_templates = on_list_resource_templates
        self.on_read_resource = on_read_resource
        real_name = name.strip() or None
        if request_state_security is None:
            self.request_state_policy: RequestStateSecurity | None = (
                RequestStateSecurity.ephemeral()
            )
            self.audience: str | None = real_name
        elif isinstance(request_state_security, _Unsealed):
            self.request_state_policy = None
            self.audience = None
        elif isinstance(request_state_security, RequestStateSecurity):
            audience = request_state_security.audience or real_name
            if audience is None:
                raise ValueError(
                    "a server with an explicit request_state_security policy needs a real "
                    "name or the policy's audience=: the audience stops another service "
                    "sharing the keys from redeeming this server's requestState"
                )
            self.request_state_policy = request_state_security
            self.audience = audience
        else:
            raise TypeError(
                "request_state_security must be a RequestStateSecurity, None (seal with an "
                f"ephemeral key) or UNSEALED, not {type(request_state_security).__name__}"
            )

    def __repr__(self) -> str:
        return f"Server({self.name!r})"

    # --- protocol facts ---------------------------------------------------------------

    def server_info(self) -> dict[str, Any]:
        """The ``Implementation`` object of this server."""
        return {"name": self.name, "version": self.version or _UNSET_VERSION}

    def capabilities(self) -> dict[str, Any]:
        """The server capabilities, derived from the handlers it has."""
        caps: dict[str, Any] = {"logging": {}}
        if self.on_list_tools or self.on_call_tool:
            caps["tools"] = {}
        if self.on_list_prompts or self.on_get_prompt:
            caps["prompts"] = {}
        if self.on_list_resources or self.on_list_resource_templates or self.on_read_resource:
            caps["resources"] = {}
        return caps

    def discover_result(self) -> dict[str, Any]:
        """The answer to ``server/discover``."""
        from mrtr.types import META_SERVER_INFO, SUPPORTED_PROTOCOL_VERSIONS

        result: dict[str, Any] = {
            "resultType": "complete",
            "supportedVersions": list(SUPPORTED_PROTOCOL_VERSIONS),
            "capabilities": self.capabilities(),
            "ttlMs": 0,
            "cacheScope": "public",
            "_meta": {META_SERVER_INFO: self.server_info()},
        }
        if self.instructions is not None:
            result["instructions"] = self.instructions
        return result

    def initialize_result(self, protocol_version: str) -> dict[str, Any]:
        """The answer to a legacy ``initialize`` that settled on ``protocol_version``."""
        result: dict[str, Any] = {
            "protocolVersion": protocol_version,
            "capabilities": self.capabilities(),
            "serverInfo": self.server_info(),
        }
        if self.instructions is not None:
            result["instructions"] = self.instructions
        return result

    def connection(self) -> ServerConnection:
        """A fresh protocol state for one connection (for custom shells)."""
        from mrtr.server._core import ServerConnection

        return ServerConnection(self)

    # --- serving ----------------------------------------------------------------------

    def client_transport(self, *, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> Transport:
        """A transport to this server in the same process (what ``Client(server)`` uses).

        Opening it starts serving the other end of an in-memory pair (real JSON framing)
        in a background task; closing it stops the server side.
        """
        from mrtr.server._stream import InProcessTransport

        return InProcessTransport(self, max_message_size=max_message_size)

    async def run_stdio_async(self, *, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        """Serve one client over stdin/stdout until stdin closes."""
        from mrtr.server._stream import serve_stdio

        await serve_stdio(self, max_message_size=max_message_size)

    def run_stdio(self, *, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        """Serve one client over stdin/stdout until stdin closes (blocking)."""
        import anyio

        anyio.run(lambda: self.run_stdio_async(max_message_size=max_message_size))

    def streamable_http_app(
        self,
        *,
        path: str = "/mcp",
        token_verifier: TokenVerifier | None = None,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        protected_resource: ProtectedResource | None = None,
    ) -> ASGIApp:
        """An ASGI application serving this server over streamable HTTP at ``path``.

        Modern requests are stateless POSTs (JSON, or SSE when the client accepts it and
        the handler sends notifications); legacy clients get sessions
        (``Mcp-Session-Id``). Serve it with uvicorn (``mrtr[server]``) or any ASGI server.

        Args:
            path: the endpoint path.
            token_verifier: maps a bearer token to a `Principal` (or ``None`` to reject
                it); with one, requests without a valid token get 401, whose challenge
                names the server's protected-resource metadata (RFC 9728), served at
                ``/.well-known/oauth-protected-resource<path>``.
            max_message_size: the cap on one request body, in bytes.
            protected_resource: what that metadata says (the authorization servers,
                scopes, canonical URL); only used with a ``token_verifier``.
        """
        from mrtr.server._http import StreamableHTTPApp
        from mrtr.server._resource import ProtectedResource, ProtectedResourceApp

        app = StreamableHTTPApp(
            self, path=path, token_verifier=token_verifier, max_message_size=max_message_size
        )
        if token_verifier is None:
            return app
        return ProtectedResourceApp(
            app, path=path, resource=protected_resource or ProtectedResource()
        )

    def run_http(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        path: str = "/mcp",
        token_verifier: TokenVerifier | None = None,
        protected_resource: ProtectedResource | None = None,
    ) -> None:
        """Serve `streamable_http_app` with uvicorn until interrupted (blocking).

        Binds to localhost by default, as the transport spec advises for local servers.

        Raises:
            ImportError: uvicorn is not installed (``pip install 'mrtr[server]'``).
        """
        import uvicorn

        app = self.streamable_http_app(
            path=path, token_verifier=token_verifier, protected_resource=protected_resource
        )
        uvicorn.run(app, host=host, port=port, log_level="warning", lifespan="on")
