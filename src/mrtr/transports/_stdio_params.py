"""How to start a stdio server: `StdioServerParameters`, and the environment it inherits."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from mrtr._lazy import publish

__all__ = ["StdioServerParameters", "default_environment"]

# Variables a server inherits from the client's environment when it does not say
# otherwise. Not the whole environment: an MCP server is often third-party code, and the
# client's environment holds API keys and tokens it has no business seeing. These are
# the ones programs need to find executables, their home and temp directories, the user
# and the terminal (the same set the official SDK passes), plus the locale variables so
# non-Python servers agree with us on UTF-8. Pass `env` to add anything else.
_INHERITED_POSIX = (
    "HOME",
    "LOGNAME",
    "PATH",
    "SHELL",
    "TERM",
    "USER",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
)
_INHERITED_WINDOWS = (
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PATHEXT",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "TMP",
    "USERNAME",
    "USERPROFILE",
)


def default_environment() -> dict[str, str]:
    """The environment a stdio server gets before `StdioServerParameters.env` is merged in.

    A safe subset of the client's own environment (see the comment on the variable
    lists): the search path, home, user, shell, terminal, temp directory and locale.
    Values that start with ``()`` (exported shell functions) are left out.
    """
    names = _INHERITED_WINDOWS if sys.platform == "win32" else _INHERITED_POSIX
    environment: dict[str, str] = {}
    for name in names:
        value = os.environ.get(name)
        if value is not None and not value.startswith("()"):
            environment[name] = value
    return environment


@dataclass(frozen=True)
class StdioServerParameters:
    """How to start a stdio MCP server.

    Attributes:
        command: the executable (looked up on the ``PATH`` the server gets).
        args: its arguments.
        env: variables merged over `default_environment()`; ``None`` adds nothing.
        cwd: the working directory; ``None`` is the client's.

    Raises:
        TypeError: `args` is a single string (it would be split into characters).
    """

    command: str
    args: Sequence[str] = field(default_factory=list)
    env: Mapping[str, str] | None = None
    cwd: str | os.PathLike[str] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.args, str):
            raise TypeError("args must be a list of arguments, not one string")

    def environment(self) -> dict[str, str]:
        """The full environment the server process gets."""
        return {**default_environment(), **(self.env or {})}


publish("mrtr.transports", StdioServerParameters, default_environment)
