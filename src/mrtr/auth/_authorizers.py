"""Authorizers: how the user sees the authorization page and how its redirect comes back.

`LoopbackAuthorizer` listens on 127.0.0.1 and opens a browser; `PasteAuthorizer` prints
the URL and reads the redirect the user pastes (SSH, containers); and
`FollowRedirectAuthorizer` fetches the page itself and takes the redirect (tests, and
authorization servers that approve without a user).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TextIO
from urllib.parse import parse_qsl, urljoin, urlsplit

import anyio
import httpx
from anyio.abc import SocketAttribute, SocketListener

from mrtr._lazy import publish
from mrtr.errors import AuthError, AuthorizationRequiredError

if TYPE_CHECKING:
    from anyio.abc import SocketStream

__all__ = [
    "AuthorizationRequest",
    "Authorizer",
    "FollowRedirectAuthorizer",
    "LoopbackAuthorizer",
    "PasteAuthorizer",
    "parse_redirect",
]

logger = logging.getLogger("mrtr.auth")

_MAX_CALLBACK_REQUEST = 16_384
_PAGE = (
    b"<!doctype html><meta charset=utf-8><title>mrtr</title>"
    b"<p>Authorization received. You can close this window.</p>"
)


@dataclass(frozen=True)
class AuthorizationRequest:
    """One authorization to complete.

    Attributes:
        url: the authorization URL to show the user.
        redirect_uri: where the authorization server will send the browser.
        state: the value the redirect must carry back.
        http: the httpx client of the OAuth layer (for authorizers that fetch).
        timeout: the per-request timeout of the OAuth layer.
    """

    url: str
    redirect_uri: str
    state: str
    http: httpx.AsyncClient
    timeout: float


class Authorizer(Protocol):
    """Shows the authorization page and returns the redirect's query parameters."""

    async def redirect_uri(self) -> str:
        """The redirect URI to register and send (known before the authorization)."""
        ...

    async def authorize(self, request: AuthorizationRequest) -> dict[str, str]:
        """Complete one authorization; return the redirect's query (``code``, ``state``, ...)."""
        ...


def parse_redirect(text: str) -> dict[str, str]:
    """The query parameters of a redirect URL (or of a bare ``code=...&state=...``)."""
    text = text.strip()
    query = urlsplit(text).query if "?" in text or "://" in text else text
    return dict(parse_qsl(query, keep_blank_values=True))


