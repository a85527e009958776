"""Repeated in-memory bursts in one process: `python -m bench.burst [options]`.

Scenario 4a makes one burst per fresh process; this makes several in one process (after
warm-up) and reports the median CPU per burst and the share of it spent in the cyclic
garbage collector (timed with `gc.callbacks`), which a burst of 1,000 calls in flight
makes a large part of the cost. `--client raw` drives mrtr's in-process server with a
minimal JSON-RPC client of a few lines instead of `mrtr.Client`, which isolates the
server half (server, in-process transport, JSON framing) from the client's share.

Examples:
    python -m bench.burst                       # mrtr.Client, 5 bursts of 1,000 calls
    python -m bench.burst --client raw          # the server half alone
    python -m bench.burst --client official     # the official client and server
    python -m bench.burst --no-gc               # with the collector off (its share)
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.lowlevel

from bench._clients import open_client

_META = {
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}


async def _bursts(call: Callable[[], Awaitable[object]], args: argparse.Namespace) -> None:
    collector = [0.0, 0.0]  # start of the current collection, total

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            collector[0] = time.process_time()
        else:
            collector[1] += time.process_time() - collector[0]

    gc.callbacks.append(on_gc)
    for _ in range(3):
        await call()
    cpus: list[float] = []
    gcs: list[float] = []
    for _ in range(args.reps):
        go = anyio.Event()

        async def one(go: anyio.Event) -> None:
            await go.wait()
            await call()

        if args.no_gc:
            gc.disable()
        collector[1] = 0.0
        cpu0 = time.process_time()
        async with anyio.create_task_group() as tg:
            for _ in range(args.count):
                tg.start_soon(one, go)
            await anyio.lowlevel.checkpoint()
            go.set()
        cpus.append(time.process_time() - cpu0)
        gcs.append(collector[1])
        gc.enable()
    gc.callbacks.remove(on_gc)
    print(
        f"{args.client}: {args.count} calls of {args.n} rounds, {args.reps} bursts: "
        f"CPU per burst median {statistics.median(cpus):.3f} s (min {min(cpus):.3f}), "
        f"collector {statistics.median(gcs):.3f} s"
    )


async def _raw(args: argparse.Namespace) -> None:
    from bench.servers.mrtr_server import build_server
    from mrtr.types import MODERN_PROTOCOL_VERSIONS

    meta = {"io.modelcontextprotocol/protocolVersion": max(MODERN_PROTOCOL_VERSIONS), **_META}
    waiting: dict[int, list[Any]] = {}
    next_id = [0]
    async with build_server().client_transport() as transport, anyio.create_task_group() as tg:

        async def read() -> None:
            while True:
                message: Any = await transport.receive()
                slot = waiting.pop(message["id"])
                slot[1] = message["result"]
                slot[0].set()

        async def request(params: dict[str, Any]) -> Any:
            next_id[0] += 1
            slot: list[Any] = [anyio.Event(), None]
            waiting[next_id[0]] = slot
            message = {"jsonrpc": "2.0", "id": next_id[0], "method": "tools/call"}
            await transport.send({**message, "params": params})
            await slot[0].wait()
            return slot[1]

        async def call() -> None:
            params = {"name": "rounds", "arguments": {"n": args.n}, "_meta": meta}
            result = await request(params)
            while result.get("resultType") == "input_required":
                (key,) = result["inputRequests"]
                answer = {key: {"action": "accept", "content": {"ok": True}}}
                state = result["requestState"]
                result = await request({**params, "inputResponses": answer, "requestState": state})

        tg.start_soon(read)
        await _bursts(call, args)
        tg.cancel_scope.cancel()


async def _library(args: argparse.Namespace) -> None:
    async with open_client(args.client, "memory") as client:

        async def call() -> None:
            await client.call_tool("rounds", {"n": args.n})

        await _bursts(call, args)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.burst")
    parser.add_argument("--client", default="mrtr", choices=["mrtr", "raw", "official"])
    parser.add_argument("--n", type=int, default=3, help="rounds per call")
    parser.add_argument("--count", type=int, default=1000, help="concurrent calls")
    parser.add_argument("--reps", type=int, default=5, help="bursts")
    parser.add_argument("--no-gc", action="store_true", help="collector off during bursts")
    args = parser.parse_args()
    anyio.run(_raw if args.client == "raw" else _library, args)


if __name__ == "__main__":
    main()
