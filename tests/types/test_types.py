from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

import mrtr.types as types
from mrtr._lazy import export_order
from mrtr.errors import InvalidInputResponseError, ProtocolError
from mrtr.types import (
    CallToolRequest,
    CallToolRequestParams,
    CallToolResult,
    ClientCapabilities,
    CompleteResult,
    CreateMessageRequest,
    CreateMessageResult,
    DiscoverResult,
    ElicitationCapability,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    EmptyResult,
    ErrorData,
    GetPromptResult,
    Implementation,
    InitializeRequest,
    InitializeRequestParams,
    InitializeResult,
    InputRequiredResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListRootsRequest,
    ListRootsResult,
    ListToolsResult,
    ReadResourceResult,
    Result,
    Root,
    TextContent,
    TextResourceContents,
    parse_result,
    validate_input_response,
)
from mrtr.types._jsonrpc import JSONRPCErrorResponse, JSONRPCResultResponse
from mrtr.types._parse import INPUT_REQUEST_ADAPTER, INPUT_RESPONSE_ADAPTER
from tests.helpers.schema import SPEC_DIR, validate_client_message

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
EXAMPLES = SPEC_DIR / MODERN / "examples"

# example directories the client has no use for: elicitation form-field schemas (kept as
# plain JSON Schema dicts, never modelled) and subscriptions/listen (not implemented)
NOT_USED = {
    "BooleanSchema",
    "NumberSchema",
    "StringSchema",
    "TitledMultiSelectEnumSchema",
    "TitledSingleSelectEnumSchema",
    "UntitledMultiSelectEnumSchema",
    "UntitledSingleSelectEnumSchema",
    "SubscriptionsAcknowledgedNotification",
    "SubscriptionsListenRequest",
    "SubscriptionsListenResult",
    "SubscriptionsListenResultResponse",
}

RESPONSE_METHODS = {
    "CallToolResultResponse": "tools/call",
    "CompleteResultResponse": "completion/complete",
    "DiscoverResultResponse": "server/discover",
    "GetPromptResultResponse": "prompts/get",
    "ListPromptsResultResponse": "prompts/list",
    "ListResourceTemplatesResultResponse": "resources/templates/list",
    "ListResourcesResultResponse": "resources/list",
    "ListToolsResultResponse": "tools/list",
    "ReadResourceResultResponse": "resources/read",
}

ERROR_CODES = {
    "ParseError": types.PARSE_ERROR,
    "InvalidParamsError": types.INVALID_PARAMS,
    "MethodNotFoundError": types.METHOD_NOT_FOUND,
    "InternalError": types.INTERNAL_ERROR,
    "HeaderMismatchError": types.HEADER_MISMATCH,
    "MissingRequiredClientCapabilityError": types.MISSING_REQUIRED_CLIENT_CAPABILITY,
    "UnsupportedProtocolVersionError": types.UNSUPPORTED_PROTOCOL_VERSION,
}


def _load(path: Path) -> Any:
    with path.open(encoding="utf-8") as file:
        return json.load(file)


def _example_files() -> list[Path]:
    return sorted(path for path in EXAMPLES.glob("*/*.json") if path.parent.name not in NOT_USED)


def _round_trip(kind: str, raw: Any) -> Any:
    if kind in RESPONSE_METHODS:
        response = JSONRPCResultResponse.model_validate(raw)
        result = parse_result(RESPONSE_METHODS[kind], response.result)
        return response.model_copy(update={"result": result.to_wire()}).to_wire()
    if kind in ERROR_CODES:
        model: type[BaseModel] = JSONRPCErrorResponse if "jsonrpc" in raw else ErrorData
        parsed = model.model_validate(raw)
        error = parsed.error if isinstance(parsed, JSONRPCErrorResponse) else parsed
        assert isinstance(error, ErrorData)
        assert error.code == ERROR_CODES[kind]
        return parsed.to_wire()  # type: ignore[attr-defined]
    target = getattr(types, kind)
    if isinstance(target, type) and issubclass(target, types.WireModel):
        return target.model_validate(raw).to_wire()
    adapter: TypeAdapter[Any] = TypeAdapter(target)
    return adapter.dump_python(
        adapter.validate_python(raw), by_alias=True, exclude_none=True, mode="json"
    )


