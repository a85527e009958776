"""A `Client`'s settings: checked when it is made, turned into a transport and a session.

The settings are read at different times (some on open, some on every call), so they
are checked once, up front, and may not change after the client opens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mrtr._client_requests import check_positive
from mrtr.transports._target import transport_for
from mrtr.types._constants import MODERN_PROTOCOL_VERSIONS

if TYPE_CHECKING:
    from mrtr.client import Client
    from mrtr.session import ClientSession
    from mrtr.transports import Transport

__all__ = ["check_settings", "make_session", "make_transport"]


def check_settings(client: Client) -> None:
    """Refuse an unknown mode, or a limit that is not positive.

    Raises:
        ValueError: the first setting found wrong.
    """
    if client.mode not in ("auto", "legacy") and client.mode not in MODERN_PROTOCOL_VERSIONS:
        raise ValueError(
            f"mode must be 'auto', 'legacy' or one of {', '.join(MODERN_PROTOCOL_VERSIONS)}; "
            f"got {client.mode!r}"
        )
    rounds = client.input_required_max_rounds
    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 0:
        raise ValueError("input_required_max_rounds must be a non-negative int")
    check_positive("read_timeout_seconds", client.read_timeout_seconds)
    check_positive("call_timeout", client.call_timeout)
    check_positive("max_message_size", client.max_message_size)
    check_positive("probe_timeout", client.probe_timeout)
    check_positive("pause_ttl", client.pause_ttl)


def make_transport(client: Client) -> Transport:
    """The transport the client's target and HTTP settings ask for (not yet entered)."""
    return transport_for(
        client.target,
        max_message_size=client.max_message_size,
        headers=client.headers,
        auth=client.auth,
        http_client=client.http_client,
    )


def make_session(client: Client, transport: Transport) -> ClientSession:
    """The session over `transport` with the client's callbacks (not yet entered).

    ``from mrtr import Client`` leaves the session and the call machinery out, so that a
    stdio server is spawned sooner; they load here, once the transport is open, while
    the server starts up. Loading `_calls` (the driver, tracing) now, before the session
    builds its first wire models rather than on the first call, keeps the peak RSS where
    it was when they loaded with the client (after the models they cost ~0.3 MiB more).
    """
    import mrtr._calls  # noqa: F401  # loaded now for what it loads, not for a name
    from mrtr.session import ClientSession

    return ClientSession(
        transport,
        client_info=client.client_info,
        elicitation_callback=client.elicitation_callback,
        elicitation_url_mode=client.elicitation_url_mode,
        sampling_callback=client.sampling_callback,
        sampling_tools=client.sampling_tools,
        list_roots_callback=client.list_roots_callback,
        logging_callback=client.logging_callback,
        log_level=client.log_level,
        message_handler=client.message_handler,
        change_callback=client.change_callback,
        read_timeout_seconds=client.read_timeout_seconds,
        capabilities=client.capabilities,
    )
