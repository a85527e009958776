"""mrtr.auth against our own authorization server (uvicorn, 127.0.0.1): what the
conformance suite never checks: refresh, rotation, restarts, invalid_grant,
invalid_client, concurrency, cancellation, timeouts, secrets kept out of logs."""

from __future__ import annotations

import json
import logging
import re
import stat
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from mrtr import AuthError, AuthorizationRequiredError, Client
from mrtr.auth import (
    AuthorizationCode,
    FileStore,
    FollowRedirectAuthorizer,
    MemoryStore,
    OAuth,
)
from tests.auth.conftest import ROOT, MockAS

pytestmark = pytest.mark.anyio

LIMIT = 60  # generous bounds for a slow shared machine; never asserted as timings


class Clock:
    """A settable clock: the client believes it is whatever time this says."""

    def __init__(self) -> None:
        import time

        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def login_oauth(
    mock: MockAS, store: object = None, clock: Clock | None = None, **kwargs: object
) -> OAuth:
    return OAuth(
        mock.mcp,
        grant=AuthorizationCode(FollowRedirectAuthorizer()),
        store=store or MemoryStore(),  # type: ignore[arg-type]
        clock=clock or Clock(),
        **kwargs,  # type: ignore[arg-type]
    )


async def whoami(client: Client) -> str:
    result = await client.call_tool("whoami", {})
    text = result.content[0].text  # type: ignore[union-attr]
    assert text.startswith("you are client-")
    return text


async def test_first_request_discovers_registers_and_authorizes(mock_as: MockAS) -> None:
    auth = login_oauth(mock_as)
    with anyio.fail_after(LIMIT):
        async with Client(mock_as.mcp, auth=auth) as client:
            await whoami(client)
            await whoami(client)
    stats = mock_as.stats()
    assert stats["registrations"] == 1
    assert stats["authorizations"] == 1 and stats["code_grants"] == 1
    assert stats["refreshes"] == 0
    assert auth.token is not None and auth.token.issuer == mock_as.base
    assert auth.token.resource == mock_as.mcp  # the metadata's exact string, no slash added
    assert "offline_access" in auth.token.scope and "mcp" in auth.token.scope


async def test_expired_token_is_refreshed_before_use_with_rotation(mock_as: MockAS) -> None:
    clock = Clock()
    auth = login_oauth(mock_as, clock=clock)
    with anyio.fail_after(LIMIT):
        first = await auth.login()
        clock.now += 7200  # past expiry, as far as the client knows
        async with Client(mock_as.mcp, auth=auth) as client:
            await whoami(client)
        assert auth.token is not None
        assert auth.token.refresh_token != first.refresh_token  # rotated
        assert auth.token.access_token != first.access_token
        clock.now += 7200  # and again: the rotated refresh token works, the old one is gone
        async with Client(mock_as.mcp, auth=auth) as client:
            await whoami(client)
    stats = mock_as.stats()
    assert stats["refreshes"] == 2 and stats["refresh_refused"] == 0
    assert stats["authorizations"] == 1


async def test_fifty_concurrent_calls_over_an_expired_token_refresh_once(mock_as: MockAS) -> None:
    clock = Clock()
    auth = login_oauth(mock_as, clock=clock)
    with anyio.fail_after(LIMIT * 2):
        await auth.login()
        async with Client(mock_as.mcp, auth=auth) as client:
            await whoami(client)
            clock.now += 7200
            results: list[str] = []

            async def call() -> None:
                results.append(await whoami(client))

            async with anyio.create_task_group() as tg:
                for _ in range(50):
                    tg.start_soon(call)
    assert len(results) == 50
    stats = mock_as.stats()
    assert stats["refreshes"] == 1 and stats["refresh_refused"] == 0
    assert stats["authorizations"] == 1


async def test_two_oauths_sharing_a_store_refresh_an_expired_token_once(mock_as: MockAS) -> None:
    clock = Clock()
    store = MemoryStore()
    first = login_oauth(mock_as, store, clock)
    second = login_oauth(mock_as, store, clock)
    with anyio.fail_after(LIMIT * 2):
        await first.login()
        async with Client(mock_as.mcp, auth=first) as one, Client(mock_as.mcp, auth=second) as two:
            await whoami(one)
            await whoami(two)  # the second finds the first's token in the store
            clock.now += 7200
            results: list[str] = []

            async def call(client: Client) -> None:
                results.append(await whoami(client))

            async with anyio.create_task_group() as tg:
                for n in range(50):
                    tg.start_soon(call, one if n % 2 else two)
    assert len(results) == 50
    assert first.token == second.token
    stats = mock_as.stats()
    assert stats["refreshes"] == 1 and stats["refresh_refused"] == 0
    assert stats["authorizations"] == 1


