"""The README's links into the documentation point at pages that exist (and are built)."""

from __future__ import annotations

import re

from tests.docs.blocks import ROOT

LINK = re.compile(r"\]\((?P<target>[^)#\s]+)(?:#[^)]*)?\)")


def test_every_relative_link_of_the_readme_exists_and_is_in_the_site() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = [m["target"] for m in LINK.finditer(text) if "://" not in m["target"]]
    assert len(targets) > 10
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for target in targets:
        assert (ROOT / target).is_file(), target
        if target.startswith("docs/"):
            assert target.removeprefix("docs/") in nav, f"{target} is not in the site's nav"
