"""A refused requestState explained out of process: the inspector is given the server's keys.

The reasons are checked one by one on states a real policy sealed (a fake clock), then
end to end: an mrtr server in its own process over HTTP on 127.0.0.1 with known keys,
and ``mrtr inspect URL --keys FILE`` in another, driven through the page's API.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mrtr import Client, PausedCall, SqlitePausedCallStore
from mrtr.errors import INVALID_REQUEST_STATE_MESSAGE
from mrtr.inspect._explain import StateExplainer, keys_from_file
from mrtr.server import RequestBinding, RequestStateSecurity
from tests.docs.cdp import Browser, required_chromium
from tests.helpers.launch import module_command, running

BOUND = 60.0
REPO = Path(__file__).resolve().parents[2]
KEY = "6b" * 32
OTHER_KEY = "9c" * 32


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def seal(
    policy: RequestStateSecurity,
    arguments: dict[str, Any],
    *,
    name: str = "deploy",
    audience: str = "keyed",
    principal: str | None = None,
) -> str:
    params = {"name": name, "arguments": arguments}
    binding = RequestBinding.of("tools/call", params)
    return policy.seal_state("s", binding=binding, principal=principal, audience=audience)


def retry(request_id: int, token: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": "deploy", "arguments": arguments, "requestState": token}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def refusal(request_id: int) -> dict[str, Any]:
    error = {"code": -32602, "message": INVALID_REQUEST_STATE_MESSAGE}
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def asked(request_id: int, token: str) -> dict[str, Any]:
    result = {"resultType": "input_required", "requestState": token}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def why(explainer: StateExplainer, token: str, arguments: dict[str, Any]) -> str | None:
    explainer.sent(retry(7, token, arguments))
    found = explainer.received(refusal(7))
    return None if found is None else found[1]


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def policy(clock: Clock) -> RequestStateSecurity:
    return RequestStateSecurity(keys=[bytes.fromhex(KEY)], ttl=30, clock=clock)


@pytest.fixture
def explainer(clock: Clock) -> StateExplainer:
    keys = keys_from_file(f"# the fleet's keys\nnow:{KEY}\n", source="keys")
    found = StateExplainer(keys, clock=clock)
    found.server_name = "keyed"
    return found


def test_expired_by_how_much(
    policy: RequestStateSecurity, explainer: StateExplainer, clock: Clock
) -> None:
    token = seal(policy, {"name": "api"})
    clock.now += 95.0
    assert why(explainer, token, {"name": "api"}) == "expired 65.0 s ago"


def test_bound_to_another_request_or_other_arguments(
    policy: RequestStateSecurity, explainer: StateExplainer
) -> None:
    other_tool = seal(policy, {"name": "api"}, name="undeploy")
    assert why(explainer, other_tool, {"name": "api"}) == (
        "bound to another request (tools/call 'undeploy')"
    )
    token = seal(policy, {"name": "api"})
    assert why(explainer, token, {"name": "billing"}) == (
        "bound to other arguments (minted for this request with different ones)"
    )


def test_another_audience_the_servers_name_or_the_one_given(
    policy: RequestStateSecurity, explainer: StateExplainer
) -> None:
    token = seal(policy, {"name": "api"}, audience="keyed-a")
    assert why(explainer, token, {"name": "api"}) == (
        "minted for another audience ('keyed-a', not 'keyed')"
    )
    explainer.audience = "keyed-a"
    assert str(why(explainer, token, {"name": "api"})).startswith("every claim holds")


def test_another_principal_than_the_one_this_connection_is(
    policy: RequestStateSecurity, explainer: StateExplainer
) -> None:
    # the server minted a state for this connection: its principal is alice's
    explainer.received(asked(1, seal(policy, {"name": "api"}, principal="alice")))
    token = seal(policy, {"name": "api"}, principal="bob")
    assert why(explainer, token, {"name": "api"}) == (
        "minted for another principal (not the one this connection is)"
    )


def test_already_used_by_this_client(clock: Clock, explainer: StateExplainer) -> None:
    once = RequestStateSecurity(keys=[bytes.fromhex(KEY)], ttl=30, clock=clock, single_use=True)
    token = seal(once, {"name": "api"})
    explainer.sent(retry(3, token, {"name": "api"}))
    assert explainer.received({"jsonrpc": "2.0", "id": 3, "result": {"content": []}}) is None
    assert why(explainer, token, {"name": "api"}) == (
        "already used (single-use; redeemed by this client's request 3)"
    )
    fresh = seal(once, {"name": "api"})
    assert why(explainer, fresh, {"name": "api"}) == (
        "single-use and otherwise valid: most likely already used elsewhere"
    )


def test_other_keys_and_other_errors(clock: Clock, explainer: StateExplainer) -> None:
    stranger = RequestStateSecurity(keys=[bytes.fromhex(OTHER_KEY)], ttl=30, clock=clock)
    assert why(explainer, seal(stranger, {"name": "api"}), {"name": "api"}) == (
        "not sealed under any of the given keys (another key ring, or altered)"
    )
    explainer.sent(retry(9, seal(stranger, {}), {}))
    other = {"jsonrpc": "2.0", "id": 9, "error": {"code": -32602, "message": "bad name"}}
    assert explainer.received(other) is None  # not the frozen refusal: nothing to say


def test_a_bad_keys_file_says_which_key_never_its_value() -> None:
    with pytest.raises(ValueError, match="key q3 is not hex") as raised:
        keys_from_file(f"{KEY}\nq3:zz{KEY}\n", source="--keys f")
    assert KEY not in str(raised.value)
    with pytest.raises(ValueError, match="unset or empty"):
        keys_from_file("# nothing\n", source="--keys f")


# -- end to end: the server and the inspector each in their own process -----------------


@contextlib.contextmanager
def keyed_server(name: str, clock_file: Path, *audience: str) -> Iterator[str]:
    env = {"MRTR_KEYS": f"now:{KEY}", "INSPECT_CLOCK_FILE": str(clock_file)}
    with running(module_command("tests.inspect.keyed_server", name, *audience), env=env) as url:
        yield url


class Page:
    """``mrtr inspect`` in its own process, reached through the page's API."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.base = url.split("/#", 1)[0]

    def api(self, path: str, body: Any = None) -> Any:
        headers = {"X-Inspect-Token": self.token, "Content-Type": "application/json"}
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, headers=headers)
        with urllib.request.urlopen(request, timeout=BOUND) as response:
            return json.loads(response.read())

    def until(self, ready: Any) -> dict[str, Any]:
        version = -1
        while True:
            state: dict[str, Any] = self.api(f"/api/state?since={version}")
            if ready(state):
                return state
            version = state["version"]


