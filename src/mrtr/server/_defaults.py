"""The serving defaults the `Server` signatures name and the shells apply.

Here, in a module that imports nothing, so that `_server` (the signatures) and the
shells (`_stream`, `_http`) share them without importing each other.
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_MAX_CLIENT_INFO_BYTES",
    "DEFAULT_MAX_CONCURRENT_REQUESTS",
    "DEFAULT_MAX_LISTENERS_PER_CLIENT",
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_MAX_SESSIONS_PER_CLIENT",
    "DEFAULT_MAX_URI_LENGTH",
    "DEFAULT_SESSION_IDLE_TIMEOUT",
    "DEFAULT_TASK_MAX_INPUT_BYTES",
    "DEFAULT_TASK_MAX_LIVE",
    "DEFAULT_TASK_MAX_LIVE_PER_PRINCIPAL",
    "DEFAULT_TASK_MAX_RESULT_BYTES",
    "DEFAULT_TASK_MAX_ROUNDS",
    "DEFAULT_TASK_POLL_INTERVAL_MS",
    "DEFAULT_TASK_TTL_MS",
]

DEFAULT_MAX_CONCURRENT_REQUESTS = 256
DEFAULT_MAX_SESSIONS = 10_000
DEFAULT_SESSION_IDLE_TIMEOUT = 1800.0
DEFAULT_BODY_TIMEOUT = 30.0

# the Tasks extension (`mrtr.server.TaskRunner`)
DEFAULT_TASK_TTL_MS = 3_600_000  # a task (and its result) is kept an hour from creation
DEFAULT_TASK_POLL_INTERVAL_MS = 500  # the poll interval suggested to clients
DEFAULT_TASK_MAX_LIVE_PER_PRINCIPAL = 100  # unfinished tasks one principal may hold
DEFAULT_TASK_MAX_LIVE = 10_000  # unfinished tasks the whole server holds
DEFAULT_TASK_MAX_INPUT_BYTES = 256 * 1024  # one tasks/update's inputResponses, as JSON
DEFAULT_TASK_MAX_RESULT_BYTES = 4 * 1024 * 1024  # one task's result, as JSON
DEFAULT_TASK_MAX_ROUNDS = 64  # input rounds one task may ask
DEFAULT_MAX_URI_LENGTH = 8 * 1024
"""Characters of the longest URI an `MCPServer` looks up (``resources/read``)."""
DEFAULT_MAX_SESSIONS_PER_CLIENT = 256
"""Legacy HTTP sessions one client (a principal, or an anonymous remote address) holds."""
DEFAULT_MAX_LISTENERS_PER_CLIENT = 64
"""Change listeners one client (a principal, an anonymous address, a stream) holds."""
DEFAULT_MAX_CLIENT_INFO_BYTES = 64 * 1024
"""Characters (as JSON) of the capabilities and client info a legacy session keeps."""
