"""One entry per kind: a decorated tool, prompt or resource, listed and served.

`_tool`, `_prompt`, `_resource` (each validates its arguments, makes one call through
`_rounds._call` and shapes the result of its kind), `_failure` (a prompt's or a
resource's failure as -32603; a tool's is an ``is_error`` result), `_registry` (the four
tables an `MCPServer` registers into, and the resource lookup), `_convert` (return
values as content and structured output), `_uri_template` (RFC 6570 level-1 matching).
"""