@contextlib.contextmanager
def inspecting(*args: str) -> Iterator[Page]:
    argv = [sys.executable, "-m", "mrtr", "inspect", *args, "--no-browser"]
    process = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = re.search(r" on (http://127\.0\.0\.1:\d+/#token=(\S+))$", line.strip())
        assert found is not None, line + process.stderr.read()
        yield Page(found[1], found[2])
    finally:
        process.terminate()
        process.communicate(timeout=BOUND)


def test_an_expired_state_is_explained_out_of_process(tmp_path: Path) -> None:
    binary = required_chromium()
    clock_file = tmp_path / "offset"
    clock_file.write_text("-100")  # the server mints as if 100 s ago: expired 70 s ago
    keys = tmp_path / "keys"
    keys.write_text(f"now:{KEY}\n")
    browser = Browser(binary, tmp_path / "profile", timeout=BOUND)
    try:
        with keyed_server("keyed", clock_file) as url, inspecting(url, "--keys", str(keys)) as page:
            browser.open(page.url)
            page.api("/api/call", {"kind": "tool", "name": "deploy", "arguments": {"name": "api"}})
            (question,) = page.until(lambda s: s["questions"])["questions"]
            clock_file.write_text("0")
            answer = {"question": question["id"], "action": "accept", "content": {"value": True}}
            page.api("/api/answer", answer)
            (call,) = page.until(lambda s: s["calls"][0]["status"] != "running")["calls"]
            shown = browser.wait_until("document.querySelector('.explain')?.textContent")
            browser.screenshot(tmp_path / "explained-with-keys.png")
    finally:
        browser.close()
    assert call["error"]["code"] == -32602  # the wire answer stays the frozen one
    assert call["error"]["explainedBy"] == "keys"
    assert call["rounds"][1]["ms"]["server"] > 0  # the refused retry took the server's time
    found = re.fullmatch(r"expired (\d+\.\d) s ago", call["error"]["explanation"])
    assert found is not None and 69.0 <= float(found[1]) < 70.0 + BOUND
    assert "decoded here with the server's keys" in shown


