"""The serving defaults the `Server` signatures name and the shells apply.

Here, in a module that imports nothing, so that `_server` (the signatures) and the rooms
below it (`_core`, `_stream`, `_http`) share them without importing each other.
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_BUS_MAX_BUFFER",
    "DEFAULT_BUS_MAX_CHANGE_BYTES",
    "DEFAULT_BUS_MAX_STREAM_LENGTH",
    "DEFAULT_CLIENT_REQUEST_TIMEOUT",
    "DEFAULT_HTTP_DRAIN",
    "DEFAULT_LAMBDA_SHUTDOWN_TIMEOUT",
    "DEFAULT_EVENT_STORE_MAX_BYTES",
    "DEFAULT_EVENT_TTL",
    "DEFAULT_LEGACY_SHIM_MAX_ROUNDS",
    "DEFAULT_MAX_CLIENT_INFO_BYTES",
    "DEFAULT_MAX_CLIENT_REQUESTS",
    "DEFAULT_MAX_CONCURRENT_REQUESTS",
    "DEFAULT_MAX_EVENTS_PER_STREAM",
    "DEFAULT_MAX_JSON_DEPTH",
    "DEFAULT_MAX_LISTENERS",
    "DEFAULT_MAX_LISTENERS_PER_CLIENT",
    "DEFAULT_MAX_PENDING_EVENTS",
    "DEFAULT_MAX_RESOURCE_SUBSCRIPTIONS",
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_MAX_SESSIONS_PER_CLIENT",
    "DEFAULT_MAX_STATE_BYTES",
    "DEFAULT_MAX_STREAMS",
    "DEFAULT_MAX_SUBSCRIPTION_BYTES",
    "DEFAULT_MAX_URI_LENGTH",
    "DEFAULT_LEG_MAX_MARKS",
    "DEFAULT_REPLAY_ANSWER_MAX_BYTES",
    "DEFAULT_REPLAY_RUNNING_LEASE",
    "DEFAULT_REPLAY_STORE_MAX_BYTES",
    "DEFAULT_SESSION_IDLE_TIMEOUT",
    "DEFAULT_SSE_RETRY_MS",
    "DEFAULT_STREAM_STALL_TIMEOUT",
    "DEFAULT_TASK_MAX_INPUT_BYTES",
    "DEFAULT_TASK_MAX_LIVE",
    "DEFAULT_TASK_MAX_LIVE_PER_PRINCIPAL",
    "DEFAULT_TASK_MAX_RESULT_BYTES",
    "DEFAULT_TASK_MAX_ROUNDS",
    "DEFAULT_TASK_POLL_INTERVAL_MS",
    "DEFAULT_TASK_TTL_MS",
    "DEFAULT_WORKER_DRAIN",
    "DEFAULT_WORKER_LEASE",
    "DEFAULT_WORKER_MAX_TASKS",
    "DEFAULT_WORKER_POLL_INTERVAL",
]

DEFAULT_MAX_CONCURRENT_REQUESTS = 256
DEFAULT_MAX_SESSIONS = 10_000
DEFAULT_SESSION_IDLE_TIMEOUT = 1800.0
DEFAULT_BODY_TIMEOUT = 30.0
DEFAULT_MAX_JSON_DEPTH = 256
"""Objects and arrays one incoming message may nest (-32700 beyond, on every Python).

