"""A fastmcp server with fastmcp-tasks, run as a subprocess peer of the interop tests."""
