"""The peer kit: every server and client stand-in the tests talk to, one module per kind.

Built once, shared by all (mrtr's types in `builders`, the official SDK's in
`sdk_builders`): ``ask``/``form``/``text``, the questions several peers put
(``ASK_REGION``, ``ASK_AUDIENCE``), the client callbacks and result readers.

In process (no subprocess, no socket unless said):

- `peer`: `ScriptedPeer`, the server end of an in-memory pair, driven step by step, every
  client message validated against the official schema (`schema`);
- `http_server`: a scripted HTTP/1.1 server, one request per connection;
- `keepalive_server`: a keep-alive HTTP/1.1 server answering raw bytes a test chooses.

In their own process (`launch`: ``READY <url>`` on stdout, started and stopped by
`launch.running`, nothing outside the repository):

- `mrtr_servers/`: mrtr's own servers (`provisioner`, `approvals`, `cli`, `cli_hostile`,
  `mcpserver`), their transport an argument, their sealing `mrtr_servers.sealing`;
- `official/`: the official SDK's servers (mcp==2.3.0), run by `official.peer`, started
  by `official.stdio_params` / `official.http_peer`;
- raw peers, standard library only so they start fast and depend on nothing under test,
  run by path: `stdio_server` (a behaviour per method), `hostile_stdio_server` (huge and
  deep answers, wrong ids), `old_stdio_server` (an ``mcp`` 1.8 server taking the probe
  badly), `forking_server` (processes left behind), `legacy_raw_server` (a legacy server
  that misbehaves on request), `surrogate_peer` (lone surrogates in ``requestState``);
- `redis_server`: a private ``redis-server``, ready when it says so.
"""
