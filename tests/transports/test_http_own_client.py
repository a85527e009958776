"""The HTTP transport's own HTTP/1.1 client: framing, keep-alive, cookies, failures."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.abc
import httpx
import pytest
from anyio.streams.tls import TLSListener

from mrtr.transports import _http_client
from mrtr.transports._http1 import BodyReader, encode_request, parse_head
from mrtr.transports._http_client import USER_AGENT, OwnClient
from mrtr.transports._http_cookies import CookieJar
from tests.helpers.keepalive_server import keepalive_server, read_request

pytestmark = pytest.mark.anyio

BOUND = 20
TIMEOUT = httpx.Timeout(10.0)


# -- the sans-IO core ------------------------------------------------------------------


def _reader(head: bytes) -> BodyReader:
    return BodyReader(parse_head(head), method="POST")


@pytest.mark.parametrize("step", [1, 2, 3, 7, 1000])
def test_chunked_body_is_framed_at_any_split(step: int) -> None:
    wire = b"5;ext=1\r\nhello\r\n1\r\n \r\n6\r\nworld!\r\n0\r\nX-Trailer: 1\r\n\r\n"
    reader = _reader(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked")
    body = b""
    for start in range(0, len(wire), step):
        body += b"".join(reader.feed(wire[start : start + step]))
    assert body == b"hello world!"
    assert reader.done
    assert reader.reusable


@pytest.mark.parametrize(
    "wire",
    [
        b"zz\r\nhello\r\n",  # not hex
        b"1_0\r\n",  # int() would take it
        b"-5\r\n",
        b"5\r\nhelloXX",  # no CRLF after the data
        b"0\r\n\r\nextra",  # bytes past the body
    ],
)
def test_bad_chunked_framing_is_refused(wire: bytes) -> None:
    reader = _reader(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked")
    with pytest.raises(httpx.RemoteProtocolError):
        reader.feed(wire)


def test_content_length_frames_the_body_and_refuses_more() -> None:
    reader = _reader(b"HTTP/1.1 200 OK\r\nContent-Length: 5")
    assert reader.feed(b"hel") == [b"hel"]
    assert not reader.done
    assert reader.feed(b"lo") == [b"lo"]
    assert reader.done and reader.reusable
    with pytest.raises(httpx.RemoteProtocolError):
        reader.feed(b"!")
    cut = _reader(b"HTTP/1.1 200 OK\r\nContent-Length: 5")
    cut.feed(b"he")
    with pytest.raises(httpx.RemoteProtocolError):
        cut.end_of_stream()
    with pytest.raises(httpx.RemoteProtocolError):
        _reader(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6")


def test_body_without_framing_ends_with_the_connection() -> None:
    reader = _reader(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream")
    assert reader.feed(b"data: 1\n\n") == [b"data: 1\n\n"]
    reader.end_of_stream()
    assert reader.done and not reader.reusable
    assert not _reader(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0").reusable
    assert not _reader(b"HTTP/1.0 200 OK\r\nContent-Length: 0").reusable


def test_malformed_heads_are_refused() -> None:
    for bad in (b"SPDY/3 200 OK", b"HTTP/1.1 abc OK", b"HTTP/1.1 200 OK\r\nno colon here"):
        with pytest.raises(httpx.RemoteProtocolError):
            parse_head(bad)
    head = parse_head(b"HTTP/1.1 404 Not Found\r\nA:  b \r\nA: c")
    assert (head.status, head.reason, head.headers) == (
        404,
        "Not Found",
        [(b"A", b"b"), (b"A", b"c")],
    )


def test_requests_refuse_header_injection_and_non_ascii() -> None:
    wire = encode_request("POST", b"/mcp?x=1", b"h:1", [("X-A", "b")], b"{}")
    assert wire == (b"POST /mcp?x=1 HTTP/1.1\r\nHost: h:1\r\nX-A: b\r\nContent-Length: 2\r\n\r\n{}")
    with pytest.raises(httpx.LocalProtocolError):
        encode_request("POST", b"/", b"h", [("X-A", "b\r\nX-Evil: 1")], b"")
    with pytest.raises(httpx.LocalProtocolError):
        encode_request("POST", b"/", b"h", [("Bad Name", "b")], b"")
    with pytest.raises(UnicodeEncodeError):
        encode_request("POST", b"/", b"h", [("X-A", "héllo")], b"")


def test_cookie_jar_keeps_replaces_and_expires() -> None:
    jar = CookieJar(secure=False)
    jar.learn(
        [
            (b"Set-Cookie", b"lb=replica-2; Path=/; HttpOnly"),
            (b"set-cookie", b"only_tls=1; Secure"),
            (b"Set-Cookie", b"gone=1; Max-Age=0"),
            (b"Set-Cookie", b"bad\r\nname=1"),
            (b"Content-Type", b"a=b"),
        ]
    )
    assert jar.header() == "lb=replica-2"
    jar.learn([(b"Set-Cookie", b"lb=replica-3")])
    assert jar.header() == "lb=replica-3"
    jar.learn([(b"Set-Cookie", b"lb=x; Expires=Thu, 01 Jan 1970 00:00:00 GMT")])
    assert jar.header() == ""
    secure = CookieJar(secure=True)
    secure.learn([(b"Set-Cookie", b"only_tls=1; Secure")])
    assert secure.header() == "only_tls=1"


# -- the pool against a raw server -----------------------------------------------------


@asynccontextmanager
async def _raw_server(
    answer: Callable[[int, bytes], bytes | None],
) -> AsyncIterator[tuple[str, list[int]]]:
    """The kit's keep-alive server, each request handed to ``answer`` as its raw bytes.

    ``None`` closes the connection instead of answering. Yields the URL and a list
    recording, per request, the number of the connection it came on.
    """
    async with keepalive_server(lambda number, request: answer(number, bytes(request))) as (
        url,
        seen,
    ):
        yield url, seen.connections


OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


async def _post(client: OwnClient, url: str, headers: dict[str, str] | None = None) -> bytes:
    async with client.stream("POST", url, content=b"{}", headers=headers) as response:
        assert response.is_success
        return b"".join([chunk async for chunk in response.aiter_raw()])


async def test_connections_are_kept_alive_and_reused() -> None:
    async with _raw_server(lambda _, __: OK) as (url, seen):
        client = OwnClient(httpx.URL(url), timeout=TIMEOUT)
        with anyio.fail_after(BOUND):
            for _ in range(3):
                assert await _post(client, url) == b"{}"
        await client.aclose()
    assert seen == [1, 1, 1]


async def test_expired_idle_connections_are_closed_not_reused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_http_client, "KEEPALIVE_EXPIRY", -1.0)  # every idle one expired
    async with _raw_server(lambda _, __: OK) as (url, seen):
        client = OwnClient(httpx.URL(url), timeout=TIMEOUT)
        with anyio.fail_after(BOUND):
            for _ in range(3):
                assert await _post(client, url) == b"{}"
            assert len(client._idle) == 1  # the older ones were closed on the way
        await client.aclose()
        assert client._idle == []
    assert seen == [1, 2, 3]


async def test_a_connection_the_server_closed_while_idle_is_replaced() -> None:
    closing = OK.replace(b"Content-Length", b"Connection: close\r\nContent-Length")

    def answer(connection: int, request: bytes) -> bytes | None:
        return closing if connection == 1 else OK

    async with _raw_server(answer) as (url, seen):
        client = OwnClient(httpx.URL(url), timeout=TIMEOUT)
        with anyio.fail_after(BOUND):
            assert await _post(client, url) == b"{}"  # "Connection: close": not kept
            assert await _post(client, url) == b"{}"
            assert await _post(client, url) == b"{}"
        await client.aclose()
    assert seen == [1, 2, 2]


async def test_a_request_the_server_read_and_dropped_is_never_sent_again() -> None:
    """Issue #21 item 1: once written, a request is not re-sent on a new connection."""
    requests = 0

    def answer(connection: int, request: bytes) -> bytes | None:
        nonlocal requests
        requests += 1
        return None if requests == 2 else OK  # reads the 2nd request, then closes

    async with _raw_server(answer) as (url, seen):
        client = OwnClient(httpx.URL(url), timeout=TIMEOUT)
        with anyio.fail_after(BOUND):
            assert await _post(client, url) == b"{}"
            with pytest.raises(httpx.RemoteProtocolError):
                await _post(client, url)
            assert await _post(client, url) == b"{}"  # the pool still serves
        await client.aclose()
    assert seen == [1, 1, 2]  # the dropped request reached the server once


