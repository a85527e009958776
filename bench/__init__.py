"""Benchmarks of mrtr against the official MCP Python SDK: `python -m bench`."""
