"""What a client can connect to, resolved to a transport: `transport_for`.

A URL is streamable HTTP (imported on first use, with httpx), `StdioServerParameters`
(or another SDK's: anything with ``command`` and ``args``) start a subprocess, a
`Transport` is used as it is, and an in-process server offers a transport of its own
(`SupportsClientTransport`): the client side never imports the server package.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

from mrtr._lazy import publish
from mrtr.transports._base import Transport
from mrtr.transports._official import is_official_server
from mrtr.transports._stdio import StdioTransport
from mrtr.transports._stdio_compat import as_stdio_parameters, looks_like_stdio_parameters
from mrtr.transports._stdio_params import StdioServerParameters

if TYPE_CHECKING:
    import httpx

__all__ = [
    "ClientTarget",
    "HTTPClientArg",
    "OfficialServerLike",
    "StdioLike",
    "SupportsClientTransport",
    "check_target",
    "is_process_target",
    "target_identity",
    "transport_for",
]


@runtime_checkable
class SupportsClientTransport(Protocol):
    """An in-process server: it hands a client a transport connected to itself."""

    def client_transport(self) -> Transport:
        """A new, unopened transport to this server."""
        ...


class StdioLike(Protocol):
    """Another SDK's stdio parameters (``env`` and ``cwd`` are read when present)."""

    @property
    def command(self) -> str:
        """The executable."""
        ...

    @property
    def args(self) -> Sequence[str]:
        """Its arguments."""
        ...


class OfficialServerLike(Protocol):
    """The official SDK's ``Server`` or ``MCPServer`` (for type checkers only).

    At run time the object is recognised by its class (`is_official_server`), so a
    look-alike of another kind is still refused.
    """

    @property
    def session_manager(self) -> Any:
        """The official server's HTTP session manager."""
        ...

    def streamable_http_app(self, *args: Any, **kwargs: Any) -> Any:
        """The official server's ASGI app."""
        ...


ClientTarget: TypeAlias = (
    "str | StdioServerParameters | StdioLike | Transport | SupportsClientTransport"
    " | OfficialServerLike"
)
"""What `Client` connects to: a URL, a stdio command, a transport or an in-process server
(mrtr's, or the official SDK's ``Server``/``MCPServer``)."""

HTTPClientArg: TypeAlias = "httpx.AsyncClient | Callable[[], httpx.AsyncClient]"
"""An ``httpx.AsyncClient`` to use (it stays the caller's), or a factory of one."""


def check_target(target: object) -> None:
    """Raise unless `target` is something `transport_for` can connect to.

    Raises:
        TypeError: a target of another kind.
    """
    if (
        not isinstance(target, (str, Transport))
        and not looks_like_stdio_parameters(target)
        and not callable(getattr(target, "client_transport", None))
        and not is_official_server(target)
    ):
        raise TypeError(
            "Client target must be a URL, StdioServerParameters, a Transport, an object "
            "with client_transport() or an official-SDK Server/MCPServer; got "
            f"{type(target).__name__}"
        )


def is_process_target(target: object) -> bool:
    """Whether connecting to `target` starts a process (so reconnecting starts a fresh one)."""
    return not isinstance(target, (str, Transport)) and looks_like_stdio_parameters(target)


def target_identity(target: object) -> str:
    """Which server `target` names, as a cache key: the URL, the command line, the object."""
    if isinstance(target, str):
        return f"url:{target}"
    if is_process_target(target):
        params = as_stdio_parameters(target)
        return "stdio:" + "\0".join([params.command, *params.args])
    return f"object:{id(target):x}"


def transport_for(
    target: ClientTarget,
    *,
    max_message_size: int,
    headers: Mapping[str, str] | None = None,
    auth: httpx.Auth | None = None,
    http_client: HTTPClientArg | None = None,
) -> Transport:
    """The (unopened) transport that connects to `target`.

    Args:
        target: a URL, `StdioServerParameters`, a `Transport`, or an in-process server.
        max_message_size: the cap on one incoming message, in bytes (new transports).
        headers: extra HTTP headers (URL targets only).
        auth: an ``httpx.Auth`` (URL targets only).
        http_client: an ``httpx.AsyncClient`` or a factory of one (URL targets only).

    Raises:
        TypeError: a target of another kind.
    """
    check_target(target)
    if isinstance(target, Transport):
        return target
    if is_process_target(target):
        return StdioTransport(as_stdio_parameters(target), max_message_size=max_message_size)
    if isinstance(target, str):
        from mrtr.transports.http import StreamableHTTPTransport

        return StreamableHTTPTransport(
            target,
            headers=headers,
            auth=auth,
            http_client=http_client,
            max_message_size=max_message_size,
            max_sse_event_size=max_message_size,
        )
    if is_official_server(target):
        from mrtr.transports._official import OfficialServerTransport

        return OfficialServerTransport(target, max_message_size=max_message_size)
    assert isinstance(target, SupportsClientTransport)
    return target.client_transport()


publish("mrtr.transports", SupportsClientTransport, transport_for)