async def test_two_oauths_sharing_a_store_log_in_once(mock_as: MockAS) -> None:
    store = MemoryStore()
    first, second = login_oauth(mock_as, store), login_oauth(mock_as, store)
    results: list[str] = []

    async def call(auth: OAuth) -> None:
        async with Client(mock_as.mcp, auth=auth) as client:
            results.append(await whoami(client))

    with anyio.fail_after(LIMIT * 2):
        async with anyio.create_task_group() as tg:
            for auth in (first, second, first, second):
                tg.start_soon(call, auth)
    assert len(results) == 4
    assert first.token == second.token
    stats = mock_as.stats()
    assert stats["authorizations"] == 1 and stats["refreshes"] == 0


class Refusing:
    """An authorizer whose user closes the browser, once the test lets them."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.release = anyio.Event()

    async def redirect_uri(self) -> str:
        return "http://127.0.0.1:8976/callback"

    async def authorize(self, request: object) -> dict[str, str]:
        self.started.set()
        await self.release.wait()
        raise AuthError("the user closed the browser")


async def test_a_failed_login_does_not_fail_another_oauth_waiting_on_the_store(
    mock_as: MockAS,
) -> None:
    store = MemoryStore()
    refusing = Refusing()
    failing = OAuth(mock_as.mcp, grant=AuthorizationCode(refusing), store=store)
    succeeding = login_oauth(mock_as, store)
    outcomes: dict[str, object] = {}

    async def login(name: str, auth: OAuth) -> None:
        try:
            outcomes[name] = await auth.login()
        except AuthError as exc:
            outcomes[name] = exc

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(login, "failing", failing)
            await refusing.started.wait()  # its acquisition is in flight
            tg.start_soon(login, "succeeding", succeeding)
            await anyio.wait_all_tasks_blocked()  # waiting for that flight
            refusing.release.set()
    assert isinstance(outcomes["failing"], AuthError)
    assert outcomes["succeeding"] == succeeding.token and succeeding.token is not None
    assert mock_as.stats()["authorizations"] == 1


async def test_a_401_with_a_server_side_expired_token_refreshes_then_retries(
    mock_as: MockAS,
) -> None:
    auth = login_oauth(mock_as)
    with anyio.fail_after(LIMIT):
        async with Client(mock_as.mcp, auth=auth) as client:
            await whoami(client)
            mock_as.control(expire_access=True)  # the client still thinks it is valid
            await whoami(client)
    stats = mock_as.stats()
    assert stats["refreshes"] == 1 and stats["authorizations"] == 1


async def test_invalid_grant_clears_the_tokens_and_authorizes_again(mock_as: MockAS) -> None:
    clock = Clock()
    store = MemoryStore()
    auth = login_oauth(mock_as, store, clock)
    with anyio.fail_after(LIMIT):
        first = await auth.login()
        mock_as.control(reject_refresh=True)
        clock.now += 7200
        async with Client(mock_as.mcp, auth=auth) as client:
            await whoami(client)
    stats = mock_as.stats()
    assert stats["refresh_refused"] == 1 and stats["authorizations"] == 2
    assert auth.token is not None and auth.token.access_token != first.access_token


async def test_invalid_grant_without_an_authorizer_is_a_typed_error_and_clears_the_store(
    mock_as: MockAS,
) -> None:
    clock = Clock()
    store = MemoryStore()
    with anyio.fail_after(LIMIT):
        await login_oauth(mock_as, store, clock).login()
        mock_as.control(reject_refresh=True)
        clock.now += 7200
        headless = OAuth(grant=AuthorizationCode(), store=store, clock=clock)
        with pytest.raises(AuthorizationRequiredError) as caught:
            async with Client(mock_as.mcp, auth=headless) as client:
                await whoami(client)
    assert "login" in str(caught.value)
    discovery = await store.load("discovery", mock_as.mcp)
    assert discovery is not None
    assert await store.load("tokens", f"{mock_as.base}|{mock_as.mcp}") is None


async def test_invalid_client_registers_again_once(mock_as: MockAS) -> None:
    clock = Clock()
    auth = login_oauth(mock_as, clock=clock)
    with anyio.fail_after(LIMIT):
        await auth.login()
        mock_as.control(forget_clients=True)  # the server lost our registration
        clock.now += 7200
        async with Client(mock_as.mcp, auth=auth) as client:
            await whoami(client)
    stats = mock_as.stats()
    assert stats["registrations"] == 2 and stats["authorizations"] == 2


async def test_a_new_process_with_a_file_store_refreshes_without_a_login(
    mock_as: MockAS, tmp_path: Path
) -> None:
    path = tmp_path / "tokens.json"
    with anyio.fail_after(LIMIT):
        await login_oauth(mock_as, FileStore(path)).login()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    script = (
        "import anyio, time, sys\n"
        "from mrtr import Client\n"
        "from mrtr.auth import AuthorizationCode, FileStore, OAuth\n"
        "async def main():\n"
        "    auth = OAuth(grant=AuthorizationCode(), store=FileStore(sys.argv[1]),\n"
        "                 clock=lambda: time.time() + 7200)\n"
        "    async with Client(sys.argv[2], auth=auth) as client:\n"
        "        print((await client.call_tool('whoami', {})).content[0].text)\n"
        "anyio.run(main)\n"
    )
    done = await anyio.run_process(
        [sys.executable, "-c", script, str(path), mock_as.mcp],
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().startswith("you are client-")
    stats = mock_as.stats()
    assert stats["refreshes"] == 1 and stats["authorizations"] == 1
    saved = json.loads(path.read_text())["records"]["tokens"]
    (record,) = saved.values()
    assert record["refresh_token"] and record["expires_at"]


async def test_a_cancelled_refresh_leaves_nothing_locked(mock_as: MockAS) -> None:
    clock = Clock()
    auth = login_oauth(mock_as, clock=clock)
    with anyio.fail_after(LIMIT):
        await auth.login()
        async with Client(mock_as.mcp, auth=auth) as client:
            mock_as.control(stall_token=True)
            clock.now += 7200
            with anyio.move_on_after(1) as scope:  # the leader is cancelled mid-refresh
                await whoami(client)
            assert scope.cancelled_caught
            mock_as.control(stall_token=False)
            await whoami(client)  # a new leader refreshes: no lock was left behind
    assert mock_as.stats()["refreshes"] == 1


async def test_a_hung_token_endpoint_times_out_as_an_auth_error(mock_as: MockAS) -> None:
    auth = login_oauth(mock_as, timeout=0.5)
    mock_as.control(stall_token=True)
    with anyio.fail_after(LIMIT), pytest.raises(AuthError, match="no answer within"):
        await auth.login()


async def test_no_token_secret_or_code_reaches_a_log_line(
    mock_as: MockAS, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    store = MemoryStore()
    auth = login_oauth(mock_as, store, clock)
    with caplog.at_level(logging.DEBUG), anyio.fail_after(LIMIT):
        async with Client(mock_as.mcp, auth=auth) as client:
            await whoami(client)
            clock.now += 7200
            await whoami(client)
    assert auth.token is not None
    # mrtr's own logs and httpx's request lines (httpcore's DEBUG trace of raw response
    # headers is outside mrtr's control: leave it off where it matters)
    text = "\n".join(
        r.getMessage() for r in caplog.records if r.name.startswith("mrtr") or r.name == "httpx"
    )
    # the mock's tokens and secrets start "at-", "rt-", "secret-"; a random PKCE challenge
    # in a logged authorize URL may hold those letters mid-word, so match them as words
    assert re.search(r"(?<![A-Za-z0-9_-])(at|rt|secret)-", text) is None
    assert "code=" not in text
    assert auth.token.access_token not in repr(auth.token)


async def test_logout_forgets_the_tokens(mock_as: MockAS, tmp_path: Path) -> None:
    store = FileStore(tmp_path / "t.json")
    auth = login_oauth(mock_as, store)
    with anyio.fail_after(LIMIT):
        token = await auth.login()
        elsewhere = OAuth(mock_as.mcp, store=FileStore(tmp_path / "t.json"))
        assert await elsewhere.stored_token() == token
        await auth.logout()
    assert auth.token is None
    records = json.loads((tmp_path / "t.json").read_text())["records"]
    assert records["tokens"] == {} and records["discovery"] == {}


async def test_final_401_without_oauth_is_an_auth_error_in_auto_mode(mock_as: MockAS) -> None:
    import httpx

    bodies: list[bytes] = []

    async def record(request: httpx.Request) -> None:
        bodies.append(request.content)

    async with httpx.AsyncClient(event_hooks={"request": [record]}) as http:
        with anyio.fail_after(LIMIT), pytest.raises(AuthorizationRequiredError) as caught:
            async with Client(mock_as.mcp, http_client=http):
                pass
    assert "401" in str(caught.value)
    # server/discover only: a 401 is no evidence of a legacy server, no initialize follows
    assert len(bodies) == 1 and b"server/discover" in bodies[0]
    assert mock_as.stats()["resource_metadata"] == 0


def test_oauth_is_async_only() -> None:
    import httpx

    with httpx.Client(auth=OAuth("http://127.0.0.1:9/mcp")) as client, pytest.raises(TypeError):
        client.get("http://127.0.0.1:9/mcp")


def test_file_store_is_safe_for_two_processes(tmp_path: Path) -> None:
    path = tmp_path / "shared.json"
    script = (
        "import anyio, sys\n"
        "from mrtr.auth import FileStore\n"
        "async def main():\n"
        "    store = FileStore(sys.argv[1])\n"
        "    for i in range(40):\n"
        "        await store.save('tokens', f'{sys.argv[2]}-{i}', {'n': i})\n"
        "anyio.run(main)\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(path), name], cwd=ROOT)
        for name in ("a", "b")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    tokens = json.loads(path.read_text())["records"]["tokens"]
    assert len(tokens) == 80  # no write lost
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".shared")] == []


async def test_oauth_requests_go_through_the_users_http_client(mock_as: MockAS) -> None:
    import httpx

    seen: list[str] = []

    async def record(request: httpx.Request) -> None:
        seen.append(f"{request.method} {request.url.path}")

    auth = OAuth(grant=AuthorizationCode(FollowRedirectAuthorizer()))
    async with httpx.AsyncClient(event_hooks={"request": [record]}) as http:
        with anyio.fail_after(LIMIT):
            async with Client(mock_as.mcp, auth=auth, http_client=http) as client:
                await whoami(client)
    assert "GET /.well-known/oauth-protected-resource/mcp" in seen
    assert "GET /.well-known/oauth-authorization-server" in seen
    assert {"POST /register", "GET /authorize", "POST /token"} <= set(seen)


async def test_the_redirect_can_reach_a_real_loopback_listener(mock_as: MockAS) -> None:
    auth = OAuth(mock_as.mcp, grant=AuthorizationCode(FollowRedirectAuthorizer(loopback=True)))
    with anyio.fail_after(LIMIT):
        token = await auth.login()
        async with Client(mock_as.mcp, auth=auth) as client:
            await whoami(client)
    assert token.issuer == mock_as.base
    assert mock_as.stats()["authorizations"] == 1


async def test_a_store_locked_by_another_process_is_a_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "locked.json"
    holder = (
        "import fcntl, os, sys\n"
        "fd = os.open(sys.argv[1] + '.refresh.lock', os.O_RDWR | os.O_CREAT, 0o600)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "sys.stdin.read()\n"
    )
    proc = await anyio.open_process([sys.executable, "-c", holder, str(path)])
    try:
        assert proc.stdout is not None
        with anyio.fail_after(LIMIT):
            assert (await proc.stdout.receive()).startswith(b"held")
            store = FileStore(path, lock_timeout=0.2)
            with pytest.raises(AuthError, match="locked by another process"):
                async with store.lock("k"):
                    pass
    finally:
        proc.kill()
        await proc.wait()
        await proc.aclose()


async def test_a_new_loopback_login_reuses_the_registered_redirect(
    mock_as: MockAS, tmp_path: Path
) -> None:
    store = FileStore(tmp_path / "t.json")
    with anyio.fail_after(LIMIT):
        for _ in range(2):  # two "processes": a fresh OAuth and authorizer each time
            auth = OAuth(
                mock_as.mcp,
                grant=AuthorizationCode(FollowRedirectAuthorizer(loopback=True)),
                store=store,
            )
            await auth.login(force=True)
    stats = mock_as.stats()
    assert stats["authorizations"] == 2 and stats["registrations"] == 1


async def test_final_401_on_the_transports_own_client_is_an_auth_error(mock_as: MockAS) -> None:
    with anyio.fail_after(LIMIT), pytest.raises(AuthorizationRequiredError):
        async with Client(mock_as.mcp):  # no auth, no http_client: the own HTTP client
            pass
