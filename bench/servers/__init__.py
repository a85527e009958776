"""Benchmark servers: the official SDK's low-level server and mrtr's, with the same tools."""