Far below where any Python's parser gives up (near 1,000 on 3.10 and 3.11), so the cap,
not the version, decides; and far above what a request needs (tool arguments nest a
few levels), while code that walks a value recursively still has room below it.
"""

# the Tasks extension (`mrtr.server.TaskRunner`)
DEFAULT_TASK_TTL_MS = 3_600_000  # a task (and its result) is kept an hour from creation
DEFAULT_TASK_POLL_INTERVAL_MS = 500  # the poll interval suggested to clients
DEFAULT_TASK_MAX_LIVE_PER_PRINCIPAL = 100  # unfinished tasks one principal may hold
DEFAULT_TASK_MAX_LIVE = 10_000  # unfinished tasks the whole server holds
DEFAULT_TASK_MAX_INPUT_BYTES = 256 * 1024  # one tasks/update's inputResponses, as JSON
DEFAULT_TASK_MAX_RESULT_BYTES = 4 * 1024 * 1024  # one task's result, as JSON
DEFAULT_TASK_MAX_ROUNDS = 64  # input rounds one task may ask

# task workers (`mrtr.server.TaskWorker`, ``mrtr worker``)
DEFAULT_WORKER_LEASE = 15.0  # seconds a claim lasts unrenewed: a dead worker's tasks move then
DEFAULT_WORKER_POLL_INTERVAL = 0.2  # seconds between looks for tasks, answers, cancellations
DEFAULT_WORKER_MAX_TASKS = 32  # bodies one worker runs at once
DEFAULT_HTTP_DRAIN = 10.0  # seconds an HTTP server on SIGTERM waits for its legs, probed 503
# seconds a Lambda invocation's app lifespan may take to end after its response (a
# bus's flush takes at most its block_ms, 1 s by default)
DEFAULT_LAMBDA_SHUTDOWN_TIMEOUT = 5.0
DEFAULT_WORKER_DRAIN = 10.0  # seconds a stopping worker lets its bodies finish
DEFAULT_MAX_URI_LENGTH = 8 * 1024
"""Characters of the longest URI an `MCPServer` looks up (``resources/read``)."""
DEFAULT_MAX_SESSIONS_PER_CLIENT = 256
"""Legacy HTTP sessions one client (a principal, or an anonymous remote address) holds."""
DEFAULT_MAX_LISTENERS_PER_CLIENT = 64
"""Change listeners one client (a principal, an anonymous address, a stream) holds."""
DEFAULT_MAX_CLIENT_INFO_BYTES = 64 * 1024
"""Characters (as JSON) of the capabilities and client info a legacy session keeps."""

# answers kept by a single-use policy (`RequestStateSecurity(keep_answers=...)`)
DEFAULT_REPLAY_ANSWER_MAX_BYTES = 1024 * 1024
"""Characters (as JSON) of the largest leg answer kept for a re-send; a larger one is not."""
DEFAULT_REPLAY_RUNNING_LEASE = 120.0
"""Seconds a leg may run before a re-send of it is refused instead of told to wait."""
DEFAULT_REPLAY_STORE_MAX_BYTES = 64 * 1024 * 1024
"""Characters of kept answers a `MemoryReplayStore` holds in all (past it, none is kept)."""
DEFAULT_LEG_MAX_MARKS = 64
"""``ctx.once`` marks one leg stores for a takeover (`RequestStateSecurity(take_over=True)`)."""

# the notification bus between instances (`RedisNotificationBus`)
DEFAULT_BUS_MAX_BUFFER = 1024
"""Changes an instance keeps to send while Redis is unreachable (the oldest dropped)."""
DEFAULT_BUS_MAX_STREAM_LENGTH = 10_000
"""About how many changes the shared stream keeps: how far a cut-off instance catches up."""
DEFAULT_BUS_MAX_CHANGE_BYTES = 64 * 1024
"""Characters (as JSON) of the largest change carried between instances."""
# the talking-back half: requests to the client, change notifications, response streams
DEFAULT_CLIENT_REQUEST_TIMEOUT = 300.0
DEFAULT_MAX_CLIENT_REQUESTS = 64
DEFAULT_MAX_LISTENERS = 1024
"""Listeners (listen streams, legacy connections) one server holds at once."""
DEFAULT_MAX_PENDING_EVENTS = 1024
"""Distinct events waiting for one listener before it is dropped."""
DEFAULT_MAX_RESOURCE_SUBSCRIPTIONS = 1024
"""Resource URIs one listen stream or one legacy session may subscribe to."""
DEFAULT_MAX_SUBSCRIPTION_BYTES = 1024 * 1024
DEFAULT_SSE_RETRY_MS = 1000
DEFAULT_STREAM_STALL_TIMEOUT = 30.0

# the event store behind resumable streams (`MemoryEventStore`, `RedisEventStore`)
DEFAULT_MAX_STREAMS = 10_000
"""Streams a `MemoryEventStore` keeps; the least recently written go first."""
DEFAULT_MAX_EVENTS_PER_STREAM = 1_000
"""Events one stream keeps; older ones are forgotten (a resume then starts later)."""
DEFAULT_EVENT_TTL = 300.0
"""Seconds a stream is kept after its last event."""
DEFAULT_EVENT_STORE_MAX_BYTES = 64 * 1024 * 1024
"""Bytes (as JSON) a `MemoryEventStore` keeps across all its streams."""

# the high-level server (`MCPServer`)
DEFAULT_MAX_STATE_BYTES = 64 * 1024
"""The default cap on the engine's plaintext ``requestState`` (before sealing)."""
DEFAULT_LEGACY_SHIM_MAX_ROUNDS = 8
"""The default bound on re-entering a manual handler on a legacy session."""
