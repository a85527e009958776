"""The authorizers: a loopback listener that waits for the right redirect, and pasting."""

from __future__ import annotations

import io

import anyio
import httpx
import pytest

from mrtr import AuthorizationRequiredError
from mrtr.auth import AuthorizationRequest, LoopbackAuthorizer, PasteAuthorizer

pytestmark = pytest.mark.anyio


def request_for(redirect_uri: str, http: httpx.AsyncClient) -> AuthorizationRequest:
    return AuthorizationRequest(
        "https://as.example/authorize?x=1", redirect_uri, "the-state", http, 10.0
    )


async def test_loopback_ignores_strays_and_returns_the_redirect_with_the_right_state() -> None:
    out = io.StringIO()
    authorizer = LoopbackAuthorizer(open_browser=False, out=out)
    redirect_uri = await authorizer.redirect_uri()
    assert redirect_uri.startswith("http://127.0.0.1:") and redirect_uri.endswith("/callback")
    assert await authorizer.redirect_uri() == redirect_uri  # bound once
    base = redirect_uri.rsplit("/", 1)[0]
    async with httpx.AsyncClient() as http:
        result: dict[str, str] = {}

        async def wait() -> None:
            result.update(await authorizer.authorize(request_for(redirect_uri, http)))

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(wait)
                wrong_path = await http.get(f"{base}/favicon.ico")
                assert wrong_path.status_code == 404
                wrong_state = await http.get(f"{redirect_uri}?code=x&state=nope")
                assert wrong_state.status_code == 404
                done = await http.get(f"{redirect_uri}?code=the-code&state=the-state&iss=i")
                assert done.status_code == 200 and "close this window" in done.text
    assert result == {"code": "the-code", "state": "the-state", "iss": "i"}
    assert "https://as.example/authorize?x=1" in out.getvalue()
    # the port is kept: a later login registers the same redirect URI
    assert await authorizer.redirect_uri() == redirect_uri
    await authorizer.aclose()


async def test_loopback_gives_up_with_a_typed_error() -> None:
    authorizer = LoopbackAuthorizer(open_browser=False, timeout=0.2, out=io.StringIO())
    redirect_uri = await authorizer.redirect_uri()
    async with httpx.AsyncClient() as http:
        with anyio.fail_after(30), pytest.raises(AuthorizationRequiredError):
            await authorizer.authorize(request_for(redirect_uri, http))


async def test_paste_reads_the_redirect_url_or_a_bare_query() -> None:
    lines = iter(["http://127.0.0.1:8976/callback?code=c1&state=s\n", "code=c2&state=s\n", "\n"])
    out = io.StringIO()
    authorizer = PasteAuthorizer(read_line=lambda: next(lines), out=out)
    async with httpx.AsyncClient() as http:
        request = request_for(await authorizer.redirect_uri(), http)
        assert await authorizer.authorize(request) == {"code": "c1", "state": "s"}
        assert await authorizer.authorize(request) == {"code": "c2", "state": "s"}
        with pytest.raises(AuthorizationRequiredError):
            await authorizer.authorize(request)
    assert "https://as.example/authorize?x=1" in out.getvalue()


async def test_loopback_prefers_a_registered_port_and_falls_back_when_it_is_taken() -> None:
    first = LoopbackAuthorizer(open_browser=False, out=io.StringIO())
    registered = await first.redirect_uri()
    await first.aclose()
    later = LoopbackAuthorizer(open_browser=False, out=io.StringIO())  # a new process
    later.prefer(registered)
    assert await later.redirect_uri() == registered  # no new registration needed
    other = LoopbackAuthorizer(open_browser=False, out=io.StringIO())
    other.prefer(registered)  # taken by `later` now
    fallback = await other.redirect_uri()
    assert fallback != registered and fallback.endswith("/callback")
    other.prefer("http://localhost:1/elsewhere")  # not ours: ignored
    await later.aclose()
    await other.aclose()
