"""examples/fleet: haproxy in front of three instances, Redis, two workers; a chaos run.

The short form of the chaos run (60 calls, a quarter of them with the official client, a
random instance and a random worker killed with SIGKILL every two seconds, each
restarted, and a new key rolled through its three phases mid-run): nothing is lost, no
effect runs twice, no answer is applied twice, no call is left in doubt without its
client being told. An instance sent SIGTERM mid-leg drains: ``/readyz`` turns 503 while
it still listens, the leg is answered, then it exits. The official client, by its manual
loop, asks again for a lost answer and gets it. Needs Debian's ``haproxy`` and
``redis-server``; without them the tests are skipped, saying so, unless ``CI`` is set:
then they fail. The long form: ``python -m bench.fleet_chaos chaos``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "fleet" / "fleet.py"
BOUND = 60.0  # generous: the machine may be loaded


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("example_fleet", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve names through it
    spec.loader.exec_module(module)
    return module


def needs(*binaries: str) -> None:
    for binary in binaries:
        if shutil.which(binary) is None:
            message = f"{binary} is not installed (apt-get install -y {binary})"
            if os.environ.get("CI"):
                pytest.fail(f"{message}; CI must run the fleet test")
            pytest.skip(message)


def test_a_chaos_run_on_the_fleet_loses_nothing_and_runs_no_effect_twice() -> None:
    needs("haproxy", "redis-server")
    fleet_module = load()
    # a leg whose instance died is taken over after 1 s (well within the 3 s ttl)
    with fleet_module.Fleet(lease=1.5, ttl=3.0, leg_lease=1.0) as fleet:
        report = anyio.run(
            lambda: fleet_module.chaos(
                fleet,
                60,
                seed=39,
                rotate=True,
                rotate_at=(0.1, 0.35),
                gates=(0.25, 0.5, 0.75),
                official_every=2,
            )
        )
    # a string, so that a failure shows all of it (errors and timeline), not a clipped repr
    summary = json.dumps({**report.as_dict(), "timeline": report.timeline}, indent=1, default=str)
    assert report.lost == 0, summary
    assert report.untyped == 0, summary
    assert report.effects_twice == 0, summary
    assert report.applied_twice == 0, summary
    # a kill -9 between an effect and its stored answer: the re-sent leg is taken over
    # by another instance past its lease, the paid effect skipped (its ctx.once mark was
    # stored first), and the call completes: none is left in doubt
    assert report.in_doubt == 0, summary
    assert report.in_doubt_untold == 0, summary
    assert report.completed + report.failed_typed == 60, summary
    assert report.official_calls == 15, summary
    assert report.instance_kills >= 1 and report.worker_kills >= 1, summary
    assert report.rotation_phases == 3, summary
    assert report.rotation_calls_ended[-1] < 60, summary  # the old key retired mid-run
    instances = [name for name in report.spread if name.startswith("i")]
    workers = [name for name in report.spread if name.startswith("w")]
    assert len(instances) >= 2 and workers, summary  # legs spread; workers ran the tasks


async def until(check: Callable[[], Any | Awaitable[Any]]) -> Any:
    """Poll ``check()`` (sync or async) until it returns something true, within `BOUND`."""
    with anyio.fail_after(BOUND):
        while True:
            value = check()
            if isinstance(value, Awaitable):
                value = await value
            if value:
                return value
            await anyio.sleep(0.02)


def test_an_instance_sent_sigterm_mid_leg_drains_and_answers_the_leg() -> None:
    needs("haproxy", "redis-server")
    import redis

    from mrtr import Client
    from mrtr.types import ElicitResult

    fleet_module = load()

    async def confirm(ctx: Any, params: Any) -> Any:
        return ElicitResult(action="accept", content={"ok": True})

    async def transfer(fleet: Any, call_id: str, answers: list[str]) -> None:
        async with Client(fleet.url, elicitation_callback=confirm) as client:
            result = await client.call_tool("transfer", {"call_id": call_id, "amount": 5})
        answers.append(str(getattr(result.content[0], "text", "")))

    with fleet_module.Fleet(workers=0, gated=True) as fleet:
        store = redis.Redis.from_url(fleet.redis_url, socket_timeout=10, decode_responses=True)
        prefix = fleet.prefix

        async def main() -> tuple[str, str, Any]:
            held: list[str] = []
            during: list[str] = []
            async with anyio.create_task_group() as group:
                group.start_soon(transfer, fleet, "held", held)
                name = await until(lambda: store.get(f"{prefix}:working:held"))  # mid-leg
                i = int(name.removeprefix("i"))
                process, port = fleet.instance_process(i), fleet.instance_port(i)
                process.send_signal(signal.SIGTERM)

                async def draining() -> bool:
                    status = await anyio.to_thread.run_sync(fleet_module.readiness, port)
                    return bool(status == 503)  # still listening, out of the balancer

                await until(draining)
                assert process.poll() is None  # still serving the leg in flight
                store.set(f"{prefix}:gate:during", 1)
                with anyio.fail_after(BOUND):  # the fleet answers other calls meanwhile
                    await transfer(fleet, "during", during)
                store.set(f"{prefix}:gate:held", 1)
            assert during and during[0].endswith("transferred 5"), during
            return name, held[0], process

        try:
            name, answer, process = anyio.run(main)
            assert answer == f"{name}: transferred 5"  # the draining instance answered it
            # drained, then stopped by itself (uvicorn re-raises the SIGTERM it caught)
            assert process.wait(timeout=BOUND) in (0, -signal.SIGTERM)
            assert int(store.get(f"{prefix}:effects:held") or 0) == 1
        finally:
            store.close()


def test_the_official_client_asks_again_for_a_lost_answer_and_the_effect_runs_once() -> None:
    """Interop: the official client's manual loop re-sends the paying leg, on any instance."""
    needs("haproxy", "redis-server")
    import redis
    from mcp import Client as OfficialClient
    from mcp.types import ElicitResult, InputRequiredResult

    fleet_module = load()

    async def confirm(ctx: Any, params: Any) -> Any:
        return ElicitResult(action="accept", content={"ok": True})

    callback: Any = confirm
    arguments: dict[str, Any] = {"call_id": "lost", "amount": 5}

    with fleet_module.Fleet(workers=0, gated=True) as fleet:
        store = redis.Redis.from_url(fleet.redis_url, socket_timeout=10, decode_responses=True)
        prefix = fleet.prefix

        async def leg(answers: Any, state: str | None, patience: float = BOUND) -> Any:
            async with OfficialClient(
                fleet.url, elicitation_callback=callback, read_timeout_seconds=patience
            ) as client:
                return await client.session.call_tool(
                    "transfer",
                    arguments,
                    input_responses=answers,
                    request_state=state,
                    allow_input_required=True,
                )

        async def resend(answers: Any, state: str | None) -> Any:
            try:
                return await leg(answers, state)
            except Exception as exc:
                error = fleet_module.unwrap(exc)  # its errors come in exception groups
                assert getattr(error, "data", {}).get("reason") == "leg_running", exc
                return error

        async def main() -> str:
            first = await leg(None, None)
            assert isinstance(first, InputRequiredResult)
            assert (first.meta or {}).get("io.mrtr/replayable") is True  # may be re-sent
            answers = {
                key: ElicitResult(action="accept", content={"ok": True})
                for key in first.input_requests or {}
            }
            # the paying leg waits at the gate; the client stops waiting: its answer is lost
            with pytest.raises(Exception) as lost:
                await leg(answers, first.request_state, patience=5.0)
            assert "timed out" in repr(lost.value), lost.value
            await until(lambda: store.get(f"{prefix}:working:lost"))
            running = await resend(answers, first.request_state)
            assert getattr(running, "data", {}).get("retryAfterMs", 0) > 0  # still running
            store.set(f"{prefix}:gate:lost", 1)

            async def answered() -> Any:
                result = await resend(answers, first.request_state)
                return None if isinstance(result, BaseException) else result

            result = await until(answered)  # the kept answer, from whichever instance
            return str(result.content[0].text)

        try:
            text = anyio.run(main)
            assert text.endswith(": transferred 5"), text
            assert store.get(f"{prefix}:effects:lost") == "1"  # paid once
            assert store.get(f"{prefix}:applied:lost:0") == "1"  # the answer applied once
        finally:
            store.close()


