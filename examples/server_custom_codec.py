"""Bring your own crypto: a request-state codec over a KMS-unwrapped data key.

    python examples/server_custom_codec.py             # stdio
    python examples/server_custom_codec.py --http 8000

A codec only seals and unseals bytes; the library still stamps and checks the expiry,
the request (method, name, arguments), the principal and the audience around it. The
classic shape is envelope encryption: unwrap a data key once at start-up (one KMS call),
then every token is local AES-GCM. The rules this codec follows:

- a format prefix ("kms1.") fed to AES-GCM as associated data, so it is bound under the tag;
- only the exact string ``seal`` produced opens (canonical hex, re-encoded and compared);
- anything it did not mint raises `InvalidRequestState` (the client sees the frozen error).
"""

from __future__ import annotations

import os
import sys

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from mrtr.server import InvalidRequestState, RequestStateSecurity, Server, ServerRequestContext
from mrtr.types import (
    CallToolRequestParams,
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)

FORMAT = "kms1."


def unwrap_data_key() -> bytes:
    """Stand-in for ``kms.decrypt(CiphertextBlob=...)`` at start-up."""
    return os.urandom(32)


class EnvelopeCodec:
    """AES-256-GCM under a data key unwrapped once; tokens are ``kms1.<hex>``."""

    def __init__(self, data_key: bytes) -> None:
        self._aead = AESGCM(data_key)

    def seal(self, payload: bytes) -> str:
        nonce = os.urandom(12)
        return FORMAT + (nonce + self._aead.encrypt(nonce, payload, FORMAT.encode())).hex()

    def unseal(self, token: str) -> bytes:
        if not token.startswith(FORMAT):
            raise InvalidRequestState("unknown token format")
        body = token[len(FORMAT) :]
        try:
            raw = bytes.fromhex(body)
            if raw.hex() != body:
                raise ValueError("non-canonical hex")
            return self._aead.decrypt(raw[:12], raw[12:], FORMAT.encode())
        except (ValueError, InvalidTag) as exc:
            raise InvalidRequestState("token failed verification") from exc


CONFIRM = ElicitRequest(
    params=ElicitRequestFormParams(
        message="Deploy to production?",
        requested_schema={"type": "object", "properties": {"confirm": {"type": "boolean"}}},
    )
)


async def list_tools(
    ctx: ServerRequestContext, params: PaginatedRequestParams | None
) -> ListToolsResult:
    return ListToolsResult(
        tools=[
            Tool(
                name="deploy",
                description="Deploys after confirmation.",
                input_schema={"type": "object"},
            )
        ]
    )


async def call_tool(
    ctx: ServerRequestContext, params: CallToolRequestParams
) -> CallToolResult | InputRequiredResult:
    answer = (ctx.input_responses or {}).get("confirm")
    if not isinstance(answer, ElicitResult):
        return InputRequiredResult(input_requests={"confirm": CONFIRM}, request_state="deploy:prod")
    confirmed = answer.action == "accept" and bool((answer.content or {}).get("confirm"))
    text = f"{ctx.request_state}: {'deployed' if confirmed else 'cancelled'}"
    return CallToolResult(content=[TextContent(type="text", text=text)])


server = Server(
    "Deployer",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    request_state_security=RequestStateSecurity(codec=EnvelopeCodec(unwrap_data_key())),
)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--http"]:
        server.run_http(port=int(argv[1]) if len(argv) > 1 else 8000)
    else:
        server.run_stdio()


if __name__ == "__main__":
    main(sys.argv[1:])
