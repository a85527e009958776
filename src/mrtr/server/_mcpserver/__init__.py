"""The high-level `MCPServer`: decorated tools, prompts and resources that may ask.

Built on the low-level `mrtr.server.Server` (one handler per method, sealing, limits,
tracing unchanged). The app (`_app`) is a registry and a frozen `AppSpec` (`_spec`) that
the request-time code receives in its place. Its rooms, top down: `_testing` (the kit
for server authors), `_routes` (the low-level handlers), `_entries/` (a tool, a prompt,
a resource; the registry), `_resolve/` (decoration time: signature, resolver graph,
`HandlerSpec`), `_rounds/` (request time: one call, the engine, the round, its state,
`Context`), `_spec`, then the vocabulary: `_asks`, `_answer`, `_errors`, `_outcomes`.
Everything public is re-exported by `mrtr.server`.
"""
