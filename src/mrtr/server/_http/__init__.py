"""The HTTP shell: the ASGI app (`_app`) and what only HTTP needs.

Response streams, SSE, parameter headers, the Origin check, sessions, the event stores
that let a client resume a stream, and the protected-resource metadata. Sits on `_core`.
"""
