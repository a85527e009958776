"""The high-level `MCPServer`: decorated tools, prompts and resources that may ask.

Built on the low-level `mrtr.server.Server` (one handler per method, sealing, limits,
tracing unchanged). Split by concern: `_app` (the server and its decorators), `_signature`
(what a function's parameters are), `_graph` (the resolver graph checked at registration),
`_engine` (one round: what is answered, what is still open), `_asks` (the typed questions),
`_state` (the engine's plaintext state), `_context` (what a handler sees), `_testing`
(the kit for server authors). Everything public is re-exported by `mrtr.server`.
"""
