"""A recorded call, exported: a JSON transcript, and a pytest module that replays it.

The replay matches rounds by their lineage and order, not by raw parameters: a retry
carries new answers and a new ``requestState``, so the answer to round k's key K is the
one recorded for round k's K (a key asked again later gets its later answers in order).
For an mrtr server reached in process (``module:app``) the module drives it with the
server testing kit's `ScriptedClient`; for any other server it drives a `Client` over
the same stdio command or URL with callbacks keyed by round and key. Both check that the
same keys are asked in the same rounds and that the call ends the same way.
"""

from __future__ import annotations

import datetime
import json
import pprint
import re
from collections.abc import Mapping
from typing import Any

from mrtr.inspect._record import CallRecord

__all__ = ["FORMAT", "pytest_module", "transcript"]

FORMAT = "mrtr.inspect.transcript/1"


def transcript(
    call: CallRecord, server: Mapping[str, Any], source: Mapping[str, Any]
) -> dict[str, Any]:
    """The call as a JSON document: who, what, each round's questions and answers, the end."""
    data = call.to_json()
    return {
        "format": FORMAT,
        "recorded": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "server": dict(server),
        "source": dict(source),
        "call": {"method": call.method, "name": call.name, "arguments": data["arguments"]},
        "rounds": data["rounds"],
        "backchannel": data["backchannel"],
        "status": data["status"],
        "result": data["result"],
        "error": data["error"],
    }


def _literal(value: Any) -> str:
    """A Python literal for a JSON value (``true`` becomes ``True``...); int keys stay ints."""
    if isinstance(value, dict) and all(isinstance(k, int) for k in value):
        plain: Any = {k: json.loads(json.dumps(v)) for k, v in value.items()}
    else:
        plain = json.loads(json.dumps(value))
    return pprint.pformat(plain, width=88, sort_dicts=False)


def _answers_by_key(rounds: list[dict[str, Any]]) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for record in rounds:
        for key, answer in (record.get("answers") or {}).items():
            found.setdefault(key, []).append(answer)
    return found


