"""The multi-round-trip loop: a sans-IO core, its anyio shell, and the paused value.

`_flow` turns each result into plain-data actions (`InputRequiredFlow`, `FlowState`);
`_driver` performs them over a session's legs (`run_input_required_driver`); `_paused`
is the `PausedCall` value the driver stops with; `_defaults` holds the limits the flow
and the client share. The public names are exported from `mrtr`.
"""
