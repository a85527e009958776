"""Servers from the editors' config files: golden files per host format, then resolution.

``golden/home`` is copied to a temporary HOME (with the project under ``home/work``);
``$PY``, ``$SERVER`` and ``$PROJECT`` in the files are filled in, and ``mrtr servers --json``
must match ``golden/servers.json`` once the temporary paths are put back as placeholders.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.cli._run import CLI_SERVER, HERE, PY, mrtr, one_json

GOLDEN = HERE / "golden"
SERVER = CLI_SERVER
SECRETS = ("lin_api_LITERAL_SECRET", "ghp_LITERAL_SECRET")

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="the golden paths are the Linux ones (~/.config/...)"
)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    root = tmp_path / "home"
    shutil.copytree(GOLDEN / "home", root)
    project = root / "work" / "project"
    for path in root.rglob("*.json"):
        text = path.read_text()
        text = text.replace("$PROJECT", str(project)).replace("$PY", PY)
        path.write_text(text.replace("$SERVER", SERVER))
    return root


def env_for(home: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), **extra}


def placeholders(text: str, home: Path) -> str:
    return text.replace(str(home), "$HOME").replace(PY, "$PY").replace(SERVER, "$SERVER")


def test_servers_json_matches_the_golden_file(home: Path) -> None:
    done = mrtr("servers", "--json", env=env_for(home), cwd=home / "work" / "project")
    assert done.returncode == 0, done.stderr
    for secret in SECRETS:
        assert secret not in done.stdout
    shown = json.loads(placeholders(done.stdout, home))
    expected = json.loads((GOLDEN / "servers.json").read_text())
    assert shown == expected


def test_servers_text_lists_source_transport_and_file(home: Path) -> None:
    done = mrtr("servers", env=env_for(home), cwd=home / "work" / "project")
    assert done.returncode == 0, done.stderr
    out = placeholders(done.stdout, home)
    assert "vscode:github  (http)  https://api.githubcopilot.com/mcp/" in out
    assert "    ~/work/project/.vscode/mcp.json" in out
    assert "windsurf:talaria  (http)  https://api.example.com/mcp" in out
    assert "    env GITHUB_PERSONAL_ACCESS_TOKEN=<redacted>" in out
    assert "claude-desktop:off" not in out  # disabled
    assert all(secret not in done.stdout for secret in SECRETS)


def test_a_configured_server_is_started_with_its_variables_expanded(home: Path) -> None:
    project = home / "work" / "project"
    env = env_for(home, CLI_TOKEN="t0k")
    trust = "--trust-project"  # .mcp.json in the working directory is a project file
    done = mrtr("call", "cli", "whoami", "-o", "content", trust, env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "cwd": str(project), "log": "info", "region": None, "token": "t0k",
    }  # fmt: skip
    assert "server 'cli' comes from the project file " in done.stderr
    scoped = mrtr("call", "claude-code:cli", "whoami", "-o", "content", trust, env=env, cwd=project)
    assert json.loads(scoped.stdout)["token"] == "t0k"
    by_file = mrtr("call", ".mcp.json:cli", "whoami", "-o", "content", env=env, cwd=project)
    assert json.loads(by_file.stdout)["token"] == "t0k"


def test_vscode_inputs_from_flags_or_environment(home: Path) -> None:
    project = home / "work" / "project"
    done = mrtr("call", "vscode:echo", "whoami", "-o", "content", "--input", "gh-token=abc",
                env=env_for(home), cwd=project)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "cwd": str(project), "log": None, "region": "eu", "token": "abc",
    }  # fmt: skip
    from_env = mrtr("call", "echo", "whoami", "-o", "content",
                    env=env_for(home, MRTR_INPUT_GH_TOKEN="xyz"), cwd=project)  # fmt: skip
    assert json.loads(from_env.stdout)["token"] == "xyz"
    missing = mrtr("ping", "echo", env=env_for(home), cwd=project)
    assert missing.returncode == 2
    assert "${input:gh-token} has no value; pass --input gh-token=VALUE" in missing.stderr


def test_vscode_inputs_asked_on_the_terminal(home: Path) -> None:
    from tests.cli.test_cli_prompts import finish, spawn

    project = home / "work" / "project"
    child = spawn("call", "echo", "whoami", "-o", "content", backend="asyncio",
                  env=env_for(home), cwd=project)  # fmt: skip
    child.expect_exact("Region (${input:region})")
    child.expect_exact("  2) us")
    child.sendline("2")
    child.expect_exact("GitHub token (${input:gh-token}): ")
    child.sendline("hidden-value")
    code, output = finish(child)
    assert code == 0
    assert output.count("hidden-value") == 1  # not echoed: only the server's answer shows it
    assert '"token": "hidden-value"' in output and '"region": "us"' in output


def test_unset_variable_names_file_server_and_field(home: Path) -> None:
    done = mrtr("ping", "cli", env=env_for(home), cwd=home / "work" / "project")
    assert done.returncode == 2
    assert "work/project/.mcp.json: server 'cli', env.TOKEN: environment variable CLI_TOKEN" in (
        done.stderr
    )


def test_ambiguous_and_unknown_names(home: Path) -> None:
    project = home / "work" / "project"
    # the project's .mcp.json and the user's ~/.cursor both define it: the user's own wins,
    # and the person is told (issue #21, item 10)
    shadowed = mrtr("ping", "weather", env=env_for(home), cwd=project)
    assert "also defines 'weather'; using yours from" in shadowed.stderr
    assert "/.cursor/mcp.json: server 'weather', env.API_KEY" in shadowed.stderr
    typo = mrtr("ping", "wether", env=env_for(home), cwd=project)
    assert typo.returncode == 2
    assert "did you mean weather" in typo.stderr
    sse = mrtr("ping", "windsurf:legacy", env=env_for(home), cwd=project)
    assert (sse.returncode, "HTTP+SSE transport is not supported" in sse.stderr) == (2, True)


def test_explicit_config_only(home: Path, tmp_path: Path) -> None:
    config = tmp_path / "mine.json"
    config.write_text(
        json.dumps({"mcpServers": {"solo": {"command": PY, "args": [SERVER, "stdio"]}}})
    )
    done = mrtr("servers", "--json", "--config", str(config), "--no-discover", env=env_for(home))
    assert [s["name"] for s in one_json(done)["servers"]] == ["solo"]
    called = mrtr("call", "solo", "echo", "code=7", "-o", "content", "--config", str(config),
                  "--no-discover", env=env_for(home))  # fmt: skip
    assert json.loads(called.stdout) == {"code": "7"}
    broken = tmp_path / "broken.json"
    broken.write_text("{ nope")
    done = mrtr("servers", "--config", str(broken), "--no-discover", env=env_for(home))
    assert done.returncode == 0
    assert "broken.json:1:3: invalid JSON" in done.stderr


def test_a_project_file_gets_no_secret_without_consent(home: Path) -> None:
    """Issue #21 item 10: a cloned repository's .mcp.json never gets ${VAR} values unasked."""
    project = home / "work" / "project"
    env = env_for(home, CLI_TOKEN="the-users-secret")
    refused = mrtr("call", "cli", "whoami", "-o", "content", env=env, cwd=project)
    assert refused.returncode == 2
    assert "comes from a project file" in refused.stderr
    assert "wants your environment variable(s) ${CLI_TOKEN}; pass --trust-project" in (
        refused.stderr
    )
    assert "the-users-secret" not in refused.stdout + refused.stderr
    listing = mrtr("servers", env=env, cwd=project)
    assert "~/work/project/.mcp.json  (a project file: this directory's)" in listing.stdout


def test_consent_is_asked_on_the_terminal(home: Path) -> None:
    from tests.cli.test_cli_prompts import finish, spawn

    project = home / "work" / "project"
    env = env_for(home, CLI_TOKEN="s3cr3t")
    child = spawn("call", "cli", "whoami", "-o", "content", backend="asyncio", env=env,
                  cwd=project)  # fmt: skip
    child.expect_exact("wants ${CLI_TOKEN} for its server 'cli'")
    child.expect_exact("give it these values? [y/N] > ")
    child.sendline("n")
    code, output = finish(child)
    assert code == 2 and "s3cr3t" not in output
    child = spawn("call", "cli", "whoami", "-o", "content", backend="asyncio", env=env,
                  cwd=project)  # fmt: skip
    child.expect_exact("give it these values? [y/N] > ")
    child.sendline("y")
    code, output = finish(child)
    assert code == 0
    assert '"token": "s3cr3t"' in output
