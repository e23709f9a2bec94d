# Hostile HTTP/1.1 framing over raw sockets: request smuggling (Transfer-Encoding / Content-Length
# / Host combinations), chunk extensions and trailers, large pipelined bursts and trickling
# bodies. Each case asserts the exact outcome (the status and message, and whether the
# connection closes), then that the server is still up and answers a normal request.
import json
import select
import socket
import threading
import time

import pytest

from conftest import Server

requests = pytest.importorskip("requests")

READ_TIMEOUT_S = 1  # --http-read-timeout, short so that the deadline tests run fast


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("framing"), "--http-read-timeout", str(READ_TIMEOUT_S))
    yield srv
    assert srv.alive(), "the server died: " + srv.log()
    assert srv.stop() == 0, srv.log()


def parse_responses(data):
    """Splits bytes into complete (status, headers, body) responses (Content-Length framed);
    returns them and the bytes left over."""
    out = []
    while b"\r\n\r\n" in data:
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            headers[name.strip().lower().decode()] = value.strip().decode()
        length = int(headers.get("content-length", "0"))
        if len(rest) < length:
            break
        out.append((status, headers, rest[:length]))
        data = rest[length:]
    return out, data


def read_until_closed(sock, timeout=10.0):
    """Everything the server sends until it closes; asserts that it does within `timeout`."""
    sock.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return data
            data += chunk
    except ConnectionResetError:
        return data
    except socket.timeout:
        raise AssertionError(f"the connection stayed open; received {data[:300]!r}")


def exchange(server, data):
    """Sends `data` on a fresh connection; returns the responses, having asserted the server
    closed the connection and sent nothing past them."""
    with socket.create_connection((server.host, server.port), timeout=10) as s:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused before we finished sending: the answer is still there to read
        responses, rest = parse_responses(read_until_closed(s))
    assert rest == b"", rest[:300]
    return responses


def assert_refused(server, data, status, message):
    responses = exchange(server, data)
    assert len(responses) == 1, responses
    got_status, headers, body = responses[0]
    assert got_status == status, body
    assert headers.get("connection") == "close"
    assert message in json.loads(body)["error"]["message"]


def assert_serves_normally(server):
    assert server.alive(), server.log()
    assert server.get("/health").status_code == 200
    r = server.post("/generate", {"text": "Once upon a time",
                                  "sampling_params": {"max_new_tokens": 2, "temperature": 0}})
    assert r.status_code == 200 and r.json()["meta_info"]["completion_tokens"] == 2


BODY = b'{"prompt": "a"}'
SMUGGLED = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"


def request(head_fields, body=BODY + SMUGGLED, version=b"HTTP/1.1"):
    return b"POST /tokenize " + version + b"\r\n" + b"".join(
        f + b"\r\n" for f in head_fields) + b"\r\n" + body


CL = b"Content-Length: %d" % len(BODY)
CHUNKED_BODY = b"%x\r\n" % len(BODY) + BODY + b"\r\n0\r\n\r\n"

# (name, request bytes, status, substring of the error message). Each would otherwise be framed
# by Content-Length (or have no body), so that the bytes after it ran as a second request.
SMUGGLING = [
    ("identity with content-length",
     request([b"Host: x", b"Transfer-Encoding: identity", CL]), 400,
     "both Transfer-Encoding and Content-Length"),
    ("gzip with content-length", request([b"Host: x", b"Transfer-Encoding: gzip", CL]), 400,
     "both Transfer-Encoding and Content-Length"),
    ("chunked, identity with content-length",
     request([b"Host: x", b"Transfer-Encoding: chunked, identity", CL]), 400,
     "both Transfer-Encoding and Content-Length"),
    ("identity alone", request([b"Host: x", b"Transfer-Encoding: identity"]), 400,
     "does not end in chunked"),
    ("gzip alone", request([b"Host: x", b"Transfer-Encoding: gzip"]), 400,
     "does not end in chunked"),
    ("chunked, identity alone", request([b"Host: x", b"Transfer-Encoding: chunked, identity"]),
     400, "does not end in chunked"),
    ("gzip, chunked", request([b"Host: x", b"Transfer-Encoding: gzip, chunked"],
                              CHUNKED_BODY + SMUGGLED), 501, "'gzip' is not supported"),
    ("chunked in http/1.0", request([b"Host: x", b"Transfer-Encoding: chunked"],
                                    CHUNKED_BODY + SMUGGLED, version=b"HTTP/1.0"), 400,
     "HTTP/1.0"),
    ("chunked in http/1.0 with content-length",
     request([b"Transfer-Encoding: chunked", CL], version=b"HTTP/1.0"), 400, ""),
    ("differing content-lengths", request([b"Host: x", CL, b"Content-Length: 1"]), 400,
     "Content-Length"),
    ("content-length list", request([b"Host: x", b"Content-Length: 15, 1"]), 400,
     "Content-Length"),
    ("no host", request([CL]), 400, "needs a Host header"),
    ("two hosts", request([b"Host: a", b"Host: b", CL]), 400, "more than one Host header"),
]


