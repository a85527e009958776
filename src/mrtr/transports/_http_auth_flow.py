"""An ``httpx.Auth`` flow driven over the own HTTP/1.1 client (`OwnClient`).

``httpx.Auth.async_auth_flow`` is a generator that yields requests and is sent their
responses, whatever carries them. The transport drives it here for an auth on the
public seam (``mrtr.auth.OAuth``) when a request needs token work (a login, a refresh, a
401, a step-up, a DPoP nonce), so every MCP request of a transport goes on one client,
with one cookie jar and one User-Agent. What the flow sees of a response is its status,
its headers and at most `MAX_FLOW_BODY` bytes of its raw body, never decoded (a refused
response's body is nobody's business, and a compressed one could be a bomb); the
response the flow accepts is handed to the transport with whatever the flow read of it
put back in front, to be decoded under the caps as any other.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import httpx

from mrtr.transports._http_client import OwnClient, OwnResponse

__all__ = ["MAX_FLOW_BODY", "FlowResponse", "run_auth_flow"]

MAX_FLOW_BODY = 65_536
"""The most of a response's raw body an auth flow is given (the rest is not read)."""

_SET_BY_CLIENT = frozenset({b"host", b"content-length", b"transfer-encoding"})


class _KeptBody(httpx.AsyncByteStream):
    """The own response's raw body as the flow reads it, kept so it can be replayed."""

    def __init__(self, raw: AsyncIterator[bytes]) -> None:
        self._raw = raw
        self.kept: list[bytes] = []

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        async for chunk in self._raw:
            self.kept.append(chunk)
            yield chunk
            size += len(chunk)
            if size >= MAX_FLOW_BODY:
                return  # the rest stays unread (the connection is then closed)


class FlowResponse:
    """The response the flow accepted: the own response, with what the flow read first."""

    def __init__(self, response: OwnResponse, body: _KeptBody) -> None:
        self._response = response
        self._body = body
        self.status_code = response.status_code
        self.reason_phrase = response.reason_phrase
        self.headers = response.headers
        self.url = response.url

    @property
    def is_success(self) -> bool:
        return self._response.is_success

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        """What the flow read, then the rest of the body as it arrives."""
        for chunk in self._body.kept:
            yield chunk
        self._body.kept = []
        async for chunk in self._response.aiter_raw():
            yield chunk


def _for_the_flow(response: OwnResponse, request: httpx.Request, body: _KeptBody) -> httpx.Response:
    """An httpx view of `response`: status, headers, the raw body bounded and undecoded."""
    headers = [(k, v) for k, v in response.headers.raw if k.lower() != b"content-encoding"]
    return httpx.Response(response.status_code, headers=headers, stream=body, request=request)


def _request_headers(request: httpx.Request) -> list[tuple[str, str]]:
    """The flow's request headers, less those the own client writes itself."""
    return [
        (name.decode("latin-1"), value.decode("latin-1"))
        for name, value in request.headers.raw
        if name.lower() not in _SET_BY_CLIENT
    ]


@asynccontextmanager
async def run_auth_flow(
    client: OwnClient,
    auth: httpx.Auth,
    method: str,
    url: httpx.URL,
    *,
    headers: dict[str, str] | None = None,
    content: bytes = b"",
    timeout: httpx.Timeout | None = None,
) -> AsyncIterator[FlowResponse]:
    """Send one request through ``auth.async_auth_flow`` on `client`; yield the last response.

    Raises:
        httpx.TransportError: a request of the flow failed (translated by the caller).
        MRTRError: whatever the flow raised (``AuthError`` and its kin).
    """
    flow = auth.async_auth_flow(httpx.Request(method, url, headers=headers, content=content))
    request = await flow.__anext__()
    try:
        while True:
            async with AsyncExitStack() as stack:
                response = await stack.enter_async_context(
                    client.stream(
                        request.method,
                        request.url,
                        content=request.content,
                        headers=_request_headers(request),
                        timeout=timeout,
                    )
                )
                body = _KeptBody(response.aiter_raw())
                seen = _for_the_flow(response, request, body)
                if auth.requires_response_body:
                    await seen.aread()
                try:
                    request = await flow.asend(seen)
                except StopAsyncIteration:
                    yield FlowResponse(response, body)
                    return
                async for _ in body:  # the refused response: drained (bounded) for reuse
                    pass
    finally:
        await flow.aclose()