async def pause_on(url: str, store_file: Path, client_name: str = "pauser") -> str:
    """Pause a `deploy` call at its question, as the client `client_name`, into the store."""
    import mrtr
    from mrtr.types import Implementation

    async def later(ctx: Any, params: Any) -> Any:
        return mrtr.PAUSE

    store = SqlitePausedCallStore(store_file)
    me = Implementation(name=client_name, version="1")
    try:
        async with Client(url, elicitation_callback=later, client_info=me) as client:
            paused = await client.pause_call_tool("deploy", {"name": "api"})
            assert isinstance(paused, PausedCall)
            await store.put(paused)
            return paused.id
    finally:
        await store.aclose()


def resume_in_the_page(page: Page, paused_id: str) -> dict[str, Any]:
    """Answer the paused call's question in the page, resume it, and wait for its end."""
    page.until(lambda s: s["paused"])
    answer = {"id": paused_id, "key": "ask_ok", "action": "accept", "content": {"value": True}}
    assert page.api("/api/paused/answer", answer) == {"problems": []}
    page.api("/api/paused/resume", {"id": paused_id})
    state = page.until(lambda s: s["calls"] and s["calls"][0]["status"] != "running")
    (call,) = state["calls"]
    return dict(call)


def test_a_paused_call_resumed_on_another_instance_is_another_audience(tmp_path: Path) -> None:
    import anyio

    clock_file = tmp_path / "offset"
    clock_file.write_text("0")
    store_file = tmp_path / "paused.sqlite"
    keys = tmp_path / "keys"
    keys.write_text(f"{KEY}\n")
    # two instances of one server share the keys, but one was given its own audience:
    # a call paused on it and resumed on the other is refused, and the keys say why
    with (
        keyed_server("keyed", clock_file, "fleet-a") as url_a,
        keyed_server("keyed", clock_file, "fleet-b") as url_b,
    ):
        paused_id = anyio.run(pause_on, url_a, store_file)
        flags = ["--keys", str(keys), "--audience", "fleet-b", "--store", str(store_file)]
        with inspecting(url_b, *flags) as page:
            call = resume_in_the_page(page, paused_id)
    assert call["error"].get("code") == -32602, call["error"]
    assert call["error"]["explanation"] == "minted for another audience ('fleet-a', not 'fleet-b')"


def test_a_paused_call_resumed_by_another_principal(tmp_path: Path) -> None:
    import anyio

    clock_file = tmp_path / "offset"
    clock_file.write_text("0")
    store_file = tmp_path / "paused.sqlite"
    keys = tmp_path / "keys"
    keys.write_text(f"{KEY}\n")
    # the state is bound to the client that paused the call; the inspector is another
    # one and has seen no state minted for itself yet: every other claim holds
    with keyed_server("keyed", clock_file) as url:
        paused_id = anyio.run(pause_on, url, store_file, "alice")
        with inspecting(url, "--keys", str(keys), "--store", str(store_file)) as page:
            call = resume_in_the_page(page, paused_id)
    assert call["error"].get("code") == -32602, call["error"]
    assert call["error"]["explanation"] == (
        "bound to a principal, otherwise valid: most likely minted for another one"
    )
