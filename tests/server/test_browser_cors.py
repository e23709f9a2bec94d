# CORS as a browser enforces it. Headless Chromium loads a page from one origin (a static file
# server on its own port) whose script streams /v1/chat/completions from sgl-server on another
# port and paints the answer as it arrives; once the page has settled (the test waits for it over
# the DevTools protocol) the test reads the page's text, its console's CORS errors and the
# screenshot's pixels. By default the answer renders, equal to what a plain HTTP client streams
# for the same greedy request. With --allowed-origins naming another origin the same page is
# refused at the preflight and paints its failure colour, while the page served from the listed
# origin (a host name Chromium maps to 127.0.0.1) still gets its answer from that server.
import base64
import fcntl
import functools
import http.server
import json
import os
import select
import shutil
import struct
import subprocess
import threading
import time
import urllib.parse
import zlib

import pytest

from conftest import Server, raise_fd_limit, require

LISTED_HOST = "ui.example"  # resolved by Chromium only (--host-resolver-rules)
BODY = {"model": "stories260K", "messages": [{"role": "user", "content": "Tell me a story."}],
        "max_tokens": 24, "temperature": 0, "stream": True}
WIDTH, HEIGHT = 480, 320
LOADING, SUCCESS, FAILURE, ANSWER_INK = (128, 128, 128), (0, 160, 0), (200, 0, 0), (255, 255, 255)

# The page: one cross-origin fetch whose JSON content type makes the browser send a preflight;
# the SSE stream is read chunk by chunk and each delta appended to #answer. The background goes
# from grey (loading) to green after [DONE], or to red on any failure; #status says which, and
# the body's data-state tells the test the page has settled.
PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>sgl-server CORS check</title>
<link rel="icon" href="data:,">
<style>
body { margin: 0; background: rgb%(loading)s; font: 16px monospace; }
#status { padding: 8px; color: black; }
#answer { padding: 8px; margin: 0; color: rgb%(ink)s; font: bold 22px monospace;
          white-space: pre-wrap; }
</style></head>
<body><div id="status">loading</div><pre id="answer"></pre>
<script>
const params = new URLSearchParams(location.search);
const status = document.getElementById("status"), answer = document.getElementById("answer");
async function run() {
  const response = await fetch(params.get("api") + "/v1/chat/completions", {
    method: "POST", headers: {"Content-Type": "application/json"}, body: params.get("body")});
  if (!response.ok) throw new Error("HTTP " + response.status);
  const reader = response.body.getReader(), decoder = new TextDecoder();
  let pending = "", deltas = 0;
  for (;;) {
    const {done, value} = await reader.read();
    if (done) throw new Error("the stream ended before [DONE]");
    pending += decoder.decode(value, {stream: true});
    let end;
    while ((end = pending.indexOf("\\n\\n")) >= 0) {
      const event = pending.slice(0, end);
      pending = pending.slice(end + 2);
      if (!event.startsWith("data: ")) continue;
      const data = event.slice(6);
      if (data === "[DONE]") return deltas;
      const content = JSON.parse(data).choices[0].delta.content;
      if (content) { answer.textContent += content; deltas++; }
    }
  }
}
run().then(deltas => {
  document.body.style.background = "rgb%(success)s";
  status.textContent = "done: " + deltas + " deltas";
  document.body.dataset.state = "done";
}, error => {
  document.body.style.background = "rgb%(failure)s";
  status.textContent = "failed: " + error;
  document.body.dataset.state = "failed";
});
</script></body></html>
""" % {"loading": LOADING, "success": SUCCESS, "failure": FAILURE, "ink": ANSWER_INK}


def chromium_binary():
    for name in (os.environ.get("SGL_CHROMIUM"), "chromium", "chromium-browser",
                 "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


@pytest.fixture(scope="module")
def chromium():
    binary = chromium_binary()
    require(binary is not None,
            "no chromium on PATH (scripts/install_deps.sh installs Debian's chromium)")
    return binary


@pytest.fixture(scope="module")
def page_server(tmp_path_factory, chromium):
    """The page's own origin: a static file server on an ephemeral port."""
    root = tmp_path_factory.mktemp("page")
    (root / "index.html").write_text(PAGE)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    thread.join()


