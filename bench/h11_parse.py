"""`python -m bench.h11_parse [--n N]`: what h11 would cost the own HTTP/1.1 client.

Issue #28 item 4 asks whether h11 can sit under the own client. This times, per round
trip and in one process, the sans-IO work only (no sockets): writing a typical MCP POST
and reading a typical JSON response, with the own `_http1` core and with an
``h11.Connection`` (kept across requests, as a pooled connection would keep it). The
difference is what h11 adds to the client CPU per round trip that `bench.compare`
measures.
"""

from __future__ import annotations

import argparse
import statistics
import time

import h11

from mrtr.transports._http1 import BodyReader, encode_request, head_end, parse_head

HEADERS = [
    ("Accept", "application/json, text/event-stream"),
    ("Content-Type", "application/json"),
    ("MCP-Protocol-Version", "2026-07-28"),
    ("Mcp-Method", "tools/call"),
    ("Mcp-Name", "echo"),
    ("Accept-Encoding", "gzip, deflate"),
    ("User-Agent", "mrtr/0"),
]
BODY = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}'
RESPONSE = (
    b"HTTP/1.1 200 OK\r\ndate: Tue, 01 Dec 2026 19:00:00 GMT\r\nserver: uvicorn\r\n"
    b"content-type: application/json\r\ncontent-length: 80\r\n\r\n" + b"x" * 80
)


def own(n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        encode_request("POST", b"/mcp", b"127.0.0.1:8000", HEADERS, BODY)
        split = head_end(RESPONSE)
        assert split is not None
        reader = BodyReader(parse_head(RESPONSE[: split[0]]), method="POST")
        reader.feed(RESPONSE[split[1] :])
    return (time.process_time() - start) / n


def with_h11(n: int) -> float:
    connection = h11.Connection(h11.CLIENT)
    headers = [("Host", "127.0.0.1:8000"), *HEADERS, ("Content-Length", str(len(BODY)))]
    start = time.process_time()
    for _ in range(n):
        request = h11.Request(method="POST", target="/mcp", headers=headers)
        connection.send(request)
        connection.send(h11.Data(data=BODY))
        connection.send(h11.EndOfMessage())
        connection.receive_data(RESPONSE)
        while not isinstance(connection.next_event(), h11.EndOfMessage):
            pass
        connection.start_next_cycle()
    return (time.process_time() - start) / n


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.h11_parse")
    parser.add_argument("--n", type=int, default=20000, help="round trips per repetition")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    ours = statistics.median(own(args.n) for _ in range(args.reps)) * 1e6
    theirs = statistics.median(with_h11(args.n) for _ in range(args.reps)) * 1e6
    print(f"own _http1: {ours:.1f} us per round trip")
    print(f"h11:        {theirs:.1f} us per round trip (+{theirs - ours:.1f} us)")


if __name__ == "__main__":
    main()
