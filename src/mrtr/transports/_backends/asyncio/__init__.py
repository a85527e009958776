"""The client side's asyncio shortcuts: protocols the loop calls back instead of tasks.

- `_pipes`: a subprocess's stdout read by the loop's read-pipe transport, stdin
  written without a task, and a lock without anyio's per-call task lookup (stdio);
- `_socket`: the own HTTP client's plain-TCP connections as a protocol that reads all
  the time (`AsyncioSocket`), and `on_asyncio`, the one check that picks these;
- `_direct`: a modern POST written from ``send`` and its plain JSON answer read in the
  socket's callback (`DirectPost`).

Their counterparts on any loop are anyio streams and one task per request; the tests
``tests/transports/test_stdio_pipes.py``, ``test_stdio_shortcut.py`` and
``test_http_direct.py`` run both ways and compare.
"""