@pytest.fixture(scope="module")
def open_server(tmp_path_factory, chromium):
    raise_fd_limit()
    srv = Server(tmp_path_factory.mktemp("cors-open"))
    yield srv
    assert srv.stop() == 0, srv.log()


@pytest.fixture(scope="module")
def restricted_server(tmp_path_factory, page_server):
    srv = Server(tmp_path_factory.mktemp("cors-restricted"), "--allowed-origins",
                 f"http://{LISTED_HOST}:{page_server}")
    yield srv
    assert srv.stop() == 0, srv.log()


def read_png(path):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB or RGBA PNG, non-interlaced."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour)
        elif kind == b"IDAT":
            idat += body
    channels = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride if kind else 0):  # undo the row's filter (PNG spec section 9)
            a = line[i - channels] if i >= channels else 0
            b = previous[i]
            c = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, channels)])
        previous = line
    return width, height, rows


def near(pixel, colour, tolerance=24):
    return all(abs(p - c) <= tolerance for p, c in zip(pixel, colour))


class Browser:
    """Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe:
    JSON messages ended by NUL, commands on fd 3, replies and events on fd 4), so the test can
    wait for the page's own verdict before it takes the screenshot. As root Chromium needs
    --no-sandbox; the profile is a throwaway folder."""

    def __init__(self, binary, workdir, *flags):
        commands_r, self.commands = os.pipe()
        self.replies, replies_w = os.pipe()

        def wire_fds():  # in the child: the pipe ends onto fds 3 and 4, inheritable
            ends = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (commands_r, replies_w)]
            os.dup2(ends[0], 3)
            os.dup2(ends[1], 4)

        self.log_path = workdir / "chromium.log"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--no-first-run", "--no-default-browser-check", "--hide-scrollbars",
                 f"--user-data-dir={workdir / 'profile'}", f"--window-size={WIDTH},{HEIGHT}",
                 "--remote-debugging-pipe", *flags, "about:blank"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, preexec_fn=wire_fds,
                close_fds=False)
        os.close(commands_r)
        os.close(replies_w)
        self.pending, self.events, self.last_id = b"", [], 0

    def call(self, method, session=None, timeout=30, **params):
        self.last_id += 1
        message = {"id": self.last_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self.commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self.pending:
                raw, self.pending = self.pending.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") != self.last_id:
                    self.events.append(reply)
                    continue
                assert "error" not in reply, (method, reply["error"])
                return reply["result"]
            ready, _, _ = select.select([self.replies], [], [],
                                        max(0.0, deadline - time.monotonic()))
            chunk = os.read(self.replies, 1 << 20) if ready else b""
            assert chunk, f"no answer to {method} from Chromium: {self.log()}"
            self.pending += chunk

    def log(self):
        return self.log_path.read_text(errors="replace")[-3000:]

    def close(self):
        try:
            self.call("Browser.close")
            self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            os.close(self.commands)
            os.close(self.replies)


class Page:
    """What the page showed once its script settled: #status, #answer, the screenshot, and
    the console's CORS errors."""

    def __init__(self, status, answer, png, cors_errors):
        self.status, self.answer, self.cors_errors = status, answer, cors_errors
        width, height, self.rows = read_png(png)
        assert (width, height) == (WIDTH, HEIGHT)

    def background(self):
        return self.rows[HEIGHT - 4][WIDTH - 4]  # a corner no text reaches

    def count(self, colour):
        return sum(near(p, colour) for row in self.rows for p in row)


def load(chromium, workdir, url, *flags):
    """Opens `url`, waits (up to a minute) until the page has painted its verdict, then takes
    its screenshot (kept in `workdir` as page.png) and reads its text."""
    workdir.mkdir(parents=True, exist_ok=True)
    browser = Browser(chromium, workdir, *flags)
    try:
        target = next(t for t in browser.call("Target.getTargets")["targetInfos"]
                      if t["type"] == "page")
        session = browser.call("Target.attachToTarget", targetId=target["targetId"],
                               flatten=True)["sessionId"]
        browser.call("Log.enable", session)
        browser.call("Emulation.setDeviceMetricsOverride", session, width=WIDTH, height=HEIGHT,
                     deviceScaleFactor=1, mobile=False)
        browser.call("Page.navigate", session, url=url)

        def evaluate(expression):
            return browser.call("Runtime.evaluate", session, expression=expression,
                                returnByValue=True)["result"].get("value")

        deadline = time.monotonic() + 60
        while evaluate("document.body && document.body.dataset.state") not in ("done", "failed"):
            assert time.monotonic() < deadline, f"the page never settled: {browser.log()}"
            time.sleep(0.05)
        png = workdir / "page.png"
        png.write_bytes(base64.b64decode(browser.call("Page.captureScreenshot", session,
                                                      format="png")["data"]))
        status = evaluate("document.getElementById('status').textContent")
        answer = evaluate("document.getElementById('answer').textContent")
        cors_errors = [e["params"]["entry"]["text"] for e in browser.events
                       if e.get("method") == "Log.entryAdded"
                       and e["params"]["entry"].get("category") == "cors"]
    finally:
        browser.close()
    return Page(status, answer, png, cors_errors)


def page_url(host, port, server):
    query = urllib.parse.urlencode({"api": server.url, "body": json.dumps(BODY)})
    return f"http://{host}:{port}/index.html?{query}"


def streamed_answer(server):
    """The same request from a plain HTTP client: its deltas joined."""
    r = server.post("/v1/chat/completions", BODY, stream=True)
    assert r.status_code == 200, r.text
    text = ""
    for line in r.iter_lines():
        if line.startswith(b"data: ") and line != b"data: [DONE]":
            text += json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
    assert text, "the model answered nothing, so the page's answer would prove nothing"
    return text


def assert_rendered(page, expected):
    assert page.status.startswith("done: "), (page.status, page.cors_errors)
    # How many deltas painted it is not asserted: the server joins the tokens decoded between
    # two polls of the reply into one delta, so on a busy machine the tiny model's whole answer
    # can arrive as one (the answer itself is built from the deltas, checked below).
    assert page.answer == expected
    assert not page.cors_errors
    assert near(page.background(), SUCCESS), page.background()
    assert page.count(ANSWER_INK) > 100  # the answer's glyphs are on the screenshot


def assert_refused(page):
    assert page.status == "failed: TypeError: Failed to fetch", page.status
    assert page.answer == ""
    assert near(page.background(), FAILURE), page.background()
    assert page.count(ANSWER_INK) == 0
    # Chromium's console names the cause: the preflight answer lacked the allow-origin header.
    assert any("preflight" in e and "Access-Control-Allow-Origin" in e
               for e in page.cors_errors), page.cors_errors


def test_cross_origin_page_streams_the_answer(chromium, page_server, open_server, tmp_path):
    page = load(chromium, tmp_path, page_url("127.0.0.1", page_server, open_server))
    assert_rendered(page, streamed_answer(open_server))


def test_allowed_origins_refuse_other_pages(chromium, page_server, restricted_server,
                                            tmp_path):
    # The same page from 127.0.0.1, which --allowed-origins does not list: refused.
    refused = load(chromium, tmp_path / "refused",
                   page_url("127.0.0.1", page_server, restricted_server))
    assert_refused(refused)
    # The server itself answers (CORS binds browsers only), and the listed origin's page works.
    listed = load(chromium, tmp_path / "listed",
                  page_url(LISTED_HOST, page_server, restricted_server),
                  f"--host-resolver-rules=MAP {LISTED_HOST} 127.0.0.1")
    assert_rendered(listed, streamed_answer(restricted_server))
