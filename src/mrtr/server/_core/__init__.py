"""The server core: one JSON-RPC message in, its answer out, on any transport.

The lowest room of `server/` but the sealing one: the connection (`_connection`), the
envelope, JSON-RPC framing, the request context and the back-channel it asks through,
notifications (listeners, the change hub), middleware, tracing and the frozen `ServerSpec`.
The shells (`_stream`, `_http`) sit on it; nothing here imports them.
"""