def test_every_example_directory_is_covered_or_deliberately_unused() -> None:
    kinds = {path.name for path in EXAMPLES.iterdir() if path.is_dir()}
    handled = {k for k in kinds if hasattr(types, k)} | set(RESPONSE_METHODS) | set(ERROR_CODES)
    assert kinds - handled - NOT_USED == set()
    assert len(_example_files()) > 80


@pytest.mark.parametrize("path", _example_files(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_example_round_trips(path: Path) -> None:
    raw = _load(path)
    assert _round_trip(path.parent.name, raw) == raw


# --- model behaviour ------------------------------------------------------------------


def test_unknown_fields_survive_and_none_is_omitted() -> None:
    raw = {
        "content": [{"type": "text", "text": "hi", "futureField": {"x": 1}}],
        "resultType": "complete",
        "somethingNew": [1, 2],
    }
    result = CallToolResult.model_validate(raw)
    assert result.is_error is False  # the spec default, not sent back (unset)
    assert result.to_wire() == raw


def test_meta_uses_its_wire_name_both_ways() -> None:
    params = CallToolRequestParams(name="t", meta={"progressToken": 3})
    assert params.to_wire() == {"name": "t", "_meta": {"progressToken": 3}}
    again = CallToolRequestParams.model_validate({"name": "t", "_meta": {"k": "v"}})
    assert again.meta == {"k": "v"}


def test_models_are_frozen() -> None:
    text = TextContent(text="a")
    with pytest.raises(ValidationError):
        text.text = "b"  # type: ignore[misc]
    assert text.model_copy(update={"text": "b"}).text == "b"


def test_python_names_and_wire_names_both_populate() -> None:
    by_name = ListToolsResult(tools=[], next_cursor="c")
    by_alias = ListToolsResult.model_validate({"tools": [], "nextCursor": "c"})
    assert by_name == by_alias
    assert by_name.to_wire() == {"tools": [], "nextCursor": "c"}


def test_elicit_params_without_mode_are_form() -> None:
    request = ElicitRequest.model_validate(
        {"method": "elicitation/create", "params": {"message": "m", "requestedSchema": {}}}
    )
    assert isinstance(request.params, ElicitRequestFormParams)
    assert request.to_wire()["params"] == {"message": "m", "requestedSchema": {}}
    url = INPUT_REQUEST_ADAPTER.validate_python(
        {"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": "u"}}
    )
    assert isinstance(url, ElicitRequest)
    assert isinstance(url.params, ElicitRequestURLParams)
    assert url.params.url == "u"


def test_requested_schema_is_kept_verbatim() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"a": {"type": "string"}},
        "properties": {"x": {"$ref": "#/$defs/a", "x-custom": True}},
    }
    params = ElicitRequestFormParams(message="m", requested_schema=schema)
    assert params.to_wire()["requestedSchema"] == schema


def test_input_request_adapter_discriminates_on_method() -> None:
    roots = INPUT_REQUEST_ADAPTER.validate_python({"method": "roots/list"})
    assert isinstance(roots, ListRootsRequest)
    sampling = INPUT_REQUEST_ADAPTER.validate_python(
        {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}
    )
    assert isinstance(sampling, CreateMessageRequest)
    with pytest.raises(ValidationError):
        INPUT_REQUEST_ADAPTER.validate_python({"method": "tools/call", "params": {}})


