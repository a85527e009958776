"""Validate what the client sends against the official MCP JSON schema of a version.

The schemas are copies of the official ones kept in `tests/spec/<version>/schema.json`
(see the README there). Each message is checked against the most
specific definition known: `CallToolRequest` for a `tools/call` request, `ElicitResult`
for the answer to an `elicitation/create`, and so on.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from jsonschema import validators
from jsonschema.exceptions import best_match
from jsonschema.protocols import Validator

SPEC_DIR = Path(__file__).resolve().parents[1] / "spec"

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"

# the definition of the result a client returns for each server-to-client request
_SERVER_REQUEST_RESULTS = {
    "elicitation/create": "ElicitResult",
    "sampling/createMessage": "CreateMessageResult",
    "roots/list": "ListRootsResult",
    "ping": "EmptyResult",
}


@functools.cache
def _schema(version: str) -> dict[str, Any]:
    """Load a version's schema and check it against its metaschema, once per version."""
    path = SPEC_DIR / version / "schema.json"
    if not path.is_file():
        raise AssertionError(f"no official schema for protocol version {version!r} at {path}")
    with path.open(encoding="utf-8") as file:
        schema: dict[str, Any] = json.load(file)
    validators.validator_for(schema).check_schema(schema)
    return schema


@functools.cache
def _validator(version: str, definition: str) -> Validator:
    schema = _schema(version)
    if definition not in schema["$defs"]:
        raise AssertionError(f"schema {version} has no definition {definition!r}")
    root = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{definition}"}
    return validators.validator_for(root)(root)  # the definitions were checked in _schema


def _union_members(version: str, union: str) -> list[str]:
    spec = _schema(version)["$defs"][union]
    options = spec.get("anyOf", [spec]) if "$ref" not in spec else [spec]
    names = []
    for option in options:
        ref = option.get("$ref")
        names.append(ref.rsplit("/", 1)[-1] if ref else union)
    return names


@functools.cache
def _methods(version: str, union: str) -> dict[str, str]:
    """Map each method in a union of requests or notifications to its definition."""
    defs = _schema(version)["$defs"]
    found = {}
    for name in _union_members(version, union):
        method = defs[name].get("properties", {}).get("method", {}).get("const")
        if isinstance(method, str):
            found[method] = name
    return found


def _check(message: dict[str, Any], version: str, definition: str, what: str) -> None:
    error = best_match(_validator(version, definition).iter_errors(message))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "(top level)"
        raise AssertionError(
            f"{what} does not match {definition} of schema {version}: {error.message} "
            f"at {where}\nmessage: {json.dumps(message, sort_keys=True)[:2000]}"
        )


def _definition_for(
    message: dict[str, Any], version: str, request_method: str | None
) -> tuple[str, str]:
    method = message.get("method")
    if isinstance(method, str) and "id" in message:
        definition = _methods(version, "ClientRequest").get(method)
        if definition is None:
            raise AssertionError(f"{method!r} is not a client request in protocol {version}")
        return definition, f"request {method!r}"
    if isinstance(method, str):
        definition = _methods(version, "ClientNotification").get(method)
        if definition is None:
            raise AssertionError(f"{method!r} is not a client notification in protocol {version}")
        return definition, f"notification {method!r}"
    if "error" in message:
        return "JSONRPCErrorResponse", "error response"
    return "JSONRPCResultResponse", f"response to {request_method or 'a server request'}"


def validate_client_message(
    message: dict[str, Any], version: str, *, request_method: str | None = None
) -> None:
    """Assert that `message`, sent by a client, is valid in protocol `version`.

    Args:
        message: one JSON-RPC message as sent (request, notification or response).
        version: the negotiated protocol version (`"2026-07-28"`, `"2025-11-25"`, ...).
        request_method: for a response, the method of the server request it answers,
            so its result is checked against that method's result definition.

    Raises:
        AssertionError: the message does not validate, uses a method the client may not
            send in that version, or (modern versions) its `_meta` names another version.
    """
    if not isinstance(message, dict):
        raise AssertionError(f"a JSON-RPC message must be an object, got {type(message).__name__}")
    definition, what = _definition_for(message, version, request_method)
    _check(message, version, definition, what)
    if "result" in message and request_method is not None:
        result_definition = _SERVER_REQUEST_RESULTS.get(request_method)
        if result_definition is None:
            raise AssertionError(f"{request_method!r} is not a server-to-client request")
        _check(message["result"], version, result_definition, f"result of {request_method!r}")
    _check_meta_version(message, version, what)


def _check_meta_version(message: dict[str, Any], version: str, what: str) -> None:
    if "InitializeRequest" in _schema(version)["$defs"] or "id" not in message:
        return  # legacy era, or not a request: no per-request envelope
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    declared = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    if "method" in message and declared != version:
        raise AssertionError(
            f"{what} declares protocol version {declared!r} in _meta, expected {version!r}"
        )
