"""The HTML report in a real headless Chromium: it renders, is not blank, and fetches nothing.

Chromium is Debian's ``chromium`` package (``.ci/run`` installs it when absent). Without it the
tests skip, except under CI (``CI`` set), where a missing browser is a failure.

How "fetches nothing" is proved, twice over:

1. **In the page.** Chromium is driven over the DevTools protocol (``--remote-debugging-pipe``,
   no extra package) with the Network domain enabled on the page: every request the page makes,
   even one the CSP then blocks, appears as ``Network.requestWillBeSent``. The report page must
   show none but its own ``file://`` document.
2. **On the wire.** All of Chromium's traffic is routed to a local TCP listener
   (``--proxy-server`` with loopback included, and ``--host-resolver-rules`` mapping every host
   to it, so nothing can leave the machine). Chromium's own services (component updater,
   sign-in, network time) contact their hosts at start-up whatever the page is, and flags do not
   silence all of them; those connections are recognised by host and set aside, and any other
   connection fails the test.

Positive controls show that both checks can fail: a page without our CSP that names an external
image makes the page request it and the listener receive the connection; the same image inside a
page carrying our CSP is blocked before any connection is made.
"""

from __future__ import annotations

import base64
import fcntl
import io
import json
import os
import queue
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from audit.report.html import CSP, render_html

DATA = Path(__file__).parent / "data"

#: Hosts that Chromium's own background services contact at start-up, not the page.
BROWSER_SERVICE_HOSTS = frozenset({
    "update.googleapis.com", "accounts.google.com", "clients2.google.com", "clients1.google.com",
    "clientservices.googleapis.com", "redirector.gvt1.com", "edgedl.me.gvt1.com",
    "safebrowsing.googleapis.com", "safebrowsingohttpgateway.googleapis.com",
    "optimizationguide-pa.googleapis.com", "content-autofill.googleapis.com",
    "android.clients.google.com", "www.googleapis.com", "dl.google.com",
})
CANARY = "unlearn-audit-canary.example.com"

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--no-default-browser-check",
    "--disable-extensions", "--disable-default-apps", "--disable-client-side-phishing-detection",
    "--disable-domain-reliability", "--disable-breakpad", "--no-pings", "--metrics-recording-only",
    "--password-store=basic", "--use-mock-keychain", "--disable-dev-shm-usage",
    "--disable-features=NetworkTimeServiceQuerying,OptimizationHints,MediaRouter,Translate",
    "--force-color-profile=srgb", "--hide-scrollbars", "--window-size=1200,2000",
]