@pytest.mark.parametrize("name,data,status,message", SMUGGLING, ids=[c[0] for c in SMUGGLING])
def test_framing_doubt_is_refused_and_closed(server, name, data, status, message):
    assert_refused(server, data, status, message)
    assert_serves_normally(server)


def test_good_framings_still_served(server):
    for data in (request([b"Host: x", CL], BODY),
                 request([b"Host: x", b"Transfer-Encoding: chunked"], CHUNKED_BODY),
                 request([b"Host: x", b"Transfer-Encoding: CHUNKED"], CHUNKED_BODY),
                 request([b"Host: x", CL, CL], BODY),
                 request([CL], BODY, version=b"HTTP/1.0")):
        with socket.create_connection((server.host, server.port), timeout=10) as s:
            s.sendall(data + b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            responses, rest = parse_responses(read_until_closed(s))
        statuses = [r[0] for r in responses]
        # HTTP/1.0 closes after its one answer; HTTP/1.1 answers the next request too.
        assert statuses == ([200] if b"HTTP/1.0" in data[:30] else [200, 200]), responses
        assert "tokens" in json.loads(responses[0][2])


CHUNKED_HEAD = b"POST /tokenize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"


def test_huge_trailer_field_does_not_kill_the_server(server):
    # A trailer field of 64 KiB or more used to throw out of the io thread: abort.
    data = (CHUNKED_HEAD + b"%x\r\n" % len(BODY) + BODY + b"\r\n0\r\nX-Trailer: " +
            b"a" * 70_000 + b"\r\n\r\n")
    assert_refused(server, data, 400, "the trailer is longer than 4096 bytes")
    assert server.alive(), server.log()
    assert_serves_normally(server)


def test_trailer_is_refused(server):
    data = CHUNKED_HEAD + b"%x\r\n" % len(BODY) + BODY + b"\r\n0\r\nX-Trailer: 1\r\n\r\n"
    assert_refused(server, data, 400, "trailer fields are not supported")
    assert_serves_normally(server)


def test_endless_chunk_extension_is_refused_without_its_end(server):
    # The server answers once the line passes its bound, without waiting for (or buffering) more.
    with socket.create_connection((server.host, server.port), timeout=10) as s:
        s.sendall(CHUNKED_HEAD + b"1;ext=" + b"e" * 8000)
        responses, _ = parse_responses(read_until_closed(s))
    assert [r[0] for r in responses] == [400]
    assert b"chunk-size line" in responses[0][2]
    assert_serves_normally(server)


def test_many_chunk_extensions_are_refused(server):
    # A body in one-byte chunks, each with a 66-byte extension: 6.4 KB of them in all.
    json_body = json.dumps({"prompt": "a", "pad": "x" * 70}).encode()
    body = b"".join(b"1;ext=" + b"e" * 60 + b"\r\n" + bytes([c]) + b"\r\n" for c in json_body)
    assert_refused(server, CHUNKED_HEAD + body + b"0\r\n\r\n", 400, "chunk extensions")
    assert_serves_normally(server)


def test_small_chunk_extensions_are_accepted(server):
    body = b"".join(b"1;a=b\r\n" + bytes([c]) + b"\r\n" for c in BODY)
    responses = exchange(server, CHUNKED_HEAD.replace(b"Host: x", b"Host: x\r\nConnection: close")
                         + body + b"0;last\r\n\r\n")
    assert [r[0] for r in responses] == [200]


def generate_request(rid, max_new_tokens, pad, ignore_eos=False):
    body = json.dumps({"text": "Once upon a time", "rid": rid, "pad": "x" * pad,
                       "sampling_params": {"max_new_tokens": max_new_tokens, "temperature": 0,
                                           "ignore_eos": ignore_eos}}).encode()
    return (b"POST /generate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body) + body)


@pytest.mark.parametrize("count,pad", [(200, 0), (160, 20_000)], ids=["200 small", "1.6 MB"])
def test_pipelined_burst_answered_in_order(server, count, pad):
    # The first reply (200 tokens, ~50 ms) is pending while the rest of the burst arrives: past
    # kMaxPipelinedBytes (1 MiB) in the second case, where the server stops reading. It used to
    # drop the connection there (a reset: no answer at all); now the client waits, then is
    # answered in order.
    expected, chunks = [], []
    for i in range(count):
        if i % 2:
            chunks.append(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            expected.append(None)
        else:
            rid = f"burst-{pad}-{i}"
            chunks.append(generate_request(rid, 200 if i == 0 else 2, pad, ignore_eos=i == 0))
            expected.append(rid)
    data = b"".join(chunks)
    with socket.create_connection((server.host, server.port), timeout=30) as s:
        writer = threading.Thread(target=s.sendall, args=(data,))
        writer.start()
        received, responses = b"", []
        deadline = time.monotonic() + 60
        while len(responses) < count:
            assert time.monotonic() < deadline, f"{len(responses)} of {count} answered"
            chunk = s.recv(65536)
            assert chunk, f"connection closed after {len(responses)} of {count} answers"
            received += chunk
            more, received = parse_responses(received)
            responses += more
        writer.join(30)
    assert len(responses) == count
    for rid, (status, _, body) in zip(expected, responses):
        assert status == 200, body
        if rid is None:
            assert body == b""
        else:
            assert json.loads(body)["meta_info"]["id"] == rid
    assert_serves_normally(server)


def test_trickling_body_is_dropped_by_its_deadline(server):
    # A 1000-byte body may take one read timeout plus 1000 bytes at 256 KiB/s: about 1 s. A byte
    # every 0.25 s keeps each read within the read timeout, so only the body deadline ends it
    # (it used to allow 10 read timeouts).
    with socket.create_connection((server.host, server.port), timeout=10) as s:
        s.sendall(b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
        start = time.monotonic()
        closed_after = None
        while time.monotonic() - start < 8:
            readable, _, _ = select.select([s], [], [], 0.25)
            if readable:
                try:
                    if s.recv(65536) == b"":
                        closed_after = time.monotonic() - start
                        break
                except ConnectionResetError:
                    closed_after = time.monotonic() - start
                    break
            try:
                s.sendall(b"a")
            except (BrokenPipeError, ConnectionResetError):
                closed_after = time.monotonic() - start
                break
    assert closed_after is not None, "a trickling client was never dropped"
    assert closed_after < 4 * READ_TIMEOUT_S, closed_after
    assert_serves_normally(server)


def test_steady_body_within_its_deadline_is_served(server):
    # 1 MiB sent in 30 pieces over ~1.5 s: longer than one read timeout, well within the
    # allowance (1 s + 1 MiB at 256 KiB/s = 5 s), so a client that keeps sending is answered.
    body = json.dumps({"prompt": "a", "pad": "x" * (1 << 20)}).encode()
    with socket.create_connection((server.host, server.port), timeout=10) as s:
        s.sendall(b"POST /tokenize HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body))
        step = len(body) // 30 + 1
        for i in range(0, len(body), step):
            s.sendall(body[i:i + step])
            time.sleep(0.05)
        responses, _ = parse_responses(read_until_closed(s))
    assert [r[0] for r in responses] == [200], responses


def test_trickling_after_an_error_is_dropped_by_the_linger_deadline(server):
    # After an error answer the server half-closes and reads (and drops) what still comes, each
    # read within 2 s, but for 10 s at most: a byte every 1.5 s used to keep the connection open
    # for good. Once the server has closed, a send is answered by a reset, and the next one fails.
    with socket.create_connection((server.host, server.port), timeout=10) as s:
        s.sendall(b"GET /health HTTP/1.1\r\n\r\n")  # no Host: 400
        start = time.monotonic()
        answer = s.recv(65536)
        closed_after = None
        while time.monotonic() - start < 20:
            time.sleep(1.5)
            try:
                s.sendall(b"x")
            except (BrokenPipeError, ConnectionResetError):
                closed_after = time.monotonic() - start
                break
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert closed_after is not None and 9 < closed_after < 15, closed_after
    assert_serves_normally(server)
