"""The stream shells: in-process and stdio (`_shells`), and the fast stdio pipes.

Sit on `_core`, beside `_http`; neither shell imports the other.
"""