def _answers_by_round(rounds: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """What answered round k's questions (sent with round k+1), by k."""
    return {
        int(record["round"]) - 1: dict(record["answers"])
        for record in rounds
        if record.get("answers")
    }


def _by_message(data: Mapping[str, Any]) -> dict[str, Any]:
    """A 2025-11-25 call's back-channel answers, by the exact message they answered.

    The back-channel has no keys: a replay (in either era) finds each answer by the
    question's message instead.
    """
    found: dict[str, Any] = {}
    for entry in data.get("backchannel") or []:
        message = (entry.get("params") or {}).get("message")
        if entry.get("method") == "elicitation/create" and isinstance(message, str):
            found[f"^{re.escape(message)}$"] = entry.get("answer")
    return found


def _ending(data: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of the end that a replay must reproduce."""
    result = data.get("result")
    if isinstance(result, dict):
        kept = {k: result[k] for k in ("content", "structuredContent", "isError", "messages",
                                       "contents") if k in result}  # fmt: skip
        return {"result": kept}
    error = data.get("error") or {}
    return {"error": {"code": error.get("code"), "type": error.get("type")}}


def pytest_module(data: Mapping[str, Any]) -> str:
    """A pytest module that replays the transcript `data` and checks it ends the same way."""
    source = data.get("source") or {}
    if source.get("kind") == "app":
        return _scripted_module(data, source)
    return _client_module(data, source)


def _header(data: Mapping[str, Any]) -> list[str]:
    call = data["call"]
    asked = [r["keys"] for r in data["rounds"]]
    # what the server chose goes in as repr() in comments only: repr never holds a newline
    return [
        '"""Replay of a call recorded by `mrtr inspect`.',
        "",
        "Answers are matched by round and key (a key asked again takes its answers in order),",
        'never by the raw request: each retry carries a new requestState."""',
        "",
        f"# call: {call['method']} {call['name']!r}",
        f"# recorded {str(data.get('recorded', ''))!r}: {len(asked)} round(s), keys {asked!r}",
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any",
        "",
        "import pytest",
        "",
    ]


_ASYNCIO_ONLY = [
    "@pytest.fixture",
    "def anyio_backend() -> str:",
    '    return "asyncio"',
    "",
    "",
]
"""The fixture every exported test module carries: it replays on asyncio only."""


def _call_form(call: Mapping[str, Any]) -> tuple[str, str]:
    """The client method a recorded call replays with, and its arguments as source."""
    method = {"tools/call": "call_tool", "prompts/get": "get_prompt",
              "resources/read": "read_resource"}[call["method"]]  # fmt: skip
    if method == "read_resource":
        return method, repr(call["name"])
    return method, f"{call['name']!r}, {_literal(call['arguments'])}"


def _scripted_module(data: Mapping[str, Any], source: Mapping[str, Any]) -> str:
    call = data["call"]
    asked = [list(r["keys"]) for r in data["rounds"]]
    by_key = _answers_by_key(data["rounds"])
    method, args = _call_form(call)
    ending = _ending(data)
    lines = _header(data)
    lines += [
        "from mrtr.server import Answers",
        f"from {source['module']} import {source['attr']} as app",
        "",
        "pytestmark = pytest.mark.anyio",
        "",
        f"RECORDED: dict[str, list[Any]] = {_literal(by_key)}",
        '"""The answers sent, by key, in the order the rounds asked."""',
        f"BY_MESSAGE: dict[str, Any] = {_literal(_by_message(data))}",
        '"""Back-channel answers (a 2025-11-25 call), by the message they answered."""',
        f"ASKED = {_literal(asked)}",
        f"ENDING = {_literal(ending)}",
        "",
        "",
        "def in_order(answers: list[Any]) -> Any:",
        '    """Each time the key is asked, its next recorded answer."""',
        "    queue = list(answers)",
        "    return lambda request: queue.pop(0)",
        "",
        "",
        *_ASYNCIO_ONLY,
        f"async def test_replay_{_name(call['name'])}() -> None:",
        "    answers = Answers(",
        "        {key: in_order(list(seq)) for key, seq in RECORDED.items()},",
        "        by_message=BY_MESSAGE,",
        "    )",
        "    async with app.test_client(answers=answers) as client:",
        f"        transcript = await client.{method}({args})",
        "    if not BY_MESSAGE:  # a back-channel recording had one round; the replay has more",
        "        assert transcript.asked == ASKED",
        '    if "result" in ENDING:',
        "        got = transcript.result or {}",
        '        assert {k: got.get(k) for k in ENDING["result"]} == ENDING["result"]',
        "    else:",
        "        assert transcript.error is not None",
        '        assert transcript.error.get("code") == ENDING["error"]["code"]',
        "",
    ]
    return "\n".join(lines)


def _client_module(data: Mapping[str, Any], source: Mapping[str, Any]) -> str:
    call = data["call"]
    asked = [list(r["keys"]) for r in data["rounds"]]
    if source.get("kind") == "stdio":
        command = source["command"]
        target = f"StdioServerParameters({command[0]!r}, {_literal(command[1:])})"
        imports = "from mrtr.transports import StdioServerParameters"
    else:
        target = repr(source.get("url", "http://127.0.0.1:8000/mcp"))
        imports = "# a URL target: secrets in it were redacted; put them back in TARGET"
    method, args = _call_form(call)
    lines = _header(data)
    lines += [
        "from mrtr import Client, MCPError",
        imports,
        "",
        "pytestmark = pytest.mark.anyio",
        "",
        f"TARGET = {target}",
        f"RECORDED: dict[int, dict[str, Any]] = {_literal(_answers_by_round(data['rounds']))}",
        '"""The answers sent, by the round that asked (1 = the first request) and key."""',
        f"ASKED = {_literal(asked)}",
        f"ENDING = {_literal(_ending(data))}",
        "",
        "",
        *_ASYNCIO_ONLY,
        "async def answer(ctx: Any, params: Any = None) -> Any:",
        '    """The recorded answer to this round\'s key (lineage and order, not the request)."""',
        "    return RECORDED[ctx.round][ctx.key]",
        "",
        "",
        f"async def test_replay_{_name(call['name'])}() -> None:",
        "    rounds: list[list[str]] = []",
        "    client = Client(TARGET, elicitation_callback=answer, elicitation_url_mode=True,",
        "                    sampling_callback=answer, list_roots_callback=answer,",
        "                    on_round=lambda event: rounds.append(list(event.keys)))",
        "    async with client:",
        "        try:",
        f"            result = (await client.{method}({args})).to_wire()",
        "        except MCPError as refused:",
        '            assert "error" in ENDING, refused',
        '            assert refused.code == ENDING["error"]["code"]',
        "            return",
        "    assert rounds + [[]] == ASKED",
        '    assert {k: result.get(k) for k in ENDING["result"]} == ENDING["result"]',
        "",
    ]
    return "\n".join(lines)


def _name(text: str) -> str:
    cleaned = "".join(c if c.isalnum() else "_" for c in text.lower()).strip("_")
    return cleaned[:40] or "call"
