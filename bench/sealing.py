"""Sealing's own cost per leg, part by part: `python -m bench.sealing [--number N]`.

A sealed leg of the benchmark's `rounds` tool opens the token the client echoed and seals
the next one. This times, in one process, each part of that work on the same state and
arguments (the median of 7 runs of ``--number`` calls each): the request binding (a
digest of the canonical arguments), the claims' JSON both ways, the base64url text, the
AES-256-GCM encryption and decryption, the whole `seal_state` and `open_state`, and the
server core's whole leg unsealed and sealed (`ServerConnection.handle`, no transport), so
the difference of the last two is what sealing adds to a leg inside the server.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import anyio

from bench._raw_client import rounds_params


def _time(fn: Callable[[], object], number: int) -> float:
    runs = []
    for _ in range(7):
        start = time.process_time()
        for _ in range(number):
            fn()
        runs.append((time.process_time() - start) / number)
    return statistics.median(runs)


def _run_coroutine(factory: Callable[[], Any]) -> Callable[[], object]:
    def step() -> object:
        coroutine = factory()
        try:
            coroutine.send(None)
        except StopIteration as done:
            return done.value
        raise RuntimeError("the coroutine waited")

    return step


async def _core_leg(sealed: bool, number: int) -> float:
    from bench.servers.mrtr_server import build_server

    connection = build_server(sealed=sealed).connection()

    async def drop(message: Any) -> None:
        return None

    async def call() -> None:
        params = rounds_params(2)
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        result = (await connection.handle(message, emit=drop) or {})["result"]
        while result.get("resultType") == "input_required":
            (key,) = result["inputRequests"]
            answers = {key: {"action": "accept", "content": {"ok": True}}}
            retry = {**params, "inputResponses": answers, "requestState": result["requestState"]}
            message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": retry}
            result = (await connection.handle(message, emit=drop) or {})["result"]

    for _ in range(50):
        await call()
    runs = []
    for _ in range(7):
        start = time.process_time()
        for _ in range(number // 3):
            await call()
        runs.append((time.process_time() - start) / (number // 3 * 3))
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.sealing")
    parser.add_argument("--number", type=int, default=3000, help="calls per run")
    args = parser.parse_args()
    from mrtr.server._sealing._codec import b64url, b64url_decode
    from mrtr.server._sealing._security import RequestBinding, RequestStateSecurity, canonical_json

    policy = RequestStateSecurity.ephemeral()
    params = rounds_params(2)
    binding = RequestBinding.of("tools/call", params)
    token = policy.seal_state("1", binding=binding, principal=None, audience="bench-mrtr")
    payload = policy.codec.unseal(token)
    claims = json.loads(payload)
    text = token[3:]
    raw = b64url_decode(text)
    number = args.number
    parts: list[tuple[str, Callable[[], object]]] = [
        (
            "request binding (canonical arguments, SHA-256)",
            lambda: RequestBinding.of("tools/call", params),
        ),
        ("claims to canonical JSON", lambda: canonical_json(claims)),
        ("claims from JSON", lambda: json.loads(payload)),
        ("base64url encode", lambda: b64url(raw)),
        ("base64url decode (canonical check)", lambda: b64url_decode(text)),
        ("AES-256-GCM seal (codec.seal)", lambda: policy.codec.seal(payload)),
        ("AES-256-GCM open (codec.unseal)", lambda: policy.codec.unseal(token)),
        (
            "seal_state (claims, JSON, codec)",
            lambda: policy.seal_state("1", binding=binding, principal=None, audience="bench-mrtr"),
        ),
        (
            "open_state (codec, JSON, checks)",
            _run_coroutine(
                lambda: policy.open_state(
                    token, binding=binding, principal=None, audience="bench-mrtr"
                )
            ),
        ),
    ]
    print("| part of a sealed leg | CPU per call (µs) |")
    print("|---|---:|")
    for label, fn in parts:
        fn()
        print(f"| {label} | {_time(fn, number) * 1e6:.2f} |")
    unsealed = anyio.run(_core_leg, False, number)
    sealed = anyio.run(_core_leg, True, number)
    print(f"| server core, whole leg, unsealed | {unsealed * 1e6:.2f} |")
    print(f"| server core, whole leg, sealed | {sealed * 1e6:.2f} |")
    share = (sealed - unsealed) * 1e6
    print(f"| sealing's share of a leg in the core (sealed - unsealed) | {share:.2f} |")


if __name__ == "__main__":
    main()
