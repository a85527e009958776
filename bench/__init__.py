"""Benchmarks of mrtr against the official MCP Python SDK (issue 6): `python -m bench`."""