async def test_a_fresh_connection_closed_without_an_answer_fails() -> None:
    async with _raw_server(lambda _, __: None) as (url, _seen):
        client = OwnClient(httpx.URL(url), timeout=TIMEOUT)
        with anyio.fail_after(BOUND), pytest.raises(httpx.RemoteProtocolError):
            await _post(client, url)
        await client.aclose()


async def test_a_body_left_unread_closes_its_connection() -> None:
    async with _raw_server(lambda _, __: OK) as (url, seen):
        client = OwnClient(httpx.URL(url), timeout=TIMEOUT)
        with anyio.fail_after(BOUND):
            async with client.stream("POST", url, content=b"{}") as response:
                assert response.status_code == 200
                # a 2-byte body arrives with the head; a longer one would still be unread
            assert await _post(client, url) == b"{}"
            long = OK.replace(b"Content-Length: 2\r\n\r\n{}", b"Content-Length: 10\r\n\r\n{}")
            async with _raw_server(lambda _, __: long) as (url2, seen2):
                other = OwnClient(httpx.URL(url2), timeout=TIMEOUT)
                async with other.stream("POST", url2, content=b"{}"):
                    pass  # 8 bytes never arrive: the connection cannot be reused
                with pytest.raises(httpx.ReadTimeout):
                    async with other.stream(
                        "POST", url2, content=b"{}", timeout=httpx.Timeout(10.0, read=0.2)
                    ) as response:
                        async for _ in response.aiter_raw():
                            pass
                await other.aclose()
        await client.aclose()
    assert seen == [1, 1]
    assert seen2 == [1, 2]