def test_input_responses_in_retry_params_are_typed_by_shape() -> None:
    params = CallToolRequestParams.model_validate(
        {
            "name": "t",
            "inputResponses": {
                "a": {"action": "accept", "content": {"n": 1}},
                "b": {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"},
                "c": {"roots": [{"uri": "file:///r"}]},
            },
            "requestState": "s",
        }
    )
    assert params.input_responses is not None
    assert isinstance(params.input_responses["a"], ElicitResult)
    assert isinstance(params.input_responses["b"], CreateMessageResult)
    assert isinstance(params.input_responses["c"], ListRootsResult)
    assert isinstance(INPUT_RESPONSE_ADAPTER.validate_python({"action": "cancel"}), ElicitResult)


def test_client_capabilities_dump_empty_objects() -> None:
    caps = ClientCapabilities(elicitation=ElicitationCapability(form={}, url={}))
    assert caps.to_wire() == {"elicitation": {"form": {}, "url": {}}}


def test_constants() -> None:
    assert types.LATEST_PROTOCOL_VERSION == MODERN
    assert types.MODERN_PROTOCOL_VERSIONS[0] == MODERN
    assert types.LEGACY_PROTOCOL_VERSIONS[0] == LEGACY
    assert types.META_PROTOCOL_VERSION == "io.modelcontextprotocol/protocolVersion"
    assert {"tools/call", "prompts/get", "resources/read"} == types.INPUT_REQUIRED_METHODS
    for version in (*types.MODERN_PROTOCOL_VERSIONS, LEGACY):
        assert (SPEC_DIR / version / "schema.json").is_file()


def test_all_is_sorted_and_complete() -> None:
    assert list(types.__all__) == sorted(types.__all__, key=export_order)
    for name in types.__all__:
        assert hasattr(types, name), name


# --- parse_result: the strict-result rules ----------------------------------------------

COMPLETE: dict[str, tuple[type[Result], dict[str, Any]]] = {
    "server/discover": (DiscoverResult, {"supportedVersions": [MODERN], "capabilities": {}}),
    "initialize": (
        InitializeResult,
        {
            "protocolVersion": LEGACY,
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "s", "version": "1"},
        },
    ),
    "ping": (EmptyResult, {}),
    "tools/list": (ListToolsResult, {"tools": [{"name": "t", "inputSchema": {}}]}),
    "tools/call": (CallToolResult, {"content": []}),
    "prompts/list": (ListPromptsResult, {"prompts": [{"name": "p"}]}),
    "prompts/get": (
        GetPromptResult,
        {"messages": [{"role": "user", "content": {"type": "text", "text": "x"}}]},
    ),
    "resources/list": (ListResourcesResult, {"resources": [{"uri": "u", "name": "n"}]}),
    "resources/templates/list": (
        ListResourceTemplatesResult,
        {"resourceTemplates": [{"uriTemplate": "u/{x}", "name": "n"}]},
    ),
    "resources/read": (ReadResourceResult, {"contents": [{"uri": "u", "text": "t"}]}),
    "completion/complete": (CompleteResult, {"completion": {"values": ["a"]}}),
}


@pytest.mark.parametrize("method", sorted(COMPLETE))
def test_absent_result_type_is_complete(method: str) -> None:
    model, raw = COMPLETE[method]
    result = parse_result(method, raw)
    assert type(result) is model
    # the spec's meaning of an absent resultType; an empty result stays {} (None)
    assert result.result_type == model.model_fields["result_type"].default
    assert model is EmptyResult or result.result_type == "complete"
    assert "result_type" not in result.model_fields_set
    explicit = parse_result(method, {**raw, "resultType": "complete"})
    assert type(explicit) is model
    assert explicit.result_type == "complete"


def test_read_resource_contents_are_told_apart() -> None:
    result = parse_result(
        "resources/read", {"contents": [{"uri": "a", "text": "t"}, {"uri": "b", "blob": "AA=="}]}
    )
    assert isinstance(result, ReadResourceResult)
    assert isinstance(result.contents[0], TextResourceContents)
    assert type(result.contents[1]).__name__ == "BlobResourceContents"


