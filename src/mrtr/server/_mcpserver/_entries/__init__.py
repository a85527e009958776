"""One entry per kind: a decorated tool, prompt or resource, listed and served.

`_tool`, `_prompt`, `_resource` (each validates its arguments, runs one call through
`_rounds` and shapes the result or the error of its kind), `_convert` (return values as
content and structured output), `_uri_template` (RFC 6570 level-1 matching).
"""
