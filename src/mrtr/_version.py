"""The one place the package version is written (hatch reads it from here too)."""

from __future__ import annotations

__version__ = "0.1.0.dev0"
