"""Subprocesses for the cross-process tests: the kit's Approvals server, and workers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tests.helpers.launch import ROOT, module_command, running
from tests.helpers.launch import child_env as env

__all__ = ["ROOT", "env", "http_server"]

APPROVALS = "tests.helpers.mrtr_servers.approvals"


@contextmanager
def http_server(*args: str) -> Iterator[str]:
    """The Approvals server (`APPROVALS`) over HTTP; yields its URL and stops it afterwards."""
    with running(module_command(APPROVALS, "http", *args), stop_bound=15) as url:
        yield url