def find_chromium() -> str | None:
    """The browser binary: $CHROMIUM, else Debian's real binary, else chromium on PATH.

    Debian's ``/usr/bin/chromium`` is a shell wrapper that adds ``--enable-remote-extensions``
    and API keys; the binary it wraps (``/usr/lib/chromium/chromium``) is preferred.
    """
    for candidate in (os.environ.get("CHROMIUM"), "/usr/lib/chromium/chromium"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    for name in ("chromium", "chromium-browser"):
        if path := shutil.which(name):
            return path
    return None


@pytest.fixture(scope="module")
def chromium() -> str:
    path = find_chromium()
    if path is None:
        message = ("headless Chromium not found (Debian: apt-get install -y chromium; or set "
                   "CHROMIUM=/path/to/chromium)")
        if os.environ.get("CI"):
            pytest.fail(message + ": .ci/run installs it, so under CI this is an error")
        pytest.skip(message)
    return path


# ----------------------------------------------------------------------------------------
class Sink:
    """A TCP listener standing in for the whole network: records the first request line."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.requests: list[str] = []
        self.idle_connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                conn.settimeout(1.0)
                data = b""
                try:
                    while b"\r\n" not in data and len(data) < 8192:
                        chunk = conn.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                except OSError:
                    pass
                line = data.split(b"\r\n", 1)[0].decode("latin-1")
                if line:
                    self.requests.append(line)
                else:
                    # Chromium may pre-connect to its proxy and send nothing: no byte left the
                    # browser, so this is not a request. Counted, not failed (positive controls
                    # below show that real fetches do arrive with a request line).
                    self.idle_connections += 1

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()

    @staticmethod
    def host(request_line: str) -> str:
        """``CONNECT host:443 HTTP/1.1`` or ``GET http://host/path HTTP/1.1`` -> host."""
        parts = request_line.split()
        target = parts[1] if len(parts) > 1 else ""
        target = target.split("://", 1)[-1]
        return target.split("/", 1)[0].rsplit(":", 1)[0].lower()

    def page_connections(self) -> list[str]:
        return [r for r in self.requests if self.host(r) not in BROWSER_SERVICE_HOSTS]


class Browser:
    """Headless Chromium driven over the DevTools protocol on a pipe (fds 3 and 4)."""

    def __init__(self, binary: str, sink: Sink) -> None:
        # a short private directory: Chromium's singleton socket path must fit in sun_path
        self.tmp = tmp = Path(tempfile.mkdtemp(prefix="ua-chromium-"))
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        # Chromium reads commands on fd 3 and writes replies on fd 4. A tiny Python trampoline
        # puts the pipe ends there (copied to free descriptors >= 10 first, so neither is 3 or 4
        # already) and execs the browser: no shell quirks, no preexec_fn next to threads.
        hi_r, hi_w = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_chrome_r, from_chrome_w))
        args = FLAGS + [f"--user-data-dir={tmp / 'profile'}", "--remote-debugging-pipe",
                        f"--proxy-server=http://127.0.0.1:{sink.port}", "--proxy-bypass-list=<-loopback>",
                        f"--host-resolver-rules=MAP * 127.0.0.1:{sink.port}", "about:blank"]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp),
               "TMPDIR": str(tmp), "LANG": "C.UTF-8"}
        trampoline = ("import os, sys; r, w = int(sys.argv[1]), int(sys.argv[2]); os.dup2(r, 3); "
                      "os.dup2(w, 4); os.close(r); os.close(w); os.execv(sys.argv[3], sys.argv[3:])")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", trampoline, str(hi_r), str(hi_w), binary, *args],
            pass_fds=(hi_r, hi_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, env=env)
        for fd in (to_chrome_r, from_chrome_w, hi_r, hi_w):
            os.close(fd)
        self._messages: queue.Queue = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._next_id = 0
        self.events: list[dict] = []

    def _read(self) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(self._from_chrome, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                self._messages.put(None)
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                self._messages.put(json.loads(raw))

    def _pump(self, timeout: float) -> dict | None:
        try:
            msg = self._messages.get(timeout=timeout)
        except queue.Empty:
            return None
        if msg is None:
            err = self.proc.stderr.read().decode(errors="replace")[-2000:] if self.proc.stderr else ""
            raise RuntimeError(f"Chromium closed the DevTools pipe (exit {self.proc.poll()}): {err}")
        if "method" in msg:
            self.events.append(msg)
        return msg

    def send(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float = 20.0) -> dict:
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            reply = self._pump(deadline - time.monotonic())
            if reply and reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
        raise TimeoutError(method)

    def wait_for(self, method: str, session: str, timeout: float = 20.0) -> dict:
        seen = len(self.events)
        deadline = time.monotonic() + timeout
        while True:
            for e in self.events[seen:]:
                if e["method"] == method and e.get("sessionId") == session:
                    return e
            seen = len(self.events)
            if time.monotonic() > deadline:
                raise TimeoutError(method)
            self._pump(0.1)

    def settle(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self._pump(0.05)

    def open(self, url: str) -> dict:
        """Load ``url``; return its requests, console messages, screenshot and layout."""
        target = next(t for t in self.send("Target.getTargets")["targetInfos"] if t["type"] == "page")
        session = self.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})["sessionId"]
        for domain in ("Network", "Page", "Log", "DOM"):
            self.send(f"{domain}.enable", session=session)
        self.send("Emulation.setDeviceMetricsOverride", {"width": 1200, "height": 2000, "deviceScaleFactor": 1,
                                                         "mobile": False}, session=session)
        start = len(self.events)
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait_for("Page.loadEventFired", session)
        self.settle(0.5)  # anything late (lazy loads, redirects) still lands in the log
        shot = base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"}, session=session)["data"])
        root = self.send("DOM.getDocument", {"depth": 0}, session=session)["root"]["nodeId"]
        plots = self.send("DOM.querySelectorAll", {"nodeId": root, "selector": "svg.plot"}, session=session)
        verdict = self.send("DOM.querySelector", {"nodeId": root, "selector": ".verdict-word"}, session=session)
        verdict_html = (self.send("DOM.getOuterHTML", {"nodeId": verdict["nodeId"]}, session=session)["outerHTML"]
                        if verdict.get("nodeId") else "")
        layout = self.send("Page.getLayoutMetrics", session=session)
        events = [e for e in self.events[start:] if e.get("sessionId") == session]
        return {
            "requests": [e["params"]["request"]["url"] for e in events
                         if e["method"] == "Network.requestWillBeSent"],
            "failed": [e["params"] for e in events if e["method"] == "Network.loadingFailed"],
            "log": [e["params"]["entry"] for e in events if e["method"] == "Log.entryAdded"],
            "screenshot": shot, "n_plots": len(plots["nodeIds"]), "verdict_html": verdict_html,
            "height": layout["cssContentSize"]["height"],
        }

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_chrome)
        if self.proc.stderr:
            self.proc.stderr.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def visit(binary: str, page: Path) -> tuple[dict, list[str], list[str]]:
    """Open ``page`` in a fresh browser; return (page result, its network requests, wire hits)."""
    sink = Sink()
    browser = Browser(binary, sink)
    try:
        result = browser.open(page.as_uri())
    finally:
        browser.close()
        time.sleep(0.1)
        sink.close()
    network = [u for u in result["requests"] if not u.startswith(("file:", "data:", "about:"))]
    return result, network, sink.page_connections()