def test_an_instance_killed_after_paying_is_taken_over_and_the_call_completes() -> None:
    """kill -9 between the effect and the answer: the leg finishes elsewhere, paid once."""
    needs("haproxy", "redis-server")
    import redis

    from mrtr import Client
    from mrtr.types import ElicitResult

    fleet_module = load()

    async def confirm(ctx: Any, params: Any) -> Any:
        return ElicitResult(action="accept", content={"ok": True})

    with fleet_module.Fleet(workers=0, gated=True, leg_lease=1.0) as fleet:
        store = redis.Redis.from_url(fleet.redis_url, socket_timeout=10, decode_responses=True)
        prefix = fleet.prefix
        store.set(f"{prefix}:gate:dies", 1)  # no wait before paying
        store.set(f"{prefix}:hold:dies", 1)  # a wait after paying: the instance dies there

        async def main() -> tuple[str, str]:
            answers: list[str] = []

            async def transfer() -> None:
                async with Client(
                    fleet.url, elicitation_callback=confirm, max_leg_resends=40
                ) as client:
                    result = await client.call_tool("transfer", {"call_id": "dies", "amount": 5})
                answers.append(str(getattr(result.content[0], "text", "")))

            with anyio.fail_after(BOUND):
                async with anyio.create_task_group() as group:
                    group.start_soon(transfer)
                    payer = await until(lambda: store.lindex(f"{prefix}:effected-by:dies", 0))
                    fleet.kill_instance(int(payer.removeprefix("i")))  # paid, not answered
            return payer, answers[0]

        try:
            payer, answer = anyio.run(main)
            assert answer.endswith(": transferred 5") and not answer.startswith(payer), answer
            assert store.get(f"{prefix}:effects:dies") == "1"  # paid once
            assert store.get(f"{prefix}:applied:dies:0") == "1"  # applied once
        finally:
            store.close()
