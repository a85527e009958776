"""Envelope parsing and checks of the server core: one message's shape, one request's era.

`check_message` turns a raw JSON-RPC message into what the core dispatches on (or a
`HandlerError` for the error response). `EraGate` holds what one connection settled
about its era (a legacy ``initialize``, or the modern ``_meta`` envelope of its first
request), checks every later request against it, and yields each request's `Envelope`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, NamedTuple

from pydantic import ValidationError

from mrtr._wire.jsonrpc import Era
from mrtr.server._core._context import LOG_LEVELS
from mrtr.server._core._jsonrpc import HandlerError, JSONObject
from mrtr.types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    LEGACY_PROTOCOL_VERSIONS,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    MODERN_PROTOCOL_VERSIONS,
    SUPPORTED_PROTOCOL_VERSIONS,
    TASKS_EXTENSION,
    UNSUPPORTED_PROTOCOL_VERSION,
    ClientCapabilities,
    Implementation,
    InitializeRequestParams,
)
from mrtr.types._validation import first_errors

__all__ = [
    "accepts_tasks",
    "Envelope",
    "EnvelopeCache",
    "Era",
    "EraGate",
    "Incoming",
    "envelope_key",
    "check_message",
    "invalid_params",
    "is_modern",
    "request_id_of",
]


@dataclass(frozen=True, slots=True)
class Envelope:
    """The era facts of one request."""

    era: Era
    protocol_version: str
    capabilities: ClientCapabilities | None
    client_info: Implementation | None
    log_level: str | None


class Incoming(NamedTuple):
    """One checked message: a request (with an id) or a notification (without).

    A named tuple, not a frozen dataclass: one is built per message, and a tuple is the
    cheapest immutable value to build.
    """

    method: str
    params: dict[str, Any]
    request_id: str | int | None


def request_id_of(message: JSONObject) -> str | int | None:
    """The message's id when it is a valid one (a string or an integer)."""
    raw_id = message.get("id")
    return raw_id if isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool) else None