def test_unknown_method_parses_as_plain_result_keeping_fields() -> None:
    result = parse_result("vendor/thing", {"answer": 42})
    assert type(result) is Result
    assert result.to_wire() == {"answer": 42}


def _protocol_error(method: str, raw: Any) -> ProtocolError:
    with pytest.raises(ProtocolError) as info:
        parse_result(method, raw)
    assert info.value.method == method
    assert method in str(info.value)
    assert not isinstance(info.value.__cause__, ValidationError)
    return info.value


@pytest.mark.parametrize("result_type", ["pending", "", 3, ["complete"], {"x": 1}])
def test_unknown_result_type_is_a_protocol_error(result_type: Any) -> None:
    error = _protocol_error("tools/call", {"content": [], "resultType": result_type})
    assert "resultType" in str(error)


@pytest.mark.parametrize(
    "method", ["tools/list", "server/discover", "completion/complete", "ping", "initialize"]
)
def test_input_required_only_on_the_three_methods(method: str) -> None:
    error = _protocol_error(method, {"resultType": "input_required", "requestState": "s"})
    assert "tools/call, prompts/get and resources/read" in str(error)


@pytest.mark.parametrize("method", ["tools/call", "prompts/get", "resources/read"])
def test_input_required_accepted_on_the_three_methods(method: str) -> None:
    result = parse_result(method, {"resultType": "input_required", "requestState": "s"})
    assert isinstance(result, InputRequiredResult)
    assert result.request_state == "s"
    assert result.input_requests is None


@pytest.mark.parametrize(
    "raw",
    [
        {"resultType": "input_required"},
        {"resultType": "input_required", "inputRequests": None, "requestState": None},
        {"resultType": "input_required", "inputRequests": {}},
    ],
)
def test_input_required_with_neither_field(raw: dict[str, Any]) -> None:
    error = _protocol_error("tools/call", raw)
    assert "neither" in str(error)


@pytest.mark.parametrize(
    "request_",
    [
        {"method": "tools/call", "params": {"name": "x"}},
        {"method": "ping"},
        {"params": {}},
        "elicitation/create",
    ],
)
def test_input_request_of_unknown_method(request_: Any) -> None:
    raw = {"resultType": "input_required", "inputRequests": {"k": request_}}
    error = _protocol_error("prompts/get", raw)
    assert "'k'" in str(error)


@pytest.mark.parametrize(
    ("method", "raw"),
    [
        ("tools/call", {"content": "not a list"}),
        ("tools/call", {"content": [{"type": "hologram"}]}),
        ("tools/call", {}),
        ("tools/list", {"tools": [{"name": "t"}]}),
        ("resources/read", {"contents": [{"uri": "u"}]}),
        ("server/discover", {"supportedVersions": "2026-07-28", "capabilities": {}}),
        ("server/discover", {"supportedVersions": [], "capabilities": {}, "cacheScope": "x"}),
        ("tools/call", {"resultType": "input_required", "requestState": 5}),
        ("tools/call", {"resultType": "input_required", "inputRequests": ["a"]}),
        (
            "tools/call",
            {
                "resultType": "input_required",
                "inputRequests": {"k": {"method": "elicitation/create", "params": {}}},
            },
        ),
        (
            "tools/call",
            {
                "resultType": "input_required",
                "inputRequests": {
                    "k": {
                        "method": "elicitation/create",
                        "params": {"mode": "telepathy", "message": "m"},
                    }
                },
            },
        ),
        ("tools/call", "a string"),
        ("tools/call", None),
        ("prompts/get", [1, 2]),
    ],
)
def test_malformed_result_is_a_protocol_error(method: str, raw: Any) -> None:
    _protocol_error(method, raw)


