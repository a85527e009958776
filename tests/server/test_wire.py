"""The sans-IO pieces behind the hostile-peer defences: strict JSON, Host and Origin rules."""

from __future__ import annotations

import json
import logging

import pytest

from mrtr.server._core._jsonrpc import Refusal, decode_incoming, encode_outgoing, response_id
from mrtr.server._defaults import DEFAULT_MAX_JSON_DEPTH
from mrtr.server._http._origin import OriginPolicy, split_host


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (1, 1),
        ("a", "a"),
        (True, None),
        (1.0, None),
        (float("nan"), None),
        ({}, None),
        ("\ud800", None),
    ],
)
def test_response_id(raw: object, expected: object) -> None:
    assert response_id(raw) == expected


def test_decode_accepts_paired_surrogates_and_refuses_lone_ones() -> None:
    assert decode_incoming(b'{"id":1,"x":"\\ud83d\\ude00"}') == {"id": 1, "x": "\U0001f600"}
    lone_key = decode_incoming(b'{"id":"a","\\udc00":1}')
    assert isinstance(lone_key, Refusal) and lone_key.request_id == "a"
    assert lone_key.error.code == -32600
    lone_id = decode_incoming(b'{"id":"\\ud800","method":"ping"}')
    assert isinstance(lone_id, Refusal) and lone_id.response()["id"] is None
    not_object = decode_incoming(b"[1]")
    assert isinstance(not_object, Refusal) and not_object.error.code == -32600
    bad_utf8 = decode_incoming(b'{"x":"\xed\xa0\x80"}')
    assert isinstance(bad_utf8, Refusal) and bad_utf8.error.code == -32700


def _nested(depth: int, *, wide: int = 0) -> bytes:
    """A request whose ``params`` make the whole message nest `depth` deep."""
    siblings = b'"s":[1],' * wide  # containers beside the path: more brackets, no depth
    inner = b'{"a":' * (depth - 2) + b"1" + b"}" * (depth - 2)
    head = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{'
    return head + siblings + b'"p":' + inner + b"}}"


@pytest.mark.parametrize("max_depth", [4, 64, DEFAULT_MAX_JSON_DEPTH])
def test_decode_refuses_nesting_over_the_cap_as_a_parse_error(max_depth: int) -> None:
    at_cap = decode_incoming(_nested(max_depth, wide=max_depth), max_depth=max_depth)
    assert isinstance(at_cap, dict) and at_cap["id"] == 1
    over = decode_incoming(_nested(max_depth + 1), max_depth=max_depth)
    assert isinstance(over, Refusal) and over.request_id is None
    assert over.error.code == -32700 and f"over {max_depth} deep" in over.error.message


@pytest.mark.parametrize("depth", [DEFAULT_MAX_JSON_DEPTH + 1, 900, 5_000, 100_000])
def test_decode_refuses_the_same_depths_on_every_python(depth: int) -> None:
    # below the cap the parser never gives up, above it this one answer, whether this
    # Python's parser stops at 1,000, 1,500 or 10,000 levels
    refused = decode_incoming(_nested(depth))
    assert isinstance(refused, Refusal) and refused.error.code == -32700
    assert f"over {DEFAULT_MAX_JSON_DEPTH} deep" in refused.error.message


def test_brackets_inside_strings_are_not_nesting() -> None:
    text = "[" * 1000 + "{" * 1000
    message = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"t": text}})
    assert decode_incoming(message.encode(), max_depth=3) == json.loads(message)


def test_encode_replaces_an_unencodable_response_and_drops_a_notification(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger="mrtr.server"):
        response = encode_outgoing({"jsonrpc": "2.0", "id": 5, "result": {"x": float("inf")}})
        surrogate = encode_outgoing({"jsonrpc": "2.0", "id": 6, "result": {"x": "\udc00"}})
        note = encode_outgoing({"jsonrpc": "2.0", "method": "m", "params": {"x": float("nan")}})
    assert (
        response == b'{"jsonrpc":"2.0","id":5,"error":{"code":-32603,"message":"Internal error"}}'
    )
    assert surrogate is not None and b'"id":6' in surrogate and b"-32603" in surrogate
    assert note is None
    assert len(caplog.records) == 3


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("localhost", ("localhost", None)),
        ("LocalHost:8000", ("localhost", 8000)),
        ("[::1]:80", ("::1", 80)),
        ("[::1]", ("::1", None)),
        ("::1", None),
        ("a:b", None),
        ("a:", None),
        (":80", None),
        ("[::1", None),
        ("[::1]x", None),
        ("a:123456", None),
    ],
)
def test_split_host(value: str, expected: object) -> None:
    assert split_host(value) == expected


def test_default_policy_serves_this_machine_only() -> None:
    policy = OriginPolicy(allowed_hosts=(), allowed_origins=())
    assert policy.host_allowed("localhost:1234", None)
    assert policy.host_allowed("127.0.0.1", None)
    assert policy.host_allowed("[::1]:9", None)
    assert policy.host_allowed("10.0.0.5:8000", "10.0.0.5")  # the address it arrived at
    assert not policy.host_allowed("10.0.0.6:8000", "10.0.0.5")
    assert not policy.host_allowed("rebind.evil.example:8000", "127.0.0.1")
    assert not policy.host_allowed("localhost.evil.example", "127.0.0.1")
    assert not policy.host_allowed(None, "127.0.0.1")
    assert policy.origin_allowed(None, "localhost")
    assert policy.origin_allowed("http://localhost:3000", "127.0.0.1:8000")
    assert policy.origin_allowed("http://10.0.0.5:8000", "10.0.0.5:8000")  # same origin
    assert not policy.origin_allowed("http://rebind.evil.example:8000", "127.0.0.1:8000")
    assert not policy.origin_allowed("null", "127.0.0.1:8000")
    assert not policy.origin_allowed("file://localhost", "127.0.0.1:8000")
    assert not policy.origin_allowed("http://[bad", "127.0.0.1:8000")


def test_policy_knobs() -> None:
    policy = OriginPolicy(
        allowed_hosts=["mcp.example.com", "[2001:db8::1]:443"],
        allowed_origins=["https://App.example.com/"],
    )
    assert policy.host_allowed("MCP.example.com:1", None)
    assert policy.host_allowed("[2001:db8::1]:443", None)
    assert not policy.host_allowed("[2001:db8::1]:444", None)
    assert policy.origin_allowed("https://app.example.com", "mcp.example.com")
    assert not policy.origin_allowed("http://app.example.com", "mcp.example.com")
    anything = OriginPolicy(allowed_hosts=["*"], allowed_origins=["*"])
    assert anything.host_allowed(None, None) and anything.origin_allowed("null", None)
    with pytest.raises(ValueError, match="allowed_hosts"):
        OriginPolicy(allowed_hosts=["a:b:c"], allowed_origins=())
