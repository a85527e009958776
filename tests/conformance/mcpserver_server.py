"""The conformance suite's server scenarios, written with the high-level `MCPServer`.

Usage (tests/conformance/run_server.py, the ``conformance`` nox session)::

    python tests/conformance/mcpserver_server.py [--port 0]

The same names and answers as ``server.py`` (the low-level one), but written as
MCPServer's users write them: most questions are dependencies (``Resolve`` +
``Elicit``/``Sample``/``ListRoots``) or a ``ctx.ask``, so the engine builds the
``InputRequiredResult`` on 2026-07-28 and sends the back-channel requests on 2025-11-25;
``test_input_required_result_elicitation`` is in the manual form (it reads
``ctx.input_responses``; the legacy shim serves it on 2025-11-25). One handler per tool
for both eras. It serves streamable HTTP on 127.0.0.1 only and prints its URL first.
"""

from __future__ import annotations

import argparse
import json
import socket
from typing import Annotated, Any, Literal, TypeVar

import anyio
from pydantic import BaseModel, Field, ValidationError, WithJsonSchema

from mrtr.errors import MCPError
from mrtr.server import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    ListRoots,
    MCPServer,
    MemoryTaskStore,
    Resolve,
    Sample,
    ToolError,
)
from mrtr.types import (
    AudioContent,
    CallToolResult,
    CreateMessageResult,
    ElicitResult,
    EmbeddedResource,
    ImageContent,
    InputRequiredResult,
    ListRootsResult,
    PromptMessage,
    TextContent,
    TextResourceContents,
)

try:
    from tests.conformance.server import AUDIO, IMAGE, SCHEMA_2020_12
except ImportError:  # run as a script: its directory is on sys.path
    from server import AUDIO, IMAGE, SCHEMA_2020_12  # type: ignore[import-not-found,no-redef]


M = TypeVar("M", bound=BaseModel)


class Name(BaseModel):
    name: str


class Color(BaseModel):
    color: str


class Context_(BaseModel):
    context: str


class Confirm(BaseModel):
    ok: bool


class ConfirmDelete(BaseModel):
    confirm: bool


class NamedConfirm(BaseModel):
    name: str
    confirm: bool


class Value(BaseModel):
    value: str


class User(BaseModel):
    username: str = Field(description="User's response")
    email: str = Field(description="User's email address")


class Defaults(BaseModel):
    name: str = "John Doe"
    age: int = 30
    score: float = 95.5
    status: Literal["active", "inactive", "pending"] = "active"
    verified: bool = True


def _choices(prefix: str, titles: tuple[str, ...]) -> list[dict[str, str]]:
    return [{"const": f"{prefix}{n}", "title": t} for n, t in enumerate(titles, start=1)]


class Enums(BaseModel):
    untitledSingle: Literal["option1", "option2", "option3"] | None = None
    titledSingle: Annotated[
        str | None,
        WithJsonSchema(
            {
                "type": "string",
                "oneOf": _choices("value", ("First Option", "Second Option", "Third Option")),
            }
        ),
    ] = None
    legacyEnum: Annotated[
        str | None,
        WithJsonSchema(
            {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            }
        ),
    ] = None
    untitledMulti: list[Literal["option1", "option2", "option3"]] | None = None
    titledMulti: Annotated[
        list[str] | None,
        WithJsonSchema(
            {
                "type": "array",
                "items": {
                    "anyOf": _choices("value", ("First Choice", "Second Choice", "Third Choice"))
                },
            }
        ),
    ] = None


def _text(text: str) -> TextContent:
    return TextContent(type="text", text=text)


def _accepted(answer: Any, model: type[M]) -> M | None:
    """An accepted elicitation's content as `model`, or ``None`` (missing, declined, bad)."""
    if not isinstance(answer, ElicitResult) or answer.action != "accept":
        return None
    try:
        return model.model_validate(answer.content or {})
    except ValidationError:
        return None


def _sampled(result: CreateMessageResult) -> str:
    text = getattr(result.content, "text", None)
    return text if isinstance(text, str) else "no response"


