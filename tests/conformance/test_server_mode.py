"""The server-mode runner's verdicts and the conformance server's answers (no suite)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from mrtr.server._core._connection import ServerConnection
from tests.conformance import run_server
from tests.conformance.server import build_server
from tests.server._servers import request

MODERN = "2026-07-28"
NAME = {"action": "accept", "content": {"name": "Ada"}}


class Recorder:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def __call__(self, message: dict[str, Any]) -> None:
        self.sent.append(message)


async def ask(
    conn: ServerConnection, message: dict[str, Any], emit: Recorder | None = None
) -> dict[str, Any]:
    response = await conn.handle(message, emit=emit or Recorder())
    assert response is not None
    return response


def call(name: str, **params: Any) -> dict[str, Any]:
    caps = params.pop("caps", None)
    extra = params.pop("meta", {})
    return request("tools/call", {"name": name, "arguments": {}, **params}, caps=caps, **extra)


# --- the runner ---------------------------------------------------------------------------


def test_every_expected_server_failure_gives_its_reason() -> None:
    names = run_server.read_expected(run_server.DEFAULT_EXPECTED)
    # the server talks back (issue #25): nothing is excused but the scenario the suite
    # itself skips (no check can pass)
    assert names == {"tasks-status-notifications"}
    # what the 2026-07-28 server must pass is never excused
    for must_pass in ("server-stateless", "dns-rebinding-protection", "http-header-validation"):
        assert must_pass not in names
    assert not any(name.startswith("input-required-result") for name in names)


def test_a_line_without_a_reason_is_refused(tmp_path: Path) -> None:
    listed = tmp_path / "expected.txt"
    listed.write_text("# header\nping  # why\ncaching\n")
    with pytest.raises(ValueError, match="caching lists no reason"):
        run_server.read_expected(listed)


def test_collect_strips_the_server_prefix_and_judges(tmp_path: Path) -> None:
    for name, status in (("ping", "SUCCESS"), ("caching", "FAILURE")):
        folder = tmp_path / f"server-{name}-2026-11-29T10-25-45-817Z"
        folder.mkdir()
        check = {"status": status, "name": name, "errorMessage": f"{name} said {status}"}
        (folder / "checks.json").write_text(json.dumps([check]))
    results = {r.name: r for r in run_server.collect(tmp_path, ["ping", "caching", "gone"], "")}
    assert results["ping"].passed
    assert not results["caching"].passed
    assert any("caching said FAILURE" in reason for reason in results["caching"].reasons)
    assert not results["gone"].passed


def test_the_server_process_prints_a_loopback_url_and_stops(tmp_path: Path) -> None:
    script = Path(run_server.__file__).with_name("server.py")
    server = run_server.ServerProcess(f"{sys.executable} {script}", tmp_path / "err.log")
    url = server.start()
    try:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        meta = request("server/discover")["params"]["_meta"]
        body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}
        headers = {
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": MODERN,
            "mcp-method": "server/discover",
        }
        answer = httpx.post(url, json=body, headers=headers, timeout=60).json()
        assert answer["result"]["capabilities"]["completions"] == {}
    finally:
        assert server.stop() is not None
    assert server.proc is not None and server.proc.poll() is not None


def test_a_server_that_prints_no_loopback_url_is_refused(tmp_path: Path) -> None:
    command = f"{sys.executable} -c print('http://0.0.0.0:1/mcp')"
    server = run_server.ServerProcess(command, tmp_path / "err.log")
    with pytest.raises(RuntimeError, match=re.escape("not an http://127.0.0.1 URL")):
        server.start()
    assert server.proc is not None and server.proc.poll() is not None


# --- the conformance server ---------------------------------------------------------------


@pytest.mark.anyio
async def test_multi_round_keeps_its_state_between_rounds() -> None:
    conn = build_server().connection()
    first = (await ask(conn, call("test_input_required_result_multi_round")))["result"]
    assert list(first["inputRequests"]) == ["step1"]
    second = (
        await ask(
            conn,
            call(
                "test_input_required_result_multi_round",
                inputResponses={"step1": NAME},
                requestState=first["requestState"],
            ),
        )
    )["result"]
    assert list(second["inputRequests"]) == ["step2"]
    colour = {"action": "accept", "content": {"color": "teal"}}
    done = (
        await ask(
            conn,
            call(
                "test_input_required_result_multi_round",
                inputResponses={"step2": colour},
                requestState=second["requestState"],
            ),
        )
    )["result"]
    assert done["content"][0]["text"] == "Multi-round complete for Ada who likes teal"


@pytest.mark.anyio
async def test_a_tool_needing_sampling_is_refused_to_a_client_without_it() -> None:
    conn = build_server().connection()
    error = (await ask(conn, call("test_missing_capability", caps={})))["error"]
    assert error["code"] == -32021
    assert error["data"]["requiredCapabilities"] == {"sampling": {}}
    asked = (await ask(conn, call("test_missing_capability", caps={"sampling": {}})))["result"]
    assert asked["resultType"] == "input_required"


@pytest.mark.anyio
async def test_the_logging_tool_logs_only_at_a_requested_level() -> None:
    conn = build_server().connection()
    quiet = Recorder()
    await ask(conn, call("test_logging_tool"), quiet)
    assert quiet.sent == []
    loud = Recorder()
    level = {"io.modelcontextprotocol/logLevel": "info"}
    await ask(conn, call("test_logging_tool", meta=level), loud)
    assert [m["method"] for m in loud.sent] == ["notifications/message"] * 3


@pytest.mark.anyio
async def test_unknown_resources_name_the_uri_and_templates_substitute() -> None:
    conn = build_server().connection()
    missing = request("resources/read", {"uri": "test://nowhere"})
    error = (await ask(conn, missing))["error"]
    assert error["code"] == -32602 and error["data"] == {"uri": "test://nowhere"}
    read = request("resources/read", {"uri": "test://template/42/data"})
    text = (await ask(conn, read))["result"]["contents"][0]["text"]
    assert json.loads(text)["id"] == "42"


@pytest.mark.anyio
async def test_legacy_sessions_see_no_tool_that_only_asks() -> None:
    conn = build_server().connection()
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"},
    }
    await ask(conn, request("initialize", init, modern=False))
    tools = (await ask(conn, request("tools/list", modern=False)))["result"]["tools"]
    names = {tool["name"] for tool in tools}
    assert "test_simple_text" in names
    assert not any("input_required" in name for name in names)


# --- the official client (mcp==2.3.0) against the conformance server ----------------------


async def _official_client_session(url: str, mode: str) -> None:
    import mcp  # a test dependency: missing, the interop run fails rather than skips
    from mcp import types as mt

    async def on_elicit(context: Any, params: Any) -> Any:
        return mt.ElicitResult(action="accept", content={"name": "Ada", "color": "teal"})

    async with mcp.Client(url, elicitation_callback=on_elicit, mode=mode) as client:
        ref = mt.PromptReference(type="ref/prompt", name="test_prompt_with_arguments")
        done = await client.complete(ref, {"name": "arg1", "value": "al"})
        assert done.completion.values == ["alpha"]
        # once listed, the official client mirrors the argument into Mcp-Param-Region
        # (2026-07-28); the server checks the header against the body before the tool runs
        assert "test_mirrored_header" in [tool.name for tool in (await client.list_tools()).tools]
        mirrored = await client.call_tool("test_mirrored_header", {"region": "zürich"})
        assert mirrored.content[0].text == "region: zürich"  # type: ignore[union-attr]
        if mode != "legacy":
            rounds = await client.call_tool("test_input_required_result_multi_round", {})
            text = rounds.content[0].text  # type: ignore[union-attr]
            assert text == "Multi-round complete for Ada who likes teal"


@pytest.mark.anyio
@pytest.mark.interop
# Under trio, the official SDK's SSE reader leaves httpx async generators for the garbage
# collector (its bug, not ours); pytest would turn that into a failure.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_the_official_client_completes_and_mirrors_headers(tmp_path: Path) -> None:
    import anyio

    script = Path(run_server.__file__).with_name("server.py")
    server = run_server.ServerProcess(f"{sys.executable} {script}", tmp_path / "err.log")
    url = server.start()
    try:
        with anyio.fail_after(90):
            await _official_client_session(url, "auto")
            await _official_client_session(url, "legacy")
    finally:
        server.stop()


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_our_client_completes_against_the_conformance_server(mode: str) -> None:
    import anyio

    from mrtr import Client

    async with Client(build_server(), mode=mode) as client:
        with anyio.fail_after(60):
            ref = {"type": "ref/prompt", "name": "test_prompt_with_arguments"}
            done = await client.complete(ref, {"name": "arg2", "value": "d"})
    assert done.completion.values == ["delta"]


# --- the MCPServer conformance server -----------------------------------------------------


@pytest.mark.anyio
async def test_the_mcpserver_conformance_server_asks_by_the_scenario_keys() -> None:
    from tests.conformance.mcpserver_server import build

    conn = build().connection()
    multi = await ask(conn, call("test_input_required_result_multiple_inputs"))
    assert list(multi["result"]["inputRequests"]) == ["user_name", "greeting", "client_roots"]
    caps = await ask(conn, call("test_input_required_result_capabilities", caps={"sampling": {}}))
    assert list(caps["result"]["inputRequests"]) == ["sample_input"]
    # nothing excused but the scenario the suite skips
    assert run_server.read_expected(HERE_MCPSERVER_EXPECTED) == {"tasks-status-notifications"}


@pytest.mark.anyio
async def test_the_mcpserver_elicitation_tool_reads_answers_by_key() -> None:
    # the manual form: an answer on a first call (no requestState) completes, extra keys
    # are ignored, a wrong key or a bad answer is asked again (ignore-extra-params,
    # missing-response-rerequests, validate-input)
    from tests.conformance.mcpserver_server import build

    conn = build().connection()
    name = "test_input_required_result_elicitation"
    first = await ask(conn, call(name))
    (key,) = first["result"]["inputRequests"]
    asked = first["result"]["inputRequests"][key]["params"]
    assert key == "user_name" and asked["message"] == "What is your name?"
    assert asked["requestedSchema"]["required"] == ["name"]
    extra = {"unknown_extra_key": {"action": "accept", "content": {"foo": "bar"}}}
    done = await ask(conn, call(name, inputResponses={"user_name": NAME, **extra}))
    assert done["result"]["content"][0]["text"] == "Hello, Ada!"
    for wrong in (
        {"wrong_key": NAME},
        {"user_name": {"action": "accept", "content": {"nom": "Ada"}}},
        {"user_name": {"action": "decline"}},
    ):
        again = await ask(conn, call(name, inputResponses=wrong))
        assert list(again["result"]["inputRequests"]) == ["user_name"]


HERE_MCPSERVER_EXPECTED = Path(__file__).resolve().parent / "expected-failures-mcpserver.txt"


def test_the_bare_leg_runs_without_a_version_filter() -> None:
    # only the bare leg reaches the extension scenarios (tasks-*), so it is run too
    assert run_server.BARE in run_server.SERVER_VERSIONS
    assert run_server._version_args(run_server.BARE) == []
    assert run_server._version_args("2026-07-28") == ["--spec-version", "2026-07-28"]
