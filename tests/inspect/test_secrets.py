"""Secrets given to `mrtr inspect` never reach the page, a transcript or an exported test."""

from __future__ import annotations

import json
from pathlib import Path

from tests.inspect.test_keys import KEY, inspecting, keyed_server

HEADER_SECRET = "header-secret-4f1c9ab0"
QUERY_SECRET = "query-secret-77e2d3c1"


def test_authorization_and_a_token_in_the_url_stay_out_of_the_page_and_exports(
    tmp_path: Path,
) -> None:
    clock_file = tmp_path / "offset"
    clock_file.write_text("0")
    keys = tmp_path / "keys"
    keys.write_text(f"{KEY}\n")
    with keyed_server("keyed", clock_file) as url:
        flags = ["-H", f"Authorization: Bearer {HEADER_SECRET}", "--keys", str(keys)]
        with inspecting(f"{url}?token={QUERY_SECRET}", *flags) as page:
            arguments = {"name": "api", "api_key": "argument-secret"}
            page.api("/api/call", {"kind": "tool", "name": "deploy", "arguments": arguments})
            (question,) = page.until(lambda s: s["questions"])["questions"]
            answer = {"question": question["id"], "action": "accept", "content": {"value": True}}
            page.api("/api/answer", answer)
            state = page.until(lambda s: s["calls"][0]["status"] != "running")
            exports = [
                page.api(f"/api/export?call=1&format={kind}")["text"] for kind in ("json", "pytest")
            ]
    assert state["calls"][0]["status"] == "complete", state["calls"][0]
    for shown in (json.dumps(state), *exports):
        assert HEADER_SECRET not in shown
        assert QUERY_SECRET not in shown
        assert "argument-secret" not in shown  # a field named like a secret: redacted
    assert "127.0.0.1" in exports[1]  # the export still knows where the server is
