"""`python -m bench.auth_cost [--calls N] [--rounds R]`: what OAuth costs the client per leg.

With a valid token, a call through `mrtr.auth.OAuth` should cost about what the same call
costs with a static ``Authorization`` header. This serves ``examples/oauth_login.py``'s
protected server in a subprocess on 127.0.0.1, logs in once, then times (client CPU,
``time.process_time``) N ``tools/call`` legs each way, alternating rounds, and prints the
median ratio OAuth / static header. A second measure isolates the auth layer: the same
httpx request through a mock transport (no network, no MCP), OAuth vs a static header.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio

from mrtr import Client
from mrtr.auth import AuthorizationCode, FollowRedirectAuthorizer, MemoryStore, OAuth

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "oauth_login.py"


async def _legs(client: Client, calls: int) -> float:
    start = time.process_time()
    for _ in range(calls):
        await client.call_tool("whoami", {})
    return (time.process_time() - start) / calls


async def measure(
    url: str, calls: int, rounds: int
) -> tuple[list[float], list[float], list[float]]:
    """Per leg: OAuth, a static header (the transport's own HTTP client), a static header
    over httpx (what ``auth=`` ran on before OAuth had the own client's fast path)."""
    import httpx

    auth = OAuth(grant=AuthorizationCode(FollowRedirectAuthorizer()), store=MemoryStore())
    oauth_cpu: list[float] = []
    static_cpu: list[float] = []
    httpx_cpu: list[float] = []
    async with Client(url, auth=auth) as with_oauth, httpx.AsyncClient() as http:
        await with_oauth.call_tool("whoami", {})  # logs in (not timed)
        assert auth.token is not None
        header = {"Authorization": f"Bearer {auth.token.access_token}"}
        async with (
            Client(url, headers=header) as with_header,
            Client(url, headers=header, http_client=http) as over_httpx,
        ):
            for client in (with_header, over_httpx, with_oauth):
                await _legs(client, 10)  # warm all three
            for _ in range(rounds):
                static_cpu.append(await _legs(with_header, calls))
                httpx_cpu.append(await _legs(over_httpx, calls))
                oauth_cpu.append(await _legs(with_oauth, calls))
    return oauth_cpu, static_cpu, httpx_cpu


async def isolated(requests: int, rounds: int) -> tuple[list[float], list[float]]:
    """Client CPU per httpx request with nothing else around it: the auth layer alone."""
    import httpx

    from mrtr.auth import Discovery, TokenSet

    url, issuer = "http://127.0.0.1:9/mcp", "http://127.0.0.1:9"
    store = MemoryStore()
    discovery = Discovery(url, url, issuer, {"issuer": issuer})
    await store.save("discovery", url, discovery.to_json())
    token = TokenSet("tok", expires_at=time.time() + 86400, issuer=issuer, resource=url)
    await store.save("tokens", f"{issuer}|{url}", token.to_json())
    auth = OAuth(url, store=store)
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json={}))
    oauth_cpu: list[float] = []
    static_cpu: list[float] = []
    async with httpx.AsyncClient(transport=transport) as http:
        header = {"Authorization": "Bearer tok"}
        for _ in range(rounds + 1):  # the first round warms up
            start = time.process_time()
            for _ in range(requests):
                await http.post(url, content=b"{}", headers=header)
            static_cpu.append((time.process_time() - start) / requests)
            start = time.process_time()
            for _ in range(requests):
                await http.post(url, content=b"{}", auth=auth)
            oauth_cpu.append((time.process_time() - start) / requests)
    return oauth_cpu[1:], static_cpu[1:]


def _report(title: str, oauth_cpu: list[float], static_cpu: list[float]) -> None:
    ratios = [o / s for o, s in zip(oauth_cpu, static_cpu, strict=True)]
    print(title)
    print(f"  static Authorization header:   {statistics.median(static_cpu) * 1e6:8.1f} us")
    print(f"  mrtr.auth.OAuth (valid token): {statistics.median(oauth_cpu) * 1e6:8.1f} us")
    print(f"  ratio OAuth / static: median {statistics.median(ratios):.3f}")
    print(f"  (rounds: {', '.join(f'{r:.3f}' for r in ratios)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    server = subprocess.Popen(
        [sys.executable, str(EXAMPLE), "--serve", "0"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{int(server.stdout.readline())}/mcp"
        legs = anyio.run(measure, url, args.calls, args.rounds)
    finally:
        server.terminate()
        server.wait()
        if server.stdout is not None:
            server.stdout.close()
    oauth_cpu, static_cpu, httpx_cpu = legs
    title = f"client CPU per tools/call leg, {args.rounds} rounds of {args.calls}"
    _report(f"{title}, static header on the transport's own HTTP client:", oauth_cpu, static_cpu)
    _report(f"{title}, static header over httpx (OAuth's client before):", oauth_cpu, httpx_cpu)
    _report(
        f"client CPU per httpx request alone, {args.rounds} rounds of {args.calls * 10}:",
        *anyio.run(isolated, args.calls * 10, args.rounds),
    )


if __name__ == "__main__":
    main()