def test_full_input_required_result() -> None:
    raw = _load(
        EXAMPLES
        / "InputRequiredResult"
        / "input-required-result-with-elicitation-and-sampling-and-request-state.json"
    )
    result = parse_result("tools/call", raw)
    assert isinstance(result, InputRequiredResult)
    assert result.request_state == raw["requestState"]
    assert result.input_requests is not None
    assert isinstance(result.input_requests["github_login"], ElicitRequest)
    assert isinstance(result.input_requests["capital_of_france"], CreateMessageRequest)
    assert result.to_wire() == raw


# --- validate_input_response ----------------------------------------------------------


def test_plain_dicts_are_coerced_into_the_right_model() -> None:
    elicit = validate_input_response("elicitation/create", {"action": "accept", "content": {}})
    assert elicit == ElicitResult(action="accept", content={})
    sampling = validate_input_response(
        "sampling/createMessage",
        {
            "role": "assistant",
            "content": {"type": "text", "text": "x"},
            "model": "m",
            "stopReason": "endTurn",
        },
    )
    assert isinstance(sampling, CreateMessageResult)
    assert sampling.stop_reason == "endTurn"
    by_name = validate_input_response(
        "sampling/createMessage",
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "x"}],
            "model": "m",
            "stop_reason": "maxTokens",
        },
    )
    assert isinstance(by_name, CreateMessageResult)
    assert by_name.stop_reason == "maxTokens"
    roots = validate_input_response("roots/list", {"roots": [{"uri": "file:///a"}]})
    assert roots == ListRootsResult(roots=[Root(uri="file:///a")])


def test_the_right_model_passes_through_unchanged() -> None:
    answer = ElicitResult(action="decline")
    assert validate_input_response("elicitation/create", answer, key="k") is answer


def test_another_pydantic_model_with_the_same_fields_is_accepted() -> None:
    class ForeignElicitResult(BaseModel):
        action: str
        content: dict[str, Any] | None = None

    answer = validate_input_response(
        "elicitation/create", ForeignElicitResult(action="accept", content={"a": "b"})
    )
    assert answer == ElicitResult(action="accept", content={"a": "b"})


@pytest.mark.parametrize(
    ("method", "value"),
    [
        ("sampling/createMessage", ElicitResult(action="accept")),
        ("elicitation/create", ListRootsResult(roots=[])),
        (
            "roots/list",
            CreateMessageResult(role="assistant", content=TextContent(text="x"), model="m"),
        ),
        ("sampling/createMessage", {"action": "accept"}),
        ("elicitation/create", {"action": "maybe"}),
        ("elicitation/create", {"action": "accept", "content": {"x": {"nested": 1}}}),
        ("roots/list", {"roots": "file:///"}),
        ("elicitation/create", "accept"),
        ("elicitation/create", None),
        ("elicitation/create", ErrorData(code=-1, message="no")),
        ("tools/call", {"action": "accept"}),
    ],
)
def test_wrong_answers_are_refused_naming_the_key(method: str, value: Any) -> None:
    with pytest.raises(InvalidInputResponseError) as info:
        validate_input_response(method, value, key="the-key")
    assert info.value.key == "the-key"
    assert info.value.method == method
    assert "'the-key'" in str(info.value)
    assert not isinstance(info.value.__cause__, ValidationError)


# --- what the client sends validates against the official schemas ----------------------


def _modern_meta(**extra: Any) -> dict[str, Any]:
    return {
        types.META_PROTOCOL_VERSION: MODERN,
        types.META_CLIENT_CAPABILITIES: {"elicitation": {"form": {}}},
        types.META_CLIENT_INFO: {"name": "mrtr", "version": "0"},
        **extra,
    }


def test_models_build_valid_modern_requests() -> None:
    request = CallToolRequest(
        id=7,
        params=CallToolRequestParams(
            name="t",
            arguments={"a": 1},
            meta=_modern_meta(),
            input_responses={"k": ElicitResult(action="accept", content={"n": "x"})},
            request_state="opaque",
        ),
    )
    validate_client_message(request.to_wire(), MODERN)