class LoopbackAuthorizer:
    """Receives the redirect on a listener at ``http://127.0.0.1:<port><path>``.

    The port is chosen by the system (``port=0``) and then kept, so a registered redirect
    URI stays valid for later logins in this process; a later process asks for the port of
    the stored registration first (`prefer`), so it need not register again. Requests for
    another path or without the expected ``state`` (a browser's preconnect, a stray tab)
    are ignored.

    Args:
        host: the address to listen on (and to write in the redirect URI).
        port: a fixed port, or 0 for any free one.
        path: the callback path.
        open_browser: open the URL in the default browser.
        timeout: how long to wait for the user, in seconds.
        out: where the URL is printed (default stderr).
        show_url: print the URL (for the user to open by hand if no browser opens).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        path: str = "/callback",
        *,
        open_browser: bool = True,
        timeout: float = 300.0,
        out: TextIO | None = None,
        show_url: bool = True,
    ) -> None:
        self.host = host
        self.show_url = show_url
        self.port = port
        self._fixed_port = port != 0
        self.path = path
        self.open_browser = open_browser
        self.timeout = timeout
        self._out = out
        self._listener: SocketListener | None = None

    def prefer(self, redirect_uri: str) -> None:
        """Try this redirect URI's port first (one registered earlier), if it is ours."""
        parts = urlsplit(redirect_uri)
        if self._fixed_port or self._listener is not None or parts.port is None:
            return
        if parts.scheme == "http" and parts.hostname == self.host and parts.path == self.path:
            self.port = parts.port

    async def redirect_uri(self) -> str:
        """Bind the listener (if not bound) and return its redirect URI."""
        if self._listener is None:
            try:
                listener = await anyio.create_tcp_listener(
                    local_host=self.host, local_port=self.port, reuse_port=False
                )
            except OSError:
                if self._fixed_port or self.port == 0:
                    raise
                listener = await anyio.create_tcp_listener(  # the old port is taken: any
                    local_host=self.host, local_port=0, reuse_port=False
                )
            bound = listener.listeners[0]
            assert isinstance(bound, SocketListener)
            self.port = bound.extra(SocketAttribute.local_port)
            self._listener = bound
        return f"http://{self.host}:{self.port}{self.path}"

    async def aclose(self) -> None:
        """Release the listener if one is bound (`authorize` releases it by itself)."""
        listener, self._listener = self._listener, None
        if listener is not None:
            await listener.aclose()

    async def authorize(self, request: AuthorizationRequest) -> dict[str, str]:
        """Show the URL, then wait for the redirect with the right ``state``.

        Raises:
            AuthorizationRequiredError: no redirect arrived within ``timeout``.
        """
        await self.redirect_uri()
        listener = self._listener
        assert listener is not None
        if self.show_url:
            print(
                f"Open this URL to authorize:\n{request.url}\n",
                file=self._out or sys.stderr,
                flush=True,
            )
        if self.open_browser:
            await anyio.to_thread.run_sync(_open_browser, request.url)
        try:
            with anyio.fail_after(self.timeout):
                while True:
                    stream = await listener.accept()
                    params = await self._serve(stream, request.state)
                    if params is not None:
                        return params
        except TimeoutError:
            raise AuthorizationRequiredError(
                f"no authorization redirect arrived within {self.timeout:g} s"
            ) from None
        finally:
            self._listener = None
            await listener.aclose()

    async def _serve(self, stream: SocketStream, state: str) -> dict[str, str] | None:
        async with stream:
            with anyio.move_on_after(10):
                head = b""
                while b"\r\n\r\n" not in head and len(head) < _MAX_CALLBACK_REQUEST:
                    try:
                        head += await stream.receive(4096)
                    except (anyio.EndOfStream, anyio.BrokenResourceError):
                        return None
                parts = head.split(b"\r\n", 1)[0].split(b" ")
                target = parts[1].decode("latin-1") if len(parts) == 3 else ""
                split = urlsplit(target)
                params = dict(parse_qsl(split.query, keep_blank_values=True))
                if split.path != self.path or params.get("state") != state:
                    await _respond(stream, b"404 Not Found", b"Not found")
                    return None
                await _respond(stream, b"200 OK", _PAGE)
                return params
        return None


async def _respond(stream: SocketStream, status: bytes, body: bytes) -> None:
    head = (
        b"HTTP/1.1 " + status + b"\r\nContent-Type: text/html; charset=utf-8\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n"
    )
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stream.send(head + body)


def _open_browser(url: str) -> None:
    import webbrowser

    try:
        webbrowser.open(url)
    except Exception:  # a missing browser is not an error: the URL was printed
        logger.info("could not open a browser; open the printed URL by hand")


class PasteAuthorizer:
    """Prints the authorization URL and reads back the redirect URL the user pastes.

    For machines without a browser: the user opens the URL elsewhere, logs in, and copies
    the address the browser ends on (it fails to load; that is expected).

    Args:
        redirect_uri: the redirect URI to register and send.
        read_line: reads one line (default: standard input, in a worker thread).
        out: where the instructions go (default stderr).
    """

    def __init__(
        self,
        redirect_uri: str = "http://127.0.0.1:8976/callback",
        *,
        read_line: Callable[[], str] | None = None,
        out: TextIO | None = None,
    ) -> None:
        self._redirect_uri = redirect_uri
        self._read_line = read_line or sys.stdin.readline
        self._out = out

    async def redirect_uri(self) -> str:
        """The fixed redirect URI."""
        return self._redirect_uri

    async def authorize(self, request: AuthorizationRequest) -> dict[str, str]:
        """Print the URL, read the pasted redirect.

        Raises:
            AuthorizationRequiredError: nothing was pasted.
        """
        out = self._out or sys.stderr
        print(
            f"Open this URL in a browser and authorize:\n{request.url}\n"
            "Then paste the address the browser was sent to:",
            file=out,
            flush=True,
        )
        line = await anyio.to_thread.run_sync(self._read_line, abandon_on_cancel=True)
        if not line.strip():
            raise AuthorizationRequiredError("no redirect URL was pasted")
        return parse_redirect(line)