def build() -> MCPServer:
    """The conformance server, on MCPServer."""
    app = MCPServer("mrtr-mcpserver-conformance", version="1.0.0", task_store=MemoryTaskStore())
    _tasks(app)

    # --- content tools --------------------------------------------------------------

    @app.tool(description="Answers with one text block")
    def test_simple_text() -> str:
        return "This is a simple text response for testing."

    @app.tool(description="Answers with an image block")
    def test_image_content() -> ImageContent:
        return ImageContent(type="image", data=IMAGE, mime_type="image/png")

    @app.tool(description="Answers with an audio block")
    def test_audio_content() -> AudioContent:
        return AudioContent(type="audio", data=AUDIO, mime_type="audio/wav")

    @app.tool(description="Answers with an embedded resource")
    def test_embedded_resource() -> EmbeddedResource:
        return EmbeddedResource(
            type="resource",
            resource=TextResourceContents(
                uri="test://embedded-resource",
                mime_type="text/plain",
                text="This is an embedded resource content.",
            ),
        )

    @app.tool(description="Answers with text, image and resource blocks")
    def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
        resource = TextResourceContents(
            uri="test://mixed-content-resource",
            mime_type="application/json",
            text=json.dumps({"test": "data", "value": 123}),
        )
        return [
            _text("Multiple content types test:"),
            ImageContent(type="image", data=IMAGE, mime_type="image/png"),
            EmbeddedResource(type="resource", resource=resource),
        ]

    async def log_three(ctx: Context) -> str:
        for step in ("started", "processing data", "completed"):
            await ctx.info(f"Tool execution {step}", logger_name="conformance-server")
        return "Tool with logging executed successfully"

    app.tool(name="test_tool_with_logging", description="Logs three messages while it runs")(
        log_three
    )
    app.tool(name="test_logging_tool", description="Logs only when the request set a log level")(
        log_three
    )

    @app.tool(description="Reports progress while it runs")
    async def test_tool_with_progress(ctx: Context) -> str:
        for done in (0, 50, 100):
            await ctx.report_progress(done, 100, f"Completed step {done} of 100")
        return "Progress reported"

    @app.tool(description="Fails with isError: true")
    def test_error_handling() -> CallToolResult:
        return CallToolResult(
            content=[_text("This tool intentionally returns an error for testing")], is_error=True
        )

    @app.tool(description="Has a JSON Schema 2020-12 input schema", input_schema=SCHEMA_2020_12)
    def json_schema_2020_12_tool(
        name: str | None = None,
        address: dict[str, Any] | None = None,
        contactMethod: str | None = None,
        phone: str | None = None,
        email: str | None = None,
    ) -> str:
        arguments = {
            k: v
            for k, v in {
                "name": name,
                "address": address,
                "contactMethod": contactMethod,
                "phone": phone,
                "email": email,
            }.items()
            if v is not None
        }
        return f"JSON Schema 2020-12 tool called with: {arguments}"

    @app.tool(description="Mirrors its region argument into the Mcp-Param-Region header")
    def test_mirrored_header(
        region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
    ) -> str:
        return f"region: {region}"

    @app.tool(description="Answers on a response stream")
    async def test_streaming_elicitation(ctx: Context) -> str:
        await ctx.report_progress(50, 100)
        return "Streaming complete"

    @app.tool(description="Tells listening clients that the tool list changed")
    async def test_trigger_tool_change() -> str:
        await app.notify_tools_changed()
        return "The tool list changed"

    @app.tool(description="Tells listening clients that the prompt list changed")
    async def test_trigger_prompt_change() -> str:
        await app.notify_prompts_changed()
        return "The prompt list changed"

    @app.tool(description="Closes its SSE stream mid-call; the client resumes it")
    async def test_reconnection(ctx: Context) -> str:
        await ctx.close_sse_stream()
        return "Reconnection test completed"

    # --- tools that ask: dependencies (one handler for both eras) --------------------

    async def probe() -> Sample:
        return Sample("Say hello", max_tokens=10)

    @app.tool(description="Needs sampling, which the client must declare")
    def test_missing_capability(
        said: Annotated[CreateMessageResult, Resolve(probe, key="probe")],
    ) -> str:
        return "Success"

    async def ask_name() -> Elicit[Name]:
        return Elicit("What is your name?", Name)

    @app.tool(description="Asks the user's name (the manual form)")
    def test_input_required_result_elicitation(ctx: Context) -> str | InputRequiredResult:
        # The manual form, as a tool that keeps no state writes it: the answer is read by
        # its key, so a first call that already carries it completes (the suite's
        # ignore-extra-params scenario). A dependency would re-ask: the engine takes an
        # answer only for a question this call asked, pinned in its sealed state.
        user = _accepted((ctx.input_responses or {}).get("user_name"), Name)
        if user is not None:
            return f"Hello, {user.name}!"
        return InputRequiredResult(
            input_requests={"user_name": Elicit("What is your name?", Name).request()}
        )

    async def capital() -> Sample:
        return Sample("What is the capital of France?", max_tokens=100)

    @app.tool(description="Asks the client's model a question")
    def test_input_required_result_sampling(
        said: Annotated[CreateMessageResult, Resolve(capital, key="sample_request")],
    ) -> str:
        return f"Sampling result: {_sampled(said)}"

    async def roots() -> ListRoots:
        return ListRoots()

    @app.tool(description="Asks for the client's roots")
    def test_input_required_result_list_roots(
        found: Annotated[ListRootsResult, Resolve(roots, key="roots_request")],
    ) -> str:
        return f"Found {len(found.roots)} root(s)"

    async def please_confirm() -> Elicit[Confirm]:
        return Elicit("Please confirm", Confirm)

    @app.tool(description="Asks for a confirmation, keeping state")
    def test_input_required_result_request_state(
        ok: Annotated[Confirm, Resolve(please_confirm, key="confirm")],
    ) -> str:
        return "state-ok: requestState validated"

    @app.tool(description="Keeps a sealed state it verifies")
    def test_input_required_result_tampered_state(
        ok: Annotated[Confirm, Resolve(please_confirm, key="confirm")],
    ) -> str:
        return "integrity-ok: state verified"

    async def greeting() -> Sample:
        return Sample("Generate a greeting", max_tokens=50)

    @app.tool(description="Asks three things in one round")
    def test_input_required_result_multiple_inputs(
        user: Annotated[Name, Resolve(ask_name, key="user_name")],
        said: Annotated[CreateMessageResult, Resolve(greeting, key="greeting")],
        found: Annotated[ListRootsResult, Resolve(roots, key="client_roots")],
    ) -> str:
        text = _sampled(said)
        return f"Name: {user.name}; Greeting: {text}; Roots: {len(found.roots)}"

    async def step1() -> Elicit[Name]:
        return Elicit("Step 1: What is your name?", Name)

    async def step2(user: Annotated[Name, Resolve(step1)]) -> Elicit[Color]:
        return Elicit("Step 2: What is your favorite color?", Color)

    @app.tool(description="Asks two things in two rounds")
    def test_input_required_result_multi_round(
        user: Annotated[Name, Resolve(step1)], color: Annotated[Color, Resolve(step2)]
    ) -> str:
        return f"Multi-round complete for {user.name} who likes {color.color}"

    async def elicit_if_declared(ctx: Context) -> Elicit[Value] | None:
        caps = ctx.client_capabilities
        return Elicit("Elicitation input", Value) if caps and caps.elicitation else None

    async def sample_if_declared(ctx: Context) -> Sample | None:
        caps = ctx.client_capabilities
        return Sample("Sample request", max_tokens=50) if caps and caps.sampling else None

    @app.tool(description="Asks only what the client can answer")
    def test_input_required_result_capabilities(
        elicited: Annotated[Any, Resolve(elicit_if_declared, key="elicit_input")],
        sampled: Annotated[Any, Resolve(sample_if_declared, key="sample_input")],
    ) -> str:
        received = [
            k for k, v in (("elicit_input", elicited), ("sample_input", sampled)) if v is not None
        ]
        if not received:
            return "No supported capabilities declared"
        return f"capabilities-ok: received {','.join(received)}"

    # the legacy scenarios (they ask through the back-channel; the same code serves 2026)

    async def ask_model(prompt: str) -> Sample:
        return Sample(prompt, max_tokens=100)

    @app.tool(description="Asks the client's model (legacy: sampling/createMessage)")
    def test_sampling(prompt: str, said: Annotated[CreateMessageResult, Resolve(ask_model)]) -> str:
        return f"LLM response: {_sampled(said)}"

    async def ask_user(message: str) -> Elicit[User]:
        return Elicit(message, User)

    def content_of(answer: Any) -> str:
        if isinstance(answer, AcceptedElicitation):
            return json.dumps(answer.data.model_dump(exclude_none=True))
        return "{}"

    @app.tool(description="Asks the user (legacy: elicitation/create)")
    def test_elicitation(
        message: str, answer: Annotated[ElicitationResult[User], Resolve(ask_user)]
    ) -> str:
        return f"User response: action={answer.action}, content={content_of(answer)}"

    @app.tool(description="Asks with defaults for every primitive type")
    async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
        answer = await ctx.ask(Elicit("Please review the defaults", Defaults, key="defaults"))
        return f"Elicitation completed: action={answer.action}, content={content_of(answer)}"

    @app.tool(description="Asks with every kind of enum")
    async def test_elicitation_sep1330_enums(ctx: Context) -> str:
        answer = await ctx.ask(Elicit("Please pick some options", Enums, key="enums"))
        return f"Elicitation completed: action={answer.action}, content={content_of(answer)}"

    # --- resources --------------------------------------------------------------------

    @app.resource("test://static-text", name="static-text", mime_type="text/plain")
    def static_text() -> str:
        return "This is the content of the static text resource."

    @app.resource("test://static-binary", name="static-binary", mime_type="image/png")
    def static_binary() -> bytes:
        import base64

        return base64.b64decode(IMAGE)

    @app.resource("test://watched-resource", name="watched-resource", mime_type="text/plain")
    def watched() -> str:
        return "Watched resource content"

    @app.resource("test://template/{id}/data", name="template", mime_type="application/json")
    def template(id: str) -> str:
        return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})

    # --- prompts ----------------------------------------------------------------------

    @app.prompt(description="A prompt without arguments")
    def test_simple_prompt() -> str:
        return "This is a simple prompt for testing."

    @app.prompt(description="A prompt with two required arguments")
    def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
        return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"

    @app.prompt(description="A prompt embedding a resource")
    def test_prompt_with_embedded_resource(resourceUri: str) -> list[PromptMessage]:
        resource = TextResourceContents(
            uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
        )
        return [
            PromptMessage(
                role="user", content=EmbeddedResource(type="resource", resource=resource)
            ),
            PromptMessage(
                role="user", content=_text("Please process the embedded resource above.")
            ),
        ]

    @app.prompt(description="A prompt with an image")
    def test_prompt_with_image() -> list[PromptMessage]:
        return [
            PromptMessage(
                role="user", content=ImageContent(type="image", data=IMAGE, mime_type="image/png")
            ),
            PromptMessage(role="user", content=_text("Please analyze the image above.")),
        ]

    async def ask_context() -> Elicit[Context_]:
        return Elicit("What context should the prompt use?", Context_)

    @app.prompt(description="Asks for context before it renders")
    def test_input_required_result_prompt(
        given: Annotated[Context_, Resolve(ask_context, key="user_context")],
    ) -> str:
        return f"Prompt with context: {given.context}"

    @app.completion()
    def complete(ref: Any, argument: Any, context: Any) -> list[str]:
        known = {"arg1": ["alpha", "beta"], "arg2": ["gamma", "delta"]}.get(argument.name, [])
        return [value for value in known if value.startswith(argument.value)]

    return app