def test_models_build_valid_legacy_requests() -> None:
    request = InitializeRequest(
        id=0,
        params=InitializeRequestParams(
            protocol_version=LEGACY,
            capabilities=ClientCapabilities(),
            client_info=Implementation(name="mrtr", version="0"),
        ),
    )
    validate_client_message(request.to_wire(), LEGACY)
    validate_client_message({"jsonrpc": "2.0", "method": "notifications/initialized"}, LEGACY)


def test_schema_helper_accepts_good_messages() -> None:
    validate_client_message(
        {"jsonrpc": "2.0", "id": "a", "method": "tools/list", "params": {"_meta": _modern_meta()}},
        MODERN,
    )
    validate_client_message(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}},
        MODERN,
    )
    validate_client_message(
        {"jsonrpc": "2.0", "id": 4, "result": {"action": "decline"}},
        LEGACY,
        request_method="elicitation/create",
    )
    validate_client_message(
        {"jsonrpc": "2.0", "id": 4, "error": {"code": -32601, "message": "nope"}}, LEGACY
    )


@pytest.mark.parametrize(
    ("message", "version", "request_method", "fragment"),
    [
        # a modern request without the _meta envelope
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, MODERN, None, "_meta"),
        # the method-specific definition, not the loose JSONRPCRequest
        (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"_meta": _modern_meta(), "arguments": {}},
            },
            MODERN,
            None,
            "name",
        ),
        # initialize does not exist in the modern era
        (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
            MODERN,
            None,
            "not a client request",
        ),
        # server/discover does not exist in the legacy era
        ({"jsonrpc": "2.0", "id": 1, "method": "server/discover"}, LEGACY, None, "not a client"),
        # _meta names another version
        (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/list",
                "params": {"_meta": {**_modern_meta(), types.META_PROTOCOL_VERSION: LEGACY}},
            },
            MODERN,
            None,
            "declares protocol version",
        ),
        # a null id
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, LEGACY, None, "id"),
        # an answer of the wrong kind
        (
            {"jsonrpc": "2.0", "id": 4, "result": {"action": "accept"}},
            LEGACY,
            "sampling/createMessage",
            "CreateMessageResult",
        ),
        ({"jsonrpc": "1.0", "method": "notifications/initialized"}, LEGACY, None, "2.0"),
    ],
)
def test_schema_helper_rejects_bad_messages(
    message: dict[str, Any], version: str, request_method: str | None, fragment: str
) -> None:
    with pytest.raises(AssertionError) as info:
        validate_client_message(message, version, request_method=request_method)
    assert fragment in str(info.value)


def test_elicit_content_keeps_json_types() -> None:
    raw = {"action": "accept", "content": {"b": True, "i": 1, "f": 1.5, "s": "x", "l": ["a"]}}
    answer = validate_input_response("elicitation/create", raw)
    assert answer.to_wire() == raw
    assert answer.to_wire()["content"]["b"] is True


CLIENT_REQUEST_EXAMPLES = sorted(
    path
    for kind in (
        "CallToolRequest",
        "CompleteRequest",
        "DiscoverRequest",
        "GetPromptRequest",
        "ListPromptsRequest",
        "ListResourceTemplatesRequest",
        "ListResourcesRequest",
        "ListToolsRequest",
        "ReadResourceRequest",
        "CancelledNotification",
    )
    for path in (EXAMPLES / kind).glob("*.json")
)


@pytest.mark.parametrize("path", CLIENT_REQUEST_EXAMPLES, ids=lambda p: p.parent.name)
def test_schema_helper_accepts_the_official_examples(path: Path) -> None:
    message = _load(path)
    validate_client_message(message, MODERN)
    # and our models re-emit a message that still validates
    validate_client_message(_round_trip(path.parent.name, message), MODERN)