class FollowRedirectAuthorizer:
    """Fetches the authorization URL and takes the redirect without a browser.

    For tests and for authorization servers that approve at once (no login page). Each
    redirect is followed by hand, through the OAuth layer's httpx client, until one
    points at ``redirect_uri``. With ``loopback=True`` the redirect is delivered for real
    to a `LoopbackAuthorizer` listener instead (the whole browser path, minus the user).

    Args:
        redirect_uri: the redirect URI to register and send (nothing listens on it).
        max_hops: how many redirects to follow before giving up.
        loopback: deliver the redirect to a loopback listener (``redirect_uri`` unused).
    """

    def __init__(
        self,
        redirect_uri: str = "http://127.0.0.1:8976/callback",
        *,
        max_hops: int = 10,
        loopback: bool = False,
    ) -> None:
        self._redirect_uri = redirect_uri
        self.max_hops = max_hops
        self._loopback = (
            LoopbackAuthorizer(open_browser=False, show_url=False, timeout=60.0)
            if loopback
            else None
        )

    async def redirect_uri(self) -> str:
        """The redirect URI (the listener's, with ``loopback=True``)."""
        if self._loopback is not None:
            return await self._loopback.redirect_uri()
        return self._redirect_uri

    def prefer(self, redirect_uri: str) -> None:
        """With ``loopback=True``: try a registered redirect URI's port first."""
        if self._loopback is not None:
            self._loopback.prefer(redirect_uri)

    async def aclose(self) -> None:
        """Release the loopback listener, if bound."""
        if self._loopback is not None:
            await self._loopback.aclose()

    async def authorize(self, request: AuthorizationRequest) -> dict[str, str]:
        """Follow redirects from the authorization URL to the redirect URI.

        Raises:
            AuthError: the server showed a page (needs a user) or redirected too often.
        """
        if self._loopback is not None:
            return await self._via_loopback(self._loopback, request)
        target = request.redirect_uri.split("?", 1)[0]
        url = request.url
        for _ in range(self.max_hops):
            try:
                # only the head matters: the body is never read (nor decoded: no bomb)
                async with request.http.stream(
                    "GET", url, follow_redirects=False, timeout=request.timeout, auth=None
                ) as response:
                    pass
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                raise AuthError(
                    f"could not fetch the authorization page: {type(exc).__name__}"
                ) from exc
            location = response.headers.get("location")
            if not response.is_redirect or location is None:
                raise AuthError(
                    f"the authorization server answered HTTP {response.status_code} instead "
                    "of redirecting; it needs a user (use LoopbackAuthorizer)"
                )
            url = urljoin(url, location)
            if url.split("?", 1)[0] == target:
                return parse_redirect(url)
        raise AuthError(f"more than {self.max_hops} redirects from the authorization server")

    async def _via_loopback(
        self, loopback: LoopbackAuthorizer, request: AuthorizationRequest
    ) -> dict[str, str]:
        """Follow the redirects to the listener; the two meet at the callback."""
        result: dict[str, str] = {}
        failure: list[BaseException] = []

        listened = anyio.Event()

        async def listen() -> None:
            try:
                result.update(await loopback.authorize(request))
            except Exception as exc:  # kept, raised below as itself (no exception group)
                failure.append(exc)
            finally:
                listened.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(listen)
            try:
                async with request.http.stream(  # the head is enough: the body is not read
                    "GET", request.url, follow_redirects=True, timeout=request.timeout, auth=None
                ):
                    pass
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                failure.append(exc)
            with anyio.move_on_after(request.timeout):
                await listened.wait()  # the listener answered before the GET could end
            tg.cancel_scope.cancel()
        if result:
            return result
        error = failure[0] if failure else None
        if isinstance(error, AuthError):
            raise error
        raise AuthError(
            "the authorization redirects did not reach the loopback listener"
            + (f": {type(error).__name__}" if error else "")
        ) from error


publish(
    "mrtr.auth",
    AuthorizationRequest,
    Authorizer,
    FollowRedirectAuthorizer,
    LoopbackAuthorizer,
    PasteAuthorizer,
)