def check_message(message: JSONObject) -> Incoming | None:
    """Check one message's JSON-RPC shape.

    Returns:
        The request or notification, or ``None`` for a response (to a request the
        server sent the client: its back-channel settles it).

    Raises:
        HandlerError: an invalid request (-32600).
    """
    if message.get("jsonrpc") != "2.0":
        raise HandlerError(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    method = message.get("method")
    if not isinstance(method, str):
        if "result" in message or "error" in message:
            return None
        raise HandlerError(INVALID_REQUEST, 'Invalid Request: "method" must be a string')
    params = _ensure_object(message.get("params"), "Invalid Request: params")
    if "id" not in message:
        return Incoming(method, params, None)
    request_id = request_id_of(message)
    if request_id is None:
        raise HandlerError(INVALID_REQUEST, "Invalid Request: id must be a string or integer")
    return Incoming(method, params, request_id)


def invalid_params(method: str, exc: ValidationError) -> HandlerError:
    """The -32602 error for params that did not validate (first error only, no input)."""
    found = first_errors(exc, 1)  # never all of them: a peer may send a million wrong items
    first = found[0] if found else {"loc": (), "msg": "invalid"}
    where = ".".join(str(part) for part in first.get("loc", ())) or "params"
    return HandlerError(
        INVALID_PARAMS,
        f"Invalid params for {method}: {where}: {first.get('msg')}",
        {"errors": exc.error_count()},
    )


def _ensure_object(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise HandlerError(INVALID_REQUEST, f"{what} must be a JSON object")
    return value


def is_modern(params: dict[str, Any]) -> bool:
    """Whether a request carries the modern ``_meta`` envelope."""
    meta = params.get("_meta")
    return isinstance(meta, dict) and META_PROTOCOL_VERSION in meta


def accepts_tasks(caps: ClientCapabilities | None) -> bool:
    """Whether a request's client capabilities declare the Tasks extension."""
    extensions = None if caps is None else caps.extensions
    return extensions is not None and TASKS_EXTENSION in extensions


EnvelopeKey = tuple[Any, str, str, str]
"""What an envelope is validated from: the version, and the ``repr`` of the log level,
the capabilities and the client info as they came (exact: ``repr`` tells ``1`` from
``True`` and ``1.0``, which ``==`` does not)."""

_ENVELOPES_KEPT = 8
_ENVELOPE_KEY_MAX = 16 * 1024  # characters of a key worth keeping (an honest one: hundreds)


class EnvelopeCache:
    """The modern envelopes that passed validation lately, shared by a server's connections.

    A client sends the same envelope on every request, and over HTTP every modern POST
    is a fresh connection: looking the raw JSON up among the envelopes that passed
    lately is much cheaper than validating it again (the models are frozen, so sharing
    them between requests and connections is safe). A validated envelope depends on
    nothing but its key, so a hit is exactly what validating would have returned.
    Bounded: the `_ENVELOPES_KEPT` most recently used keys, none of more than
    `_ENVELOPE_KEY_MAX` characters (a client could otherwise park eight envelopes of the
    message size in a cache every client shares; a larger one is validated every time).
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[EnvelopeKey, Envelope] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: EnvelopeKey) -> Envelope | None:
        """The envelope validated from this key, if it is kept."""
        return self._entries.get(key)

    def put(self, key: EnvelopeKey, envelope: Envelope) -> None:
        """Keep one validated envelope (dropping the oldest beyond the bound)."""
        entries = self._entries
        if len(key[1]) + len(key[2]) + len(key[3]) > _ENVELOPE_KEY_MAX:
            return
        if key not in entries and len(entries) >= _ENVELOPES_KEPT:
            del entries[next(iter(entries))]
        entries[key] = envelope


def envelope_key(meta: dict[str, Any]) -> EnvelopeKey:
    """The cache key of a modern ``_meta`` envelope."""
    version = meta.get(META_PROTOCOL_VERSION)
    return (
        version if isinstance(version, str) else repr(version),
        repr(meta.get(META_LOG_LEVEL)),
        repr(meta.get(META_CLIENT_CAPABILITIES)),
        repr(meta.get(META_CLIENT_INFO)),
    )


class EraGate:
    """What one connection settled about its era; checks each request against it.

    A stream connection (stdio, in-memory) settles its era with its first request: a
    request carrying the modern ``_meta`` envelope makes it modern, ``initialize`` makes
    it legacy, and the other era is then refused.

    Args:
        envelopes: validated modern envelopes shared with the server's other
            connections (a fresh cache of its own when not given).
    """

    def __init__(self, envelopes: EnvelopeCache | None = None) -> None:
        self.era: Era | None = None
        self.legacy_version: str | None = None
        self._legacy_capabilities: ClientCapabilities | None = None
        self._legacy_client_info: Implementation | None = None
        self._legacy_log_level: str = "debug"
        self._envelopes = EnvelopeCache() if envelopes is None else envelopes

    def envelope(self, method: str, params: dict[str, Any]) -> Envelope:
        """The era facts of one request.

        Raises:
            HandlerError: the request's era is not this connection's, or its envelope
                is invalid (unsupported version, bad capabilities or info, ...).
        """
        meta = params.get("_meta")
        if isinstance(meta, dict) and META_PROTOCOL_VERSION in meta:
            return self._modern_envelope(meta)
        if self.legacy_version is None:
            raise HandlerError(
                INVALID_PARAMS,
                f"Invalid params: {method} carries no protocol version; send initialize "
                f"first, or put {META_PROTOCOL_VERSION} in params._meta",
            )
        return Envelope(
            "legacy",
            self.legacy_version,
            self._legacy_capabilities,
            self._legacy_client_info,
            self._legacy_log_level,
        )

    def _modern_envelope(self, meta: dict[str, Any]) -> Envelope:
        # a modern envelope on a legacy connection is refused by validation, never cached
        key = envelope_key(meta)
        if self.era != "legacy":
            envelope = self._envelopes.get(key)
            if envelope is not None:
                self.era = "modern"
                return envelope
        envelope = self._validate_envelope(meta)
        self._envelopes.put(key, envelope)
        return envelope

    def _validate_envelope(self, meta: dict[str, Any]) -> Envelope:
        version = meta.get(META_PROTOCOL_VERSION)
        if self.era == "legacy":
            raise HandlerError(
                INVALID_REQUEST,
                "Invalid Request: this connection negotiated a legacy version with initialize; "
                "requests on it must not carry the modern _meta envelope",
            )
        if version not in MODERN_PROTOCOL_VERSIONS:
            raise HandlerError(
                UNSUPPORTED_PROTOCOL_VERSION,
                f"Unsupported protocol version: {version!r}",
                {"supported": list(SUPPORTED_PROTOCOL_VERSIONS), "requested": str(version)},
            )
        if META_CLIENT_CAPABILITIES not in meta:
            raise HandlerError(
                INVALID_PARAMS, f"Invalid params: _meta lacks {META_CLIENT_CAPABILITIES}"
            )
        try:
            capabilities = ClientCapabilities.model_validate(meta[META_CLIENT_CAPABILITIES])
            raw_info = meta.get(META_CLIENT_INFO)
            info = None if raw_info is None else Implementation.model_validate(raw_info)
        except ValidationError as exc:
            raise invalid_params("_meta", exc) from None
        level = meta.get(META_LOG_LEVEL)
        if level is not None and level not in LOG_LEVELS:
            raise HandlerError(INVALID_PARAMS, f"Invalid params: unknown log level {level!r}")
        self.era = "modern"
        return Envelope("modern", str(version), capabilities, info, level)

    def initialize(self, params: dict[str, Any], *, max_bytes: int | None = None) -> str:
        """Settle the legacy era from an ``initialize`` request; return the version chosen.

        The capabilities and client info are kept for the connection's life: past
        ``max_bytes`` characters of them (as JSON) the request is refused.

        Raises:
            HandlerError: the connection is modern, the params are invalid, or too large.
        """
        if self.era == "modern":
            requested = params.get("protocolVersion")
            raise HandlerError(
                UNSUPPORTED_PROTOCOL_VERSION,
                "this connection serves the modern protocol; initialize is not accepted",
                {"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": str(requested)},
            )
        if max_bytes is not None:
            size = sum(
                len(json.dumps(params.get(member), separators=(",", ":")))
                for member in ("capabilities", "clientInfo")
            )
            if size > max_bytes:
                raise HandlerError(
                    INVALID_PARAMS,
                    f"Invalid params: initialize's capabilities and clientInfo hold {size} "
                    f"characters, more than the {max_bytes} a session keeps",
                    {"maxClientInfoBytes": max_bytes},
                )
        try:
            init = InitializeRequestParams.model_validate(params)
        except ValidationError as exc:
            raise invalid_params("initialize", exc) from None
        requested = init.protocol_version
        version = (
            requested if requested in LEGACY_PROTOCOL_VERSIONS else LEGACY_PROTOCOL_VERSIONS[0]
        )
        self.era = "legacy"
        self.legacy_version = version
        self._legacy_capabilities = init.capabilities
        self._legacy_client_info = init.client_info
        return version

    def set_level(self, params: dict[str, Any]) -> JSONObject:
        """Answer a legacy ``logging/setLevel``.

        Raises:
            HandlerError: an unknown level.
        """
        level = params.get("level")
        if level not in LOG_LEVELS:
            raise HandlerError(INVALID_PARAMS, f"Invalid params: unknown log level {level!r}")
        self._legacy_log_level = str(level)
        return {}
