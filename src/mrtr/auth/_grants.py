"""How a client gets tokens (the grants) and proves who it is at the token endpoint.

The grant classes are plain configuration; `ClientAuth` and `parse_token_reply` are the
pure pieces every token request shares.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote_plus, urlsplit

from mrtr._lazy import publish
from mrtr.auth._challenge import scopes_of
from mrtr.auth._http import Reply
from mrtr.auth._jose import SigningKey, client_assertion
from mrtr.auth._records import TokenSet, bounded_seconds
from mrtr.errors import AuthError, TokenEndpointError

if TYPE_CHECKING:
    import httpx

    from mrtr.auth._authorizers import Authorizer

__all__ = [
    "AssertionContext",
    "AuthorizationCode",
    "ClientCredentials",
    "ClientProfile",
    "Grant",
    "IdentityAssertion",
    "JWTBearer",
    "StaticClient",
    "choose_auth_method",
    "client_auth",
    "parse_token_reply",
]

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
AuthMethod = Literal["client_secret_basic", "client_secret_post", "none", "private_key_jwt"]


@dataclass(frozen=True)
class ClientProfile:
    """What the client says about itself when it registers (or in its metadata document).

    Attributes:
        client_name: shown to the user on the consent page.
        client_metadata_url: a Client ID Metadata Document URL (https, with a path);
            used as the client id when the authorization server supports CIMD.
        application_type: ``"native"`` (CLI, desktop, loopback redirect) or ``"web"``.
        grant_types: sent in dynamic registration (``refresh_token`` asks for refresh).
        dynamic_registration: allow RFC 7591 registration when nothing else applies.
        extra_metadata: more registration fields (``logo_uri``, ``contacts``, ...).
    """

    client_name: str = "mrtr"
    client_metadata_url: str | None = None
    application_type: Literal["native", "web"] = "native"
    grant_types: tuple[str, ...] = ("authorization_code", "refresh_token")
    dynamic_registration: bool = True
    extra_metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        url = self.client_metadata_url
        if url is not None:
            parts = urlsplit(url)
            if parts.scheme != "https" or parts.path in ("", "/") or parts.fragment:
                raise ValueError(
                    "client_metadata_url must be an https URL with a path (it is the client id)"
                )

    def fingerprint(self) -> str:
        """What a stored registration is keyed by, besides the issuer."""
        return f"{self.client_name}|{self.application_type}|{','.join(self.grant_types)}"


@dataclass(frozen=True)
class StaticClient:
    """A client registered ahead of time with the authorization server.

    Attributes:
        client_id: the client identifier.
        client_secret: its secret, for a confidential client.
        auth_method: ``client_secret_basic``, ``client_secret_post``, ``none`` or
            ``private_key_jwt``; ``None``: chosen from the server's metadata.
        issuer: the authorization server it is registered with; a server naming another
            issuer gets an error instead of these credentials.
        signing_key: for ``private_key_jwt``.
    """

    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    auth_method: AuthMethod | None = None
    issuer: str | None = None
    signing_key: SigningKey | None = None


@dataclass(frozen=True)
class AuthorizationCode:
    """The authorization code grant with PKCE: a user logs in through a browser (default).

    Attributes:
        authorizer: shows the user the authorization page and collects the redirect;
            ``None``: a needed login raises `AuthorizationRequiredError` (log in ahead).
        profile: what the client registers as.
        static: a pre-registered client, used instead of registering.
    """

    authorizer: Authorizer | None = None
    profile: ClientProfile = field(default_factory=ClientProfile)
    static: StaticClient | None = None


@dataclass(frozen=True)
class ClientCredentials:
    """The client credentials grant: a machine acting for itself, no user.

    Attributes:
        client_id: the client identifier.
        client_secret: its secret (``client_secret_basic`` or ``_post``).
        signing_key: a `SigningKey`, or a PEM private key, for ``private_key_jwt``
            (the assertion's audience is the authorization server's issuer).
        signing_alg: the algorithm when ``signing_key`` is a PEM (default ``ES256``).
        auth_method: force a token-endpoint auth method; ``None``: from the metadata.
        issuer: the authorization server these credentials belong to; a server whose
            discovery names another issuer gets a `RegistrationError` instead of them.
            Either way a ``token_endpoint`` on another origin than the issuer's is
            logged as a warning before the credentials are sent there.
    """

    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    signing_key: SigningKey | str | bytes | None = field(default=None, repr=False)
    signing_alg: str | None = None
    auth_method: AuthMethod | None = None
    issuer: str | None = None

    def key(self) -> SigningKey | None:
        """The signing key as a `SigningKey`."""
        if self.signing_key is None or isinstance(self.signing_key, SigningKey):
            return self.signing_key
        return SigningKey(self.signing_key, self.signing_alg or "ES256")


@dataclass(frozen=True)
class AssertionContext:
    """What an assertion callback needs to mint an assertion for this authorization server.

    Attributes:
        issuer: the authorization server (the assertion's audience).
        resource: the protected resource.
        scopes: the scopes about to be asked for.
        http: the httpx client the OAuth layer uses.
        timeout: the timeout for each HTTP request.
    """

    issuer: str
    resource: str
    scopes: tuple[str, ...]
    http: httpx.AsyncClient
    timeout: float


Assertion = str | Callable[[AssertionContext], Awaitable[str]]


@dataclass(frozen=True)
class JWTBearer:
    """The JWT bearer grant (RFC 7523): a workload presents an assertion it was given.

    One token request per authorization; a refused assertion is never retried.

    Attributes:
        assertion: the JWT, or an async callable that returns a fresh one.
        client_id: sent with the request when the server wants it.
    """

    assertion: Assertion = field(repr=False)
    client_id: str | None = None


@dataclass(frozen=True)
class IdentityAssertion:
    """Enterprise-managed authorization: an identity assertion grant (ID-JAG) for the AS.

    ``assertion`` gets the authorization server and resource and returns an ID-JAG, e.g.
    from `exchange_id_token` at the enterprise identity provider; the grant presents it
    as a JWT bearer assertion, authenticating with ``client_id`` and ``client_secret``.
    """

    assertion: Callable[[AssertionContext], Awaitable[str]] = field(repr=False)
    client_id: str = ""
    client_secret: str | None = field(default=None, repr=False)
    auth_method: AuthMethod | None = None


Grant = AuthorizationCode | ClientCredentials | JWTBearer | IdentityAssertion
"""How `OAuth` gets a token: one of the four grants."""


def choose_auth_method(
    preferred: str | None,
    *,
    has_secret: bool,
    has_key: bool,
    supported: tuple[str, ...] | None,
) -> str:
    """The token-endpoint auth method: as registered, else by what the server lists."""
    if preferred:
        return preferred
    if has_key:
        return "private_key_jwt"
    if not has_secret:
        return "none"
    if supported is None:
        return "client_secret_basic"  # RFC 8414's default
    for method in ("client_secret_basic", "client_secret_post"):
        if method in supported:
            return method
    return "client_secret_basic"


def client_auth(
    method: str,
    *,
    client_id: str,
    client_secret: str | None,
    signing_key: SigningKey | None,
    audience: str,
    now: float,
) -> tuple[dict[str, str], dict[str, str]]:
    """Headers and form fields that authenticate the client (RFC 6749 2.3, RFC 7523).

    With Basic, ``client_id`` is not repeated in the body (strict servers refuse two
    methods at once).

    Raises:
        AuthError: the method needs a secret or key the client does not have.
    """
    if method == "client_secret_basic":
        if client_secret is None:
            raise AuthError("client_secret_basic needs a client secret")
        raw = f"{quote_plus(client_id, safe='')}:{quote_plus(client_secret, safe='')}"
        return {"Authorization": "Basic " + base64.b64encode(raw.encode()).decode()}, {}
    if method == "client_secret_post":
        if client_secret is None:
            raise AuthError("client_secret_post needs a client secret")
        return {}, {"client_id": client_id, "client_secret": client_secret}
    if method == "private_key_jwt":
        if signing_key is None:
            raise AuthError("private_key_jwt needs a signing key")
        assertion = client_assertion(signing_key, client_id=client_id, audience=audience, now=now)
        return {}, {
            "client_id": client_id,
            "client_assertion_type": ASSERTION_TYPE,
            "client_assertion": assertion,
        }
    return {}, {"client_id": client_id}


def parse_token_reply(
    reply: Reply,
    *,
    requested: tuple[str, ...],
    issuer: str,
    resource: str,
    client_id: str | None,
    now: float,
    previous_refresh: str | None = None,
    dpop_key: str | None = None,
) -> TokenSet:
    """Turn a token endpoint reply into a `TokenSet`, or raise what the server said.

    Raises:
        TokenEndpointError: an error reply, or a success without a usable token.
    """
    data = reply.json
    if not reply.ok:
        error = data.get("error") if data else None
        description = data.get("error_description") if data else None
        raise TokenEndpointError(
            error if isinstance(error, str) else f"http_{reply.status}",
            description if isinstance(description, str) else None,
            status=reply.status,
        )
    access = data.get("access_token") if data else None
    token_type = data.get("token_type") if data else None
    if not isinstance(access, str) or not access or not isinstance(token_type, str):
        raise TokenEndpointError("invalid_response", "no access_token or token_type", status=200)
    if token_type.lower() != "bearer" and not (token_type.lower() == "dpop" and dpop_key):
        raise TokenEndpointError(
            "unsupported_token_type", f"token_type {token_type[:40]!r}", status=reply.status
        )
    assert data is not None
    lifetime = bounded_seconds(data.get("expires_in"))  # any integer may come: bounded
    refresh = data.get("refresh_token")
    scope = data.get("scope")
    return TokenSet(
        access_token=access,
        token_type=token_type,
        expires_at=now + lifetime if lifetime is not None else None,
        refresh_token=refresh if isinstance(refresh, str) and refresh else previous_refresh,
        scope=scopes_of(scope) if isinstance(scope, str) else requested,
        issuer=issuer,
        resource=resource,
        client_id=client_id,
        dpop_key=dpop_key if token_type.lower() == "dpop" else None,
    )


publish(
    "mrtr.auth",
    AssertionContext,
    AuthorizationCode,
    ClientCredentials,
    ClientProfile,
    IdentityAssertion,
    JWTBearer,
    StaticClient,
)
