"""`python -m mrtr demo` runs the demo; `mrtr demo-server` serves the demo server on stdio."""

from __future__ import annotations

import sys

import anyio

_USAGE = """usage: python -m mrtr COMMAND

commands:
  demo          start the bundled example server and run a multi-round call against it
  demo-server   serve the bundled example server on stdio (what `demo` starts)
"""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `mrtr` command."""
    args = sys.argv[1:] if argv is None else argv
    command = args[0] if args else ""
    if command == "demo":
        from mrtr._demo import run_demo

        return anyio.run(run_demo)
    if command == "demo-server":
        from mrtr._demo import build_demo_server

        build_demo_server().run_stdio()
        return 0
    print(_USAGE, file=sys.stderr if command not in ("-h", "--help") else sys.stdout)
    return 0 if command in ("-h", "--help") else 2


if __name__ == "__main__":
    sys.exit(main())
