"""Request time: one call of one handler, round by round.

`_call` (run it, with the legacy shim; end the round as an ``InputRequiredResult``),
`_engine` (resolvers first, then the body once), `_round` (which questions are answered,
which still open; sans-IO), `_state` (the engine's plaintext state), `_context` (what a
handler sees). They receive the app's frozen `AppSpec`, never the app.
"""
