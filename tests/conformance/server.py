"""The server the official conformance suite tests in server mode (built on `mrtr.server`).

Usage (tests/conformance/run_server.py does this)::

    python tests/conformance/server.py [--port 0]

It serves streamable HTTP on 127.0.0.1 only and prints its URL on the first line of
stdout once it is listening. It offers what the suite's server scenarios call, under the
names the scenarios use: content tools (text, image, audio, embedded resource, mixed),
a logging tool, a progress tool, an error tool, a JSON Schema 2020-12 tool, a tool whose
argument is mirrored into an ``Mcp-Param-*`` header, the multi-round-trip tools and
prompt (answered with `InputRequiredResult`), static and templated resources, prompts,
and completion.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import socket
import struct
import uuid
import wave
import zlib
from typing import Any

from mrtr.errors import MCPError
from mrtr.server import MemoryTaskStore, Server, ServerRequestContext
from mrtr.types import (
    CallToolRequestParams,
    CallToolResult,
    CompleteRequestParams,
    CompleteResult,
    CreateMessageResult,
    ElicitResult,
    GetPromptRequestParams,
    GetPromptResult,
    InputRequiredResult,
    InputResponses,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListRootsResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    SamplingMessage,
)

try:
    from tests.conformance.server_tasks import TASK_TOOLS, task_tool
except ImportError:  # run as a script: its directory is on sys.path
    from server_tasks import TASK_TOOLS, task_tool  # type: ignore[import-not-found,no-redef]

INVALID_PARAMS = -32602


def _png_1x1() -> str:
    """A valid one-pixel PNG, base64 (made here, so no binary sits in the repository)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\x20\x80\xc0")
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels)
    return base64.b64encode(png + chunk(b"IEND", b"")).decode("ascii")


