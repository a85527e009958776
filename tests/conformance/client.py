"""The client the official MCP conformance suite runs: `python client.py <server-url>`.

The suite (`@modelcontextprotocol/conformance`, client mode) starts a mock server for one
scenario and runs this script with the server's URL as the last argument and two
environment variables: `MCP_CONFORMANCE_SCENARIO` (which scenario) and
`MCP_CONFORMANCE_PROTOCOL_VERSION` (the era to speak: dated versions up to 2025-11-25
handshake with `initialize`, 2026-07-28 is stateless). Some scenarios also pass
`MCP_CONFORMANCE_CONTEXT` (JSON, e.g. the tool calls to make).

Each scenario has a function below that does what its mock server watches for, using
only mrtr's public API. Every `auth/*` scenario connects through `mrtr.auth.OAuth`, with
the grant its context calls for (`oauth_for`). An unknown scenario gets the default:
connect, list and call every tool, read every resource, get every prompt. Any error
exits non-zero with a message on stderr (the suite keeps stderr in its results).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from mrtr import Client, ClientRequestContext, MRTRError
from mrtr.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    ListRootsResult,
    Root,
    TextContent,
)

log = logging.getLogger("mrtr.conformance")

SCENARIO_TIMEOUT = float(os.environ.get("MRTR_CONFORMANCE_CLIENT_TIMEOUT", "100"))
LEGACY_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

Scenario = Callable[[str, dict[str, Any]], Awaitable[None]]
SCENARIOS: dict[str, Scenario] = {}


def scenario(*names: str) -> Callable[[Scenario], Scenario]:
    def register(func: Scenario) -> Scenario:
        for name in names:
            SCENARIOS[name] = func
        return func

    return register


# --- what the user would answer ---------------------------------------------------------


def _value_for(schema: dict[str, Any]) -> Any:
    """A plausible value for one JSON Schema property: its default, else one of its type."""
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    samples: dict[str, Any] = {
        "string": "conformance",
        "integer": 1,
        "number": 1,
        "boolean": True,
        "object": {},
        "array": [],
        "null": None,
    }
    return samples.get(kind, "conformance") if isinstance(kind, str) else "conformance"


def _fill(schema: dict[str, Any], *, required_only: bool) -> dict[str, Any]:
    props: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    return {
        name: _value_for(prop if isinstance(prop, dict) else {})
        for name, prop in props.items()
        if not required_only or name in required
    }


async def on_elicit(ctx: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    """Accept every form, filling each field with its schema default (SEP-1034) or a sample."""
    log.info("elicitation for %s (round %s, key %s)", ctx.name, ctx.round, ctx.key)
    if isinstance(params, ElicitRequestFormParams):
        return ElicitResult(
            action="accept", content=_fill(params.requested_schema, required_only=False)
        )
    return ElicitResult(action="accept")


async def on_sample(
    ctx: ClientRequestContext, params: CreateMessageRequestParams
) -> CreateMessageResult:
    log.info("sampling for %s", ctx.name)
    return CreateMessageResult(
        role="assistant",
        content=TextContent(type="text", text="conformance sample"),
        model="conformance-model",
        stop_reason="endTurn",
    )


async def on_roots(ctx: ClientRequestContext) -> ListRootsResult:
    return ListRootsResult(roots=[Root(uri="file:///tmp/conformance", name="conformance")])


def connect(url: str, **kwargs: Any) -> Client:
    """A Client for the era the suite asked for, with every callback a user could give."""
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "2025-11-25")
    mode = os.environ.get("MRTR_CONFORMANCE_MODE") or (
        "legacy" if version in LEGACY_VERSIONS else version
    )
    options: dict[str, Any] = {
        "mode": mode,
        "elicitation_callback": on_elicit,
        "sampling_callback": on_sample,
        "list_roots_callback": on_roots,
    }
    options.update(kwargs)
    log.info("connecting to %s with mode=%s", url, mode)
    return Client(url, **options)


# --- scenarios --------------------------------------------------------------------------


async def exercise_everything(client: Client) -> None:
    """List and use every tool, resource and prompt the server offers."""
    for tool in (await client.list_tools()).tools:
        log.info("calling %s", tool.name)
        await client.call_tool(tool.name, _fill(tool.input_schema, required_only=True))
    for resource in (await client.list_resources()).resources:
        log.info("reading %s", resource.uri)
        await client.read_resource(resource.uri)
    for prompt in (await client.list_prompts()).prompts:
        log.info("getting prompt %s", prompt.name)
        await client.get_prompt(prompt.name, {})


@scenario("initialize")
async def run_initialize(url: str, context: dict[str, Any]) -> None:
    async with connect(url) as client:
        log.info("connected, protocol version %s", client.protocol_version)
        await client.list_tools()


@scenario("tools_call")
async def run_tools_call(url: str, context: dict[str, Any]) -> None:
    async with connect(url) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        if "add_numbers" not in names:
            raise SystemExit(f"tool add_numbers not listed (got {names})")
        result = await client.call_tool("add_numbers", {"a": 5, "b": 3})
        log.info("add_numbers -> %s", result.content)


@scenario("elicitation-sep1034-client-defaults")
async def run_elicitation_defaults(url: str, context: dict[str, Any]) -> None:
    async with connect(url) as client:
        await client.list_tools()
        result = await client.call_tool("test_client_elicitation_defaults", {})
        log.info("tool answered %s", result.content)


@scenario("sse-retry")
async def run_sse_retry(url: str, context: dict[str, Any]) -> None:
    async with connect(url) as client:
        await client.list_tools()
        result = await client.call_tool("test_reconnection", {})
        log.info("tool answered %s", result.content)


@scenario("request-metadata", "json-schema-ref-no-deref")
async def run_list_only(url: str, context: dict[str, Any]) -> None:
    async with connect(url) as client:
        tools = (await client.list_tools()).tools
        log.info("listed %d tools at %s", len(tools), client.protocol_version)


@scenario("http-standard-headers", "http-invalid-tool-headers")
async def run_everything(url: str, context: dict[str, Any]) -> None:
    async with connect(url) as client:
        await exercise_everything(client)


@scenario("http-custom-headers")
async def run_custom_headers(url: str, context: dict[str, Any]) -> None:
    calls = context.get("toolCalls") or []
    if not calls:
        raise SystemExit("MCP_CONFORMANCE_CONTEXT names no toolCalls")
    async with connect(url) as client:
        await client.list_tools()  # the x-mcp-header annotations come from the listing
        for call in calls:
            log.info("calling %s", call["name"])
            await client.call_tool(call["name"], call.get("arguments") or {})


@scenario("json-schema-2020-12-preservation")
async def run_schema_preservation(url: str, context: dict[str, Any]) -> None:
    async with connect(url) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        focal = tools.get("json_schema_2020_12_tool")
        if focal is None or "json_schema_echo" not in tools:
            raise SystemExit(f"expected tools not listed (got {sorted(tools)})")
        await client.call_tool("json_schema_echo", {"schema": focal.input_schema})


@scenario("sep-2322-client-request-state")
async def run_mrtr(url: str, context: dict[str, Any]) -> None:
    client_box: list[Client] = []
    unrelated_done = anyio.Event()

    async def elicit_then_call_unrelated(
        ctx: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        # Between the rounds of test_mrtr_echo_state, make an unrelated call: it must not
        # carry this flow's inputResponses or requestState.
        if ctx.name == "test_mrtr_echo_state" and not unrelated_done.is_set():
            await client_box[0].call_tool("test_mrtr_unrelated", {})
            unrelated_done.set()
        return await on_elicit(ctx, params)

    async with connect(url, elicitation_callback=elicit_then_call_unrelated) as client:
        client_box.append(client)
        await client.list_tools()
        for name in ("test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_no_result_type"):
            result = await client.call_tool(name, {})
            log.info("%s -> %s", name, result.content)
        if not unrelated_done.is_set():
            await client.call_tool("test_mrtr_unrelated", {})


# --- authorization (auth/*) -------------------------------------------------------------

CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
"""The client id the basic-cimd scenario expects (a constant the suite does not pass)."""


def oauth_for(name: str, context: dict[str, Any]) -> Any:
    """The `OAuth` a user of this kind of server would configure, from the suite's context."""
    from mrtr.auth import (
        AssertionContext,
        AuthorizationCode,
        ClientCredentials,
        ClientProfile,
        FollowRedirectAuthorizer,
        IdentityAssertion,
        JWTBearer,
        MemoryStore,
        OAuth,
        SigningKey,
        StaticClient,
        exchange_id_token,
    )

    grant: Any
    if name == "auth/client-credentials-basic":
        grant = ClientCredentials(context["client_id"], context["client_secret"])
    elif name == "auth/client-credentials-jwt":
        key = SigningKey(context["private_key_pem"], context.get("signing_algorithm") or "ES256")
        grant = ClientCredentials(context["client_id"], signing_key=key)
    elif name == "auth/enterprise-managed-authorization":

        async def id_jag(ctx: AssertionContext) -> str:
            return await exchange_id_token(
                ctx.http,
                token_endpoint=context["idp_token_endpoint"],
                id_token=context["idp_id_token"],
                client_id=context["idp_client_id"],
                audience=ctx.issuer,
                resource=ctx.resource,
                timeout=ctx.timeout,
            )

        grant = IdentityAssertion(
            id_jag, client_id=context["client_id"], client_secret=context["client_secret"]
        )
    elif name == "auth/wif-jwt-bearer":
        grant = JWTBearer(context["valid_jwt"], client_id=context.get("client_id"))
    else:
        static = None
        if "client_id" in context:
            static = StaticClient(context["client_id"], context.get("client_secret"))
        profile = ClientProfile(
            client_name="mrtr-conformance", client_metadata_url=CLIENT_METADATA_URL
        )
        # the redirect is delivered for real to a loopback listener (production code)
        grant = AuthorizationCode(FollowRedirectAuthorizer(loopback=True), profile, static)
    return OAuth(grant=grant, store=MemoryStore())