def _tasks(app: MCPServer) -> None:
    """The Tasks extension's fixtures (the ``tasks-*`` scenarios, SEP-2663)."""

    @app.tool(description="Greets by name, at once (never a task)")
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    @app.tool(
        description="Sleeps, then answers; a task for a client that allows one", task="optional"
    )
    async def slow_compute(seconds: float = 1.0, label: str = "") -> str:
        await anyio.sleep(seconds)
        return f"Computed {label or 'result'} after {seconds}s"

    @app.tool(description="Fails as a tool (isError), only as a task", task="required")
    async def failing_job() -> str:
        await anyio.sleep(1)
        raise ToolError("the job failed")

    @app.tool(description="Fails with a protocol error, as a task", task="optional")
    async def protocol_error_job() -> str:
        raise MCPError(-32603, "the job crashed")

    @app.tool(description="Asks for a confirmation mid-task", task="optional")
    async def confirm_delete(filename: str, ctx: Context) -> str:
        answer = await ctx.ask(Elicit(f"Delete {filename}?", ConfirmDelete, key="confirm"))
        if isinstance(answer, AcceptedElicitation) and answer.data.confirm:
            return f"Deleted {filename}"
        return f"Kept {filename}"

    @app.tool(description="Asks two things at once mid-task", task="optional")
    async def multi_input(ctx: Context) -> str:
        first, second = await ctx.ask_all(
            Elicit("First name?", NamedConfirm, key="first"),
            Elicit("Second name?", NamedConfirm, key="second"),
        )
        return f"Got {first.data.name} and {second.data.name}"

    async def ask_user_name() -> Elicit[Name]:
        return Elicit("What is your name?", Name)

    @app.tool(description="Asks a name (multi-round), then runs as a task", task="required")
    async def test_tool_with_task(
        user: Annotated[Name, Resolve(ask_user_name, key="user_name")],
    ) -> str:
        return f"Hello, {user.name}! (from a task)"


def main(argv: list[str] | None = None) -> None:
    """Serve on 127.0.0.1 and print the URL once listening."""
    import uvicorn

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(128)
    port = sock.getsockname()[1]
    asgi = build().streamable_http_app()
    config = uvicorn.Config(asgi, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    print(f"http://127.0.0.1:{port}/mcp", flush=True)
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
