"""The wire pieces without I/O that the client and the server halves share.

`jsonrpc` (the JSON-RPC shapes, error members, progress tokens), `framing` (encoding
and decoding messages, their UTF-8 size), `ids` (request ids and stray responses) and
`http_headers` (the ``Mcp-Param-*`` header codec). Nothing here imports a transport,
the session or the server.
"""
