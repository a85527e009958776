"""``mrtr login`` / ``mrtr logout``, and OAuth tokens for the other commands.

Tokens live in one private file (``$MRTR_TOKEN_STORE``, else
``$XDG_CONFIG_HOME/mrtr/tokens.json``), written by `mrtr.auth.FileStore` (mode 0600).
``login`` runs the authorization-code flow: with the loopback authorizer on a desktop
(a browser opens, the redirect comes back to 127.0.0.1), or the paste flow on a headless
machine (open the URL anywhere, paste the address the browser ends on). Other commands
use the stored tokens (refreshing them) and never start a login themselves: a server that
needs one gets exit 3 and the ``mrtr login`` hint.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mrtr.cli._exit import AuthRequiredError, UsageError

if TYPE_CHECKING:
    from mrtr.cli._commands import Context
    from mrtr.cli._targets import Target

__all__ = ["cmd_login", "cmd_logout", "login_hint", "oauth_for", "token_store_path"]


def token_store_path() -> Path:
    """Where the tokens file is."""
    if os.environ.get("MRTR_TOKEN_STORE"):
        return Path(os.environ["MRTR_TOKEN_STORE"])
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "mrtr" / "tokens.json"


def _desktop() -> bool:
    """Whether a browser can be opened here (not a headless session)."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def oauth_for(target: Target, opts: argparse.Namespace) -> Any:
    """Stored OAuth tokens for an HTTP target, or ``None`` (no store, or -H Authorization)."""
    if target.transport != "http" or not token_store_path().is_file():
        return None
    if any(name.lower() == "authorization" for name in target.headers):
        return None
    from mrtr.auth import AuthorizationCode, FileStore, OAuth

    return OAuth(
        server_url=target.url, store=FileStore(token_store_path()), grant=AuthorizationCode()
    )


def _http_target(ctx: Context, words: list[str], verb: str) -> str:
    rest = ctx.resolve(words)
    target = ctx.target
    assert target is not None
    if rest:
        raise UsageError(f"{verb} takes only a TARGET")
    if target.transport != "http" or target.url is None:
        raise UsageError(f"{verb} is for HTTP servers; {target.label!r} runs over stdio")
    return target.url


async def cmd_login(ctx: Context, words: list[str]) -> int:
    """Log in to a server and keep its tokens."""
    from mrtr.auth import (
        AuthorizationCode,
        FileStore,
        LoopbackAuthorizer,
        OAuth,
        PasteAuthorizer,
    )

    url = _http_target(ctx, words, "login")
    opts = ctx.opts
    authorizer: Any
    if opts.paste or (not _desktop() and not opts.no_browser):
        authorizer = PasteAuthorizer()
    else:
        authorizer = LoopbackAuthorizer(open_browser=not opts.no_browser)
    store = FileStore(token_store_path())
    oauth = OAuth(server_url=url, store=store, grant=AuthorizationCode(authorizer=authorizer))
    from mrtr.errors import AuthError

    try:
        token = await oauth.login(force=opts.force)
    except AuthError:
        if await _answers_without_login(ctx):
            data = {"server": url, "loginNeeded": False}
            return ctx.output.success(data, f"{url} needs no login: it answered without one")
        raise
    scope = getattr(token, "scope", None) or ""
    scopes = scope if isinstance(scope, str) else " ".join(scope)
    data = {"server": url, "tokenStore": str(token_store_path()), "scope": scopes}
    text = f"logged in to {url}" + (f" (scope: {scopes})" if scopes else "")
    return ctx.output.success(data, text + f"; tokens in {token_store_path()}")


async def _answers_without_login(ctx: Context) -> bool:
    """Whether the server takes a connection with no credentials at all."""
    try:
        async with ctx.client():
            return True
    except Exception:
        return False


async def cmd_logout(ctx: Context, words: list[str]) -> int:
    """Forget a server's tokens."""
    from mrtr.auth import FileStore, OAuth

    url = _http_target(ctx, words, "logout")
    if not token_store_path().is_file():
        return ctx.output.success({"server": url, "removed": False}, f"not logged in to {url}")
    oauth = OAuth(server_url=url, store=FileStore(token_store_path()))
    await oauth.logout()
    return ctx.output.success({"server": url, "removed": True}, f"logged out of {url}")


def login_hint(exc: BaseException, target: Target | None) -> BaseException:
    """An authorization failure, with the command that fixes it."""
    from mrtr.errors import AuthorizationRequiredError

    if isinstance(exc, AuthorizationRequiredError) and target is not None:
        return AuthRequiredError(
            f"{target.label} needs a login; log in with: mrtr login {target.label}"
        )
    return exc