def _wav_silence() -> str:
    """A short silent mono WAV, base64."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\x00\x00" * 800)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


IMAGE = _png_1x1()
AUDIO = _wav_silence()
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}

# A schema using the 2020-12 vocabulary a client or SDK must keep verbatim.
SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _result(*content: dict[str, Any], is_error: bool = False) -> CallToolResult:
    wire: dict[str, Any] = {"content": list(content)}
    if is_error:
        wire["isError"] = True
    return CallToolResult.model_validate(wire)


def _elicit(message: str, field: str, kind: str = "string") -> dict[str, Any]:
    return {
        "method": "elicitation/create",
        "params": {
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {field: {"type": kind}},
                "required": [field],
            },
        },
    }


def _sample(text: str, max_tokens: int) -> dict[str, Any]:
    return {
        "method": "sampling/createMessage",
        "params": {"messages": [{"role": "user", "content": _text(text)}], "maxTokens": max_tokens},
    }


LIST_ROOTS: dict[str, Any] = {"method": "roots/list", "params": {}}
CONFIRM = _elicit("Please confirm", "ok", "boolean")


def _ask(requests: dict[str, Any], state: dict[str, Any] | None = None) -> InputRequiredResult:
    wire: dict[str, Any] = {"inputRequests": requests}
    if state is not None:
        wire["requestState"] = json.dumps({**state, "nonce": uuid.uuid4().hex})
    return InputRequiredResult.model_validate(wire)


def _field(responses: InputResponses, key: str, field: str) -> Any:
    answer = responses.get(key)
    if isinstance(answer, ElicitResult) and answer.content is not None:
        return answer.content.get(field)
    return None


def _state(ctx: ServerRequestContext) -> dict[str, Any]:
    try:
        state = json.loads(ctx.request_state or "{}")
    except ValueError:
        return {}
    return state if isinstance(state, dict) else {}


def _sampled_text(answer: object) -> str | None:
    if isinstance(answer, CreateMessageResult):
        content = answer.content
        text = getattr(content, "text", None)
        return text if isinstance(text, str) else None
    return None


# --- tools ------------------------------------------------------------------------------

TOOL_DESCRIPTIONS: dict[str, str] = {
    "test_simple_text": "Answers with one text block",
    "test_image_content": "Answers with an image block",
    "test_audio_content": "Answers with an audio block",
    "test_embedded_resource": "Answers with an embedded resource",
    "test_multiple_content_types": "Answers with text, image and resource blocks",
    "test_tool_with_logging": "Logs three messages while it runs",
    "test_tool_with_progress": "Reports progress while it runs",
    "test_error_handling": "Fails with isError: true",
    "json_schema_2020_12_tool": "Has a JSON Schema 2020-12 input schema",
    "test_missing_capability": "Needs sampling, which the client must declare",
    "test_input_required_result_elicitation": "Asks the user's name",
    "test_input_required_result_sampling": "Asks the client's model a question",
    "test_input_required_result_list_roots": "Asks for the client's roots",
    "test_input_required_result_request_state": "Asks for a confirmation, keeping state",
    "test_input_required_result_multiple_inputs": "Asks three things in one round",
    "test_input_required_result_multi_round": "Asks two things in two rounds",
    "test_input_required_result_tampered_state": "Keeps a sealed state it verifies",
    "test_input_required_result_capabilities": "Asks only what the client can answer",
    "test_streaming_elicitation": "Answers on a response stream",
    "test_logging_tool": "Logs only when the request set a log level",
    "test_sampling": "Asks the client's model (legacy: sampling/createMessage)",
    "test_elicitation": "Asks the user (legacy: elicitation/create)",
    "test_elicitation_sep1034_defaults": "Asks with defaults for every primitive type",
    "test_elicitation_sep1330_enums": "Asks with every kind of enum",
    "test_reconnection": "Closes its SSE stream mid-call; the client resumes it",
    "test_trigger_tool_change": "Tells listening clients that the tool list changed",
    "test_trigger_prompt_change": "Tells listening clients that the prompt list changed",
    "test_mirrored_header": "Mirrors its region argument into the Mcp-Param-Region header",
}
# the region argument travels in a header too; the server checks the two agree
MIRRORED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
    "required": ["region"],
}
SCHEMAS = {
    "json_schema_2020_12_tool": SCHEMA_2020_12,
    "test_mirrored_header": MIRRORED_SCHEMA,
    "test_sampling": {
        "type": "object",
        "properties": {"prompt": {"type": "string"}},
        "required": ["prompt"],
    },
    "test_elicitation": {
        "type": "object",
        "properties": {"message": {"type": "string"}},
        "required": ["message"],
    },
}


async def list_tools(ctx: ServerRequestContext, params: PaginatedRequestParams | None) -> Any:
    tools = [
        {
            "name": name,
            "description": description,
            "inputSchema": SCHEMAS.get(name, EMPTY_SCHEMA),
        }
        for name, description in TOOL_DESCRIPTIONS.items()
        if (ctx.is_modern or "input_required" not in name)
        and (not ctx.is_modern or name not in LEGACY_TOOLS)
    ]
    tools += [
        {"name": name, "description": description, "inputSchema": schema}
        for name, (description, schema) in TASK_TOOLS.items()
    ]
    return ListToolsResult.model_validate({"tools": tools})


LEGACY_TOOLS = frozenset(
    {
        "test_sampling",
        "test_elicitation",
        "test_elicitation_sep1034_defaults",
        "test_elicitation_sep1330_enums",
        "test_reconnection",
    }
)
USER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}
DEFAULTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {
            "type": "string",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "default": True},
    },
}


def _choices(prefix: str, titles: tuple[str, ...]) -> list[dict[str, str]]:
    return [{"const": f"{prefix}{n}", "title": t} for n, t in enumerate(titles, start=1)]


ENUMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": _choices("value", ("First Option", "Second Option", "Third Option")),
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": _choices("value", ("First Choice", "Second Choice", "Third Choice"))
            },
        },
    },
}


async def _legacy_tool(ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult:
    """The tools that ask through server-to-client requests (legacy sessions)."""
    name, arguments = params.name, params.arguments or {}
    if name == "test_sampling":
        said = await ctx.create_message(
            [
                SamplingMessage.model_validate(
                    {"role": "user", "content": _text(str(arguments.get("prompt", "")))}
                )
            ],
            max_tokens=100,
        )
        text = getattr(said.content, "text", "")
        return _result(_text(f"LLM response: {text}"))
    if name == "test_reconnection":
        await ctx.close_sse_stream()  # the client comes back with Last-Event-ID
        return _result(_text("Reconnection test completed"))
    schema, message = {
        "test_elicitation": (USER_SCHEMA, str(arguments.get("message", ""))),
        "test_elicitation_sep1034_defaults": (DEFAULTS_SCHEMA, "Please review the defaults"),
        "test_elicitation_sep1330_enums": (ENUMS_SCHEMA, "Please pick some options"),
    }[name]
    answer = await ctx.elicit(message, schema)
    content = json.dumps(answer.content or {})
    if name == "test_elicitation":
        return _result(_text(f"User response: action={answer.action}, content={content}"))
    return _result(_text(f"Elicitation completed: action={answer.action}, content={content}"))


async def _logging(ctx: ServerRequestContext) -> CallToolResult:
    for step in ("started", "processing data", "completed"):
        await ctx.send_log("info", f"Tool execution {step}", logger="conformance-server")
    return _result(_text("Tool with logging executed successfully"))


async def _progress(ctx: ServerRequestContext) -> CallToolResult:
    for done in (0, 50, 100):
        await ctx.send_progress(done, 100, f"Completed step {done} of 100")
    return _result(_text("Progress reported"))


async def _mrtr_tool(ctx: ServerRequestContext, name: str) -> CallToolResult | InputRequiredResult:
    responses = ctx.input_responses or {}
    state = _state(ctx)
    if name == "test_missing_capability":
        # answered only once the client's model has been asked: a client without the
        # sampling capability gets -32021 from the server core
        if "probe" in responses:
            return _result(_text("Success"))
        return _ask({"probe": _sample("Say hello", 10)})
    if name == "test_input_required_result_elicitation":
        user = _field(responses, "user_name", "name")
        return (
            _result(_text(f"Hello, {user}!"))
            if user
            else _ask({"user_name": _elicit("What is your name?", "name")})
        )
    if name == "test_input_required_result_sampling":
        if "sample_request" in responses:
            text = _sampled_text(responses["sample_request"]) or "no response"
            return _result(_text(f"Sampling result: {text}"))
        return _ask({"sample_request": _sample("What is the capital of France?", 100)})
    if name == "test_input_required_result_list_roots":
        roots = responses.get("roots_request")
        if isinstance(roots, ListRootsResult):
            return _result(_text(f"Found {len(roots.roots)} root(s)"))
        return _ask({"roots_request": LIST_ROOTS})
    if name == "test_input_required_result_request_state":
        if state.get("kind") == "request-state" and _field(responses, "confirm", "ok") is True:
            return _result(_text("state-ok: requestState validated"))
        return _ask({"confirm": CONFIRM}, {"kind": "request-state"})
    if name == "test_input_required_result_multiple_inputs":
        return _multiple_inputs(responses, state)
    if name == "test_input_required_result_multi_round":
        return _multi_round(responses, state)
    if name == "test_input_required_result_tampered_state":
        # the core verified the sealed state before this ran: tampering never gets here
        if state.get("kind") == "tamper-test" and "confirm" in responses:
            return _result(_text("integrity-ok: state verified"))
        return _ask({"confirm": CONFIRM}, {"kind": "tamper-test"})
    return _capabilities(ctx, responses)


def _multiple_inputs(responses: InputResponses, state: dict[str, Any]) -> Any:
    roots = responses.get("client_roots")
    user = _field(responses, "user_name", "name")
    greeting = _sampled_text(responses.get("greeting"))
    if state.get("kind") == "multiple-inputs" and isinstance(roots, ListRootsResult) and user:
        text = f"Name: {user}; Greeting: {greeting or 'Hello there!'}; Roots: {len(roots.roots)}"
        return _result(_text(text))
    requests = {
        "user_name": _elicit("What is your name?", "name"),
        "greeting": _sample("Generate a greeting", 50),
        "client_roots": LIST_ROOTS,
    }
    return _ask(requests, {"kind": "multiple-inputs"})


def _multi_round(responses: InputResponses, state: dict[str, Any]) -> Any:
    if state.get("round") == 1 and (user := _field(responses, "step1", "name")):
        step2 = _elicit("Step 2: What is your favorite color?", "color")
        return _ask({"step2": step2}, {"round": 2, "name": user})
    if state.get("round") == 2 and (color := _field(responses, "step2", "color")):
        return _result(_text(f"Multi-round complete for {state.get('name')} who likes {color}"))
    return _ask({"step1": _elicit("Step 1: What is your name?", "name")}, {"round": 1})


def _capabilities(
    ctx: ServerRequestContext, responses: InputResponses
) -> CallToolResult | InputRequiredResult:
    if responses:
        return _result(_text(f"capabilities-ok: received {','.join(sorted(responses))}"))
    caps = ctx.client_capabilities
    requests: dict[str, Any] = {}
    if caps is not None and caps.elicitation is not None:
        requests["elicit_input"] = _elicit("Elicitation input", "value")
    if caps is not None and caps.sampling is not None:
        requests["sample_input"] = _sample("Sample request", 50)
    if not requests:
        return _result(_text("No supported capabilities declared"))
    return _ask(requests, {"kind": "capabilities-test"})


async def call_tool(
    ctx: ServerRequestContext, params: CallToolRequestParams
) -> CallToolResult | InputRequiredResult:
    name = params.name
    if name == "test_simple_text":
        return _result(_text("This is a simple text response for testing."))
    if name == "test_image_content":
        return _result({"type": "image", "data": IMAGE, "mimeType": "image/png"})
    if name == "test_audio_content":
        return _result({"type": "audio", "data": AUDIO, "mimeType": "audio/wav"})
    if name == "test_embedded_resource":
        resource = {
            "uri": "test://embedded-resource",
            "mimeType": "text/plain",
            "text": "This is an embedded resource content.",
        }
        return _result({"type": "resource", "resource": resource})
    if name == "test_multiple_content_types":
        resource = {
            "uri": "test://mixed-content-resource",
            "mimeType": "application/json",
            "text": json.dumps({"test": "data", "value": 123}),
        }
        return _result(
            _text("Multiple content types test:"),
            {"type": "image", "data": IMAGE, "mimeType": "image/png"},
            {"type": "resource", "resource": resource},
        )
    if name in ("test_tool_with_logging", "test_logging_tool"):
        return await _logging(ctx)
    if name == "test_tool_with_progress":
        return await _progress(ctx)
    if name == "test_error_handling":
        return _result(_text("This tool intentionally returns an error for testing"), is_error=True)
    if name == "json_schema_2020_12_tool":
        return _result(_text(f"JSON Schema 2020-12 tool called with: {params.arguments or {}}"))
    if name == "test_mirrored_header":
        return _result(_text(f"region: {(params.arguments or {}).get('region')}"))
    if name == "test_streaming_elicitation":
        await ctx.send_progress(50, 100)
        return _result(_text("Streaming complete"))
    if name == "test_trigger_tool_change":  # the suite's hook: the tool list "changed"
        await SERVER.notify_tools_changed()
        return _result(_text("The tool list changed"))
    if name == "test_trigger_prompt_change":
        await SERVER.notify_prompts_changed()
        return _result(_text("The prompt list changed"))
    if name in TASK_TOOLS:
        return await task_tool(SERVER, ctx, name, dict(params.arguments or {}))
    if name in LEGACY_TOOLS and not ctx.is_modern:
        return await _legacy_tool(ctx, params)
    if name in TOOL_DESCRIPTIONS and ctx.is_modern:
        return await _mrtr_tool(ctx, name)
    raise MCPError(INVALID_PARAMS, f"Unknown tool: {name}")


# --- resources --------------------------------------------------------------------------

STATIC_RESOURCES: dict[str, dict[str, Any]] = {
    "test://static-text": {
        "name": "static-text",
        "mimeType": "text/plain",
        "text": "This is the content of the static text resource.",
    },
    "test://static-binary": {"name": "static-binary", "mimeType": "image/png", "blob": IMAGE},
    "test://watched-resource": {
        "name": "watched-resource",
        "mimeType": "text/plain",
        "text": "Watched resource content",
    },
}
TEMPLATE_PREFIX, TEMPLATE_SUFFIX = "test://template/", "/data"


async def list_resources(ctx: ServerRequestContext, params: PaginatedRequestParams | None) -> Any:
    resources = [
        {"uri": uri, "name": entry["name"], "mimeType": entry["mimeType"]}
        for uri, entry in STATIC_RESOURCES.items()
    ]
    return ListResourcesResult.model_validate({"resources": resources})


async def list_templates(ctx: ServerRequestContext, params: PaginatedRequestParams | None) -> Any:
    template = {
        "uriTemplate": f"{TEMPLATE_PREFIX}{{id}}{TEMPLATE_SUFFIX}",
        "name": "template",
        "mimeType": "application/json",
    }
    return ListResourceTemplatesResult.model_validate({"resourceTemplates": [template]})


async def read_resource(
    ctx: ServerRequestContext, params: ReadResourceRequestParams
) -> ReadResourceResult:
    uri = params.uri
    entry = STATIC_RESOURCES.get(uri)
    if entry is not None:
        content = {key: value for key, value in entry.items() if key != "name"}
        return ReadResourceResult.model_validate({"contents": [{"uri": uri, **content}]})
    if uri.startswith(TEMPLATE_PREFIX) and uri.endswith(TEMPLATE_SUFFIX):
        item = uri[len(TEMPLATE_PREFIX) : -len(TEMPLATE_SUFFIX)]
        if item and "/" not in item:
            text = json.dumps({"id": item, "templateTest": True, "data": f"Data for ID: {item}"})
            content = {"uri": uri, "mimeType": "application/json", "text": text}
            return ReadResourceResult.model_validate({"contents": [content]})
    raise MCPError(INVALID_PARAMS, f"Resource not found: {uri}", {"uri": uri})


# --- prompts ----------------------------------------------------------------------------


def _argument(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "description": description, "required": True}


PROMPTS: list[dict[str, Any]] = [
    {"name": "test_simple_prompt", "description": "A prompt without arguments"},
    {
        "name": "test_prompt_with_arguments",
        "description": "A prompt with two required arguments",
        "arguments": [_argument("arg1", "First argument"), _argument("arg2", "Second argument")],
    },
    {
        "name": "test_prompt_with_embedded_resource",
        "description": "A prompt embedding a resource",
        "arguments": [_argument("resourceUri", "URI of the resource to embed")],
    },
    {"name": "test_prompt_with_image", "description": "A prompt with an image"},
]
ASK_CONTEXT_PROMPT = {
    "name": "test_input_required_result_prompt",
    "description": "Asks for context before it renders",
}


async def list_prompts(ctx: ServerRequestContext, params: PaginatedRequestParams | None) -> Any:
    prompts = [*PROMPTS, ASK_CONTEXT_PROMPT] if ctx.is_modern else PROMPTS
    return ListPromptsResult.model_validate({"prompts": prompts})


def _messages(*contents: dict[str, Any]) -> GetPromptResult:
    messages = [{"role": "user", "content": content} for content in contents]
    return GetPromptResult.model_validate({"messages": messages})


async def get_prompt(
    ctx: ServerRequestContext, params: GetPromptRequestParams
) -> GetPromptResult | InputRequiredResult:
    args = params.arguments or {}
    if params.name == "test_simple_prompt":
        return _messages(_text("This is a simple prompt for testing."))
    if params.name == "test_prompt_with_arguments":
        text = f"Prompt with arguments: arg1='{args.get('arg1')}', arg2='{args.get('arg2')}'"
        return _messages(_text(text))
    if params.name == "test_prompt_with_embedded_resource":
        resource = {
            "uri": args.get("resourceUri", "test://example-resource"),
            "mimeType": "text/plain",
            "text": "Embedded resource content for testing.",
        }
        return _messages(
            {"type": "resource", "resource": resource},
            _text("Please process the embedded resource above."),
        )
    if params.name == "test_prompt_with_image":
        return _messages(
            {"type": "image", "data": IMAGE, "mimeType": "image/png"},
            _text("Please analyze the image above."),
        )
    if params.name == ASK_CONTEXT_PROMPT["name"] and ctx.is_modern:
        context = _field(ctx.input_responses or {}, "user_context", "context")
        if context:
            return _messages(_text(f"Prompt with context: {context}"))
        return _ask({"user_context": _elicit("What context should the prompt use?", "context")})
    raise MCPError(INVALID_PARAMS, f"Unknown prompt: {params.name}")


# --- completion -------------------------------------------------------------------------


async def complete(ctx: ServerRequestContext, params: CompleteRequestParams) -> CompleteResult:
    """Suggest the known values that start with what the user typed."""
    known = {"arg1": ["alpha", "beta"], "arg2": ["gamma", "delta"]}.get(params.argument.name, [])
    values = [value for value in known if value.startswith(params.argument.value)]
    return CompleteResult.model_validate(
        {"completion": {"values": values, "total": len(values), "hasMore": False}}
    )


def build_server() -> Server:
    """The conformance server: every handler above."""
    global SERVER
    SERVER = Server(
        "mrtr-conformance-server",
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_complete=complete,
        task_store=MemoryTaskStore(),  # the Tasks extension (tasks-* scenarios)
    )
    return SERVER


SERVER: Server  # the one build_server made: the trigger tools publish changes through it


def main(argv: list[str] | None = None) -> None:
    """Serve on 127.0.0.1 and print the URL once listening."""
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(128)
    port = sock.getsockname()[1]
    app = build_server().streamable_http_app()
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    print(f"http://127.0.0.1:{port}/mcp", flush=True)
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
