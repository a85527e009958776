"""Code that knows which event loop runs it, one folder per loop.

Everything else in the transports speaks anyio and runs on asyncio and trio alike; a
module here reaches under anyio to the loop itself, for a measured saving, and each
one has a test that runs the same exchange with its shortcut on and off.
"""