def pixels(png: bytes):
    import matplotlib.image

    return matplotlib.image.imread(io.BytesIO(png), format="png")[:, :, :3]


def near(img, hex_colour: str, tol: float = 0.08):
    rgb = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    return (abs(img - rgb) <= tol).all(axis=2)


# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, verdict, banner_colour", [
    ("sample-report.json", "CONSISTENT", "#1b7f3b"),
    ("sample-report-violated.json", "VIOLATED", "#b3261e"),
])
@pytest.mark.slow
def test_report_renders_and_fetches_nothing(chromium, tmp_path, name, verdict, banner_colour):
    """Set UNLEARN_AUDIT_SCREENSHOTS=<dir> to keep the screenshots."""
    report = json.loads((DATA / name).read_text())
    page = tmp_path / "report.html"
    page.write_text(render_html(report), encoding="utf-8")

    result, network, wire = visit(chromium, page)

    # it renders: the DOM holds the banner and the six charts (the sixth: f-DP trade-off), over many screens
    assert f">{verdict}<" in result["verdict_html"]
    assert result["n_plots"] == 6
    assert result["height"] > 4000

    # the screenshot is not blank, and the banner at the top has the verdict's colour
    img = pixels(result["screenshot"])
    if keep := os.environ.get("UNLEARN_AUDIT_SCREENSHOTS"):  # e.g. to keep them as CI artefacts
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / name.replace(".json", ".png")).write_bytes(result["screenshot"])
    assert img.shape[:2] == (2000, 1200)
    assert img.std() > 0.1
    assert (img.mean(axis=2) < 0.9).mean() > 0.05  # plenty of ink, not a white page
    assert near(img[:400], banner_colour).sum() > 2000  # the banner border (3 px, full width)

    # it fetches nothing: no request from the page, no connection on the wire
    assert network == [], network
    assert wire == [], wire
    assert not [e for e in result["log"] if "Content Security Policy" in e.get("text", "")]


def test_the_network_checks_can_fail(chromium, tmp_path):
    """Positive control: an external image is seen by both checks; our CSP then blocks it."""
    img = f'<img src="http://{CANARY}/pixel.png" alt="">'
    open_page = tmp_path / "open.html"
    open_page.write_text(f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{img}</body></html>')
    result, network, wire = visit(chromium, open_page)
    assert network == [f"http://{CANARY}/pixel.png"]
    assert [Sink.host(r) for r in wire] == [CANARY]

    guarded = tmp_path / "guarded.html"
    guarded.write_text('<!DOCTYPE html><html><head><meta charset="utf-8">'
                       f'<meta http-equiv="Content-Security-Policy" content="{CSP}"></head><body>{img}</body></html>')
    result, network, wire = visit(chromium, guarded)
    assert network == [f"http://{CANARY}/pixel.png"]  # the page tries (so check 1 sees it) ...
    assert [f.get("blockedReason") for f in result["failed"]] == ["csp"]  # ... the CSP refuses,
    assert wire == []  # and no connection is made
    assert any("Content Security Policy" in e.get("text", "") for e in result["log"])
