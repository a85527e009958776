"""Stdio server parameters from other libraries: anything with ``command`` and ``args``.

Porting from the official SDK is a rename: its ``StdioServerParameters`` (or any object
with ``command``, ``args`` and optionally ``env`` and ``cwd``) is read into ours.
"""

from __future__ import annotations

from typing import Any

from mrtr.transports._stdio_params import StdioServerParameters

__all__ = ["as_stdio_parameters", "looks_like_stdio_parameters"]


def looks_like_stdio_parameters(target: Any) -> bool:
    """Whether `target` describes a process to start (ours, or another SDK's)."""
    if isinstance(target, StdioServerParameters):
        return True
    return isinstance(getattr(target, "command", None), str) and hasattr(target, "args")


def as_stdio_parameters(target: Any) -> StdioServerParameters:
    """Our `StdioServerParameters` for `target` (returned as is when it is ours).

    Raises:
        TypeError: ``args`` is one string, or ``env`` is not a mapping of strings.
    """
    if isinstance(target, StdioServerParameters):
        return target
    args = getattr(target, "args", None) or []
    if isinstance(args, str):
        raise TypeError("args must be a list of arguments, not one string")
    env = getattr(target, "env", None)
    if env is not None and not all(
        isinstance(k, str) and isinstance(v, str) for k, v in dict(env).items()
    ):
        raise TypeError("env must map strings to strings")
    return StdioServerParameters(
        command=target.command,
        args=[str(arg) for arg in args],
        env=dict(env) if env is not None else None,
        cwd=getattr(target, "cwd", None),
    )