async def run_auth(url: str, context: dict[str, Any]) -> None:
    """Connect through OAuth, then list tools and call each (step-up and migration need it)."""
    name = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    async with connect(url, auth=oauth_for(name, context)) as client:
        for tool in (await client.list_tools()).tools:
            log.info("calling %s", tool.name)
            await client.call_tool(tool.name, _fill(tool.input_schema, required_only=True))


async def run_default(url: str, context: dict[str, Any]) -> None:
    async with connect(url) as client:
        await exercise_everything(client)


# --- entry point ------------------------------------------------------------------------


async def run(name: str, url: str, context: dict[str, Any]) -> None:
    func = SCENARIOS.get(name) or (run_auth if name.startswith("auth/") else None)
    if func is None:
        log.warning("unknown scenario %r: using the default (exercise everything)", name)
        func = run_default
    with anyio.fail_after(SCENARIO_TIMEOUT):
        await func(url, context)


def main(argv: list[str]) -> int:
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(name)s %(levelname)s %(message)s"
    )
    if len(argv) < 2:
        print("usage: client.py <server-url>", file=sys.stderr)
        return 2
    name = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    try:
        anyio.run(run, name, argv[-1], context)
    except (MRTRError, TimeoutError, OSError) as exc:
        traceback.print_exc()
        print(f"scenario {name!r} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
