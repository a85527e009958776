"""``mrtr inspect``: a local web inspector that understands multi-round calls.

A sans-IO core (`_record`: calls and their rounds as data; `_export`: the transcript
and the pytest module; `_http`: parsing and guarding the page's requests), a thin shell
(`_inspector`: the client's callbacks answered from the page, and a small anyio HTTP
server on loopback) and static files (``static/``: HTML, CSS, JavaScript; nothing is
fetched from elsewhere). Nothing here is imported by ``import mrtr``; the command line
loads it for ``mrtr inspect`` only.
"""