async def test_cookies_the_endpoint_sets_are_sent_back() -> None:
    requests: list[bytes] = []

    def answer(connection: int, request: bytes) -> bytes:
        requests.append(request)
        return OK.replace(b"\r\n\r\n", b"\r\nSet-Cookie: lb=r2; Path=/\r\n\r\n", 1)

    async with _raw_server(answer) as (url, _seen):
        client = OwnClient(httpx.URL(url), timeout=TIMEOUT)
        with anyio.fail_after(BOUND):
            await _post(client, url)
            await _post(client, url)
        await client.aclose()
    assert b"cookie:" not in requests[0].lower()
    assert b"\r\nCookie: lb=r2\r\n" in requests[1]


async def test_a_user_agent_is_sent_unless_the_caller_names_one() -> None:
    requests: list[bytes] = []

    def answer(connection: int, request: bytes) -> bytes:
        requests.append(request)
        return OK

    async with _raw_server(answer) as (url, _seen):
        client = OwnClient(httpx.URL(url), timeout=TIMEOUT)
        with anyio.fail_after(BOUND):
            await _post(client, url)
            await _post(client, url, {"user-agent": "mine/1"})
        await client.aclose()
    assert f"\r\nUser-Agent: {USER_AGENT}\r\n".encode() in requests[0]
    assert b"\r\nuser-agent: mine/1\r\n" in requests[1]
    assert b"mrtr/" not in requests[1]


async def test_a_refused_connection_is_a_connect_error() -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    await listener.aclose()  # nothing listens there now
    client = OwnClient(httpx.URL(f"http://127.0.0.1:{port}/mcp"), timeout=TIMEOUT)
    with anyio.fail_after(BOUND), pytest.raises(httpx.ConnectError):
        await _post(client, f"http://127.0.0.1:{port}/mcp")
    await client.aclose()


# -- TLS -------------------------------------------------------------------------------


def _tls_contexts() -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A throwaway CA-less certificate for 127.0.0.1: (server context, client context)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    with tempfile.TemporaryDirectory() as folder:
        cert_path, key_path = Path(folder) / "cert.pem", Path(folder) / "key.pem"
        cert_path.write_bytes(cert_pem)
        key_path.write_bytes(key_pem)
        server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server.load_cert_chain(cert_path, key_path)
    client = ssl.create_default_context(cadata=cert_pem.decode())
    return server, client


async def test_https_keeps_its_connection_and_checks_the_certificate() -> None:
    server_context, client_context = _tls_contexts()
    seen: list[int] = []
    counter = 0

    async def serve(stream: anyio.abc.ByteStream) -> None:
        nonlocal counter
        counter += 1
        number, buffer = counter, bytearray()
        async with stream:
            while (await read_request(stream, buffer)) is not None:  # type: ignore[arg-type]
                seen.append(number)
                await stream.send(OK)

    tcp = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = tcp.extra(anyio.abc.SocketAttribute.local_port)
    listener = TLSListener(tcp, server_context, standard_compatible=False)
    url = f"https://127.0.0.1:{port}/mcp"
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, serve)
        client = OwnClient(httpx.URL(url), timeout=TIMEOUT, tls=client_context)
        with anyio.fail_after(BOUND):
            assert await _post(client, url) == b"{}"
            assert await _post(client, url) == b"{}"
        await client.aclose()
        untrusting = OwnClient(httpx.URL(url), timeout=TIMEOUT, tls=ssl.create_default_context())
        with anyio.fail_after(BOUND), pytest.raises(httpx.ConnectError):
            await _post(untrusting, url)
        await untrusting.aclose()
        tg.cancel_scope.cancel()
    assert seen == [1, 1]
