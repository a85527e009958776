"""The pure rules of mrtr.auth: challenge parsing, discovery order, resource and issuer
checks, scope choice, client authentication, records."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mrtr import IssuerMismatchError
from mrtr.auth._challenge import parse_challenges, scopes_of
from mrtr.auth._discovery import (
    check_response_issuer,
    metadata_candidates,
    resource_candidates,
    resource_covers,
    select_scopes,
)
from mrtr.auth._grants import choose_auth_method, client_auth
from mrtr.auth._records import ClientRegistration, Discovery, TokenSet


def test_challenges_parse_params_quotes_and_several_schemes() -> None:
    header = (
        'Bearer error="insufficient_scope", scope="a b", '
        'resource_metadata="https://x.example/.well-known/oauth-protected-resource/mcp", '
        'error_description="say \\"hi\\"", DPoP algs="ES256", Basic realm=r'
    )
    bearer, dpop, basic = parse_challenges(header)
    assert bearer.scheme == "Bearer"
    assert bearer.get("error") == "insufficient_scope"
    assert bearer.get("scope") == "a b"
    assert bearer.get("resource_metadata") == (
        "https://x.example/.well-known/oauth-protected-resource/mcp"
    )
    assert bearer.get("error_description") == 'say "hi"'
    assert (dpop.scheme, dpop.get("algs")) == ("DPoP", "ES256")
    assert (basic.scheme, basic.get("realm")) == ("Basic", "r")


def test_challenges_bare_scheme_token68_and_several_headers() -> None:
    assert [c.scheme for c in parse_challenges(["Bearer", "Negotiate abc=="])] == [
        "Bearer",
        "Negotiate",
    ]
    assert parse_challenges("") == []
    assert scopes_of(" a  b a ") == ("a", "b")
    assert scopes_of(None) == ()


@given(st.text(max_size=300))
def test_challenge_parser_never_raises(text: str) -> None:
    for challenge in parse_challenges(text):
        assert isinstance(challenge.scheme, str)


def test_resource_metadata_candidates_follow_the_spec_order() -> None:
    url = "https://api.example.com/v1/mcp"
    assert resource_candidates(url, None) == [
        "https://api.example.com/.well-known/oauth-protected-resource/v1/mcp",
        "https://api.example.com/.well-known/oauth-protected-resource",
    ]
    assert resource_candidates("https://api.example.com/", None) == [
        "https://api.example.com/.well-known/oauth-protected-resource"
    ]
    named = "https://api.example.com/custom.json"
    assert resource_candidates(url, named) == [named]


def test_metadata_candidates_for_issuers_with_and_without_a_path() -> None:
    assert metadata_candidates("https://as.example.com/tenant1") == [
        "https://as.example.com/.well-known/oauth-authorization-server/tenant1",
        "https://as.example.com/.well-known/openid-configuration/tenant1",
        "https://as.example.com/tenant1/.well-known/openid-configuration",
    ]
    assert metadata_candidates("http://localhost:9") == [
        "http://localhost:9/.well-known/oauth-authorization-server",
        "http://localhost:9/.well-known/openid-configuration",
    ]


@pytest.mark.parametrize(
    ("resource", "url", "covers"),
    [
        ("https://a.example/mcp", "https://a.example/mcp", True),
        ("https://a.example", "https://a.example/mcp", True),
        ("https://a.example/", "https://a.example/mcp", True),
        ("https://a.example/mcp", "https://a.example/mcp/sub", True),
        ("https://a.example/mcp", "https://a.example/mcpx", False),
        ("https://evil.example/mcp", "https://a.example/mcp", False),
        ("http://a.example/mcp", "https://a.example/mcp", False),
        ("https://a.example:8443/mcp", "https://a.example/mcp", False),
        ("https://a.example/mcp#frag", "https://a.example/mcp", False),
        ("https://a.example/other", "https://a.example/mcp", False),
    ],
)
def test_resource_must_be_same_origin_and_a_segment_prefix(
    resource: str, url: str, covers: bool
) -> None:
    assert resource_covers(resource, url) is covers


@pytest.mark.parametrize(
    ("advertised", "iss", "ok"),
    [
        (True, "https://as.example", True),
        (True, None, False),
        (False, "https://as.example", True),
        (False, None, True),
        (True, "https://as.example/", False),  # no normalization: a slash is another issuer
        (False, "https://evil.example", False),
        (True, "HTTPS://as.example", False),
    ],
)
def test_rfc9207_table_compares_exact_strings(advertised: bool, iss: str | None, ok: bool) -> None:
    def check() -> None:
        check_response_issuer(
            advertised=advertised, iss=iss, expected="https://as.example", server_url="u"
        )

    if ok:
        check()
    else:
        with pytest.raises(IssuerMismatchError) as caught:
            check()
        assert caught.value.kind == "response"


def test_scopes_challenge_first_then_resource_metadata_then_none() -> None:
    prm = {"scopes_supported": ["r1", "r2"]}
    server = {"scopes_supported": ["s1", "offline_access"]}
    assert select_scopes(challenged=("c",), resource_metadata=prm, server_metadata={}) == ("c",)
    assert select_scopes(challenged=(), resource_metadata=prm, server_metadata={}) == ("r1", "r2")
    # no fallback to the authorization server's list: the parameter is omitted
    assert select_scopes(challenged=(), resource_metadata={}, server_metadata=server) == ()
    # offline_access only when the authorization server lists it
    assert select_scopes(challenged=("c",), resource_metadata=None, server_metadata=server) == (
        "c",
        "offline_access",
    )
    assert select_scopes(
        challenged=("c",), resource_metadata=None, server_metadata={"scopes_supported": ["x"]}
    ) == ("c",)


def test_step_up_scopes_are_the_union_with_what_was_held() -> None:
    scopes = select_scopes(
        challenged=("write",),
        resource_metadata={"scopes_supported": ["decoy"]},
        server_metadata={},
        extra=("openid",),
        previous=("read",),
    )
    assert scopes == ("read", "write", "openid")


def test_basic_client_auth_form_encodes_and_sends_no_client_id_in_the_body() -> None:
    headers, fields = client_auth(
        "client_secret_basic",
        client_id="id:1",
        client_secret="s p",
        signing_key=None,
        audience="a",
        now=0,
    )
    assert fields == {}
    assert base64.b64decode(headers["Authorization"][6:]) == b"id%3A1:s+p"
    headers, fields = client_auth(
        "client_secret_post",
        client_id="i",
        client_secret="s",
        signing_key=None,
        audience="a",
        now=0,
    )
    assert headers == {} and fields == {"client_id": "i", "client_secret": "s"}
    assert client_auth(
        "none", client_id="i", client_secret=None, signing_key=None, audience="a", now=0
    ) == ({}, {"client_id": "i"})


def test_auth_method_choice() -> None:
    choose = choose_auth_method
    assert choose("client_secret_post", has_secret=True, has_key=False, supported=None) == (
        "client_secret_post"
    )
    assert choose(None, has_secret=False, has_key=False, supported=None) == "none"
    assert choose(None, has_secret=True, has_key=False, supported=None) == "client_secret_basic"
    assert (
        choose(None, has_secret=True, has_key=False, supported=("client_secret_post",))
        == "client_secret_post"
    )
    assert choose(None, has_secret=False, has_key=True, supported=None) == "private_key_jwt"


def test_records_round_trip_and_hide_secrets_from_repr() -> None:
    token = TokenSet("at-secret", expires_at=100.0, refresh_token="rt-secret", scope=("a",))
    assert TokenSet.from_json(token.to_json()) == token
    assert "secret" not in repr(token)
    assert token.due(50, 60) and not token.due(30, 60)
    client = ClientRegistration("https://as", "id", "cs-secret", redirect_uris=("r",))
    assert ClientRegistration.from_json(client.to_json()) == client
    assert "secret" not in repr(client)
    discovery = Discovery("u", "r", "i", {"issuer": "i"}, None)
    assert Discovery.from_json(discovery.to_json()) == discovery
    assert TokenSet.from_json({"nothing": 1}) is None
    assert Discovery.from_json({"server_url": "u"}) is None


@pytest.mark.parametrize(
    "url", ["http://app.example/client.json", "https://app.example", "https://app.example/"]
)
def test_a_client_metadata_url_must_be_https_with_a_path(url: str) -> None:
    from mrtr.auth import ClientProfile

    with pytest.raises(ValueError, match="https"):
        ClientProfile(client_metadata_url=url)
    assert ClientProfile(client_metadata_url="https://app.example/c.json").client_metadata_url
