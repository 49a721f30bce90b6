"""The HTML report in a real headless Chromium: it renders, is not blank, and fetches nothing.

Chromium is Debian's ``chromium`` package (``.ci/run`` installs it when absent), driven by
Playwright (a test dependency) through ``executable_path``, so Playwright's own browser download
(``playwright install``) is never needed. Without Chromium the tests skip, except under CI
(``CI`` set), where a missing browser is a failure.

How "fetches nothing" is proved, twice over:

1. **In the page.** Playwright reports every request of the browser context (``request``), even
   one the CSP then blocks (it fails with ``csp``). The report page must show none but its own
   ``file://`` document.
2. **On the wire.** All of Chromium's traffic goes to a local TCP listener (Playwright's ``proxy``,
   which proxies loopback too, and ``--host-resolver-rules`` mapping every host to the listener,
   so nothing can leave the machine). Chromium's own services (component updater, sign-in)
   contact their hosts at start-up whatever the page is, and flags do not silence all of them;
   those connections are recognised by host and set aside, and any other connection fails the
   test.

Positive controls show that both checks can fail: a page without our CSP that names an external
image makes the page request it and the listener receive the connection; the same image inside a
page carrying our CSP is blocked before any connection is made.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # Playwright loads only where a browser test runs, not in every worker's collection
    from playwright.sync_api import BrowserType

from audit.report.html import CSP, render_html

# A real browser start per test: the whole module is end-to-end (still run by CI's `python -m pytest`).
pytestmark = pytest.mark.slow

DATA = Path(__file__).parent / "data"

#: Hosts that Chromium's own background services contact at start-up, not the page.
BROWSER_SERVICE_HOSTS = frozenset(
    {
        "update.googleapis.com",
        "accounts.google.com",
        "clients2.google.com",
        "clients1.google.com",
        "clientservices.googleapis.com",
        "redirector.gvt1.com",
        "edgedl.me.gvt1.com",
        "safebrowsing.googleapis.com",
        "safebrowsingohttpgateway.googleapis.com",
        "optimizationguide-pa.googleapis.com",
        "content-autofill.googleapis.com",
        "android.clients.google.com",
        "www.googleapis.com",
        "dl.google.com",
    }
)
CANARY = "unlearn-audit-canary.example.com"


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
def chromium() -> Iterator[tuple[BrowserType, str]]:
    path = find_chromium()
    if path is None:
        message = "headless Chromium not found (Debian: apt-get install -y chromium; or set CHROMIUM=/path/to/chromium)"
        if os.environ.get("CI"):
            pytest.fail(message + ": .ci/run installs it, so under CI this is an error")
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        yield playwright.chromium, path


# ----------------------------------------------------------------------------------------
class _FirstLine(socketserver.StreamRequestHandler):
    timeout = 1.0  # seconds a connection may stay silent

    def handle(self) -> None:
        try:
            line = self.rfile.readline(8192).decode("latin-1").strip()
        except OSError:
            return
        # Chromium may pre-connect to its proxy and send nothing: no byte left the browser, so
        # that is not a request (the positive control shows that real fetches send a line).
        if line:
            self.server.requests.append(line)


class Sink(socketserver.ThreadingTCPServer):
    """A TCP listener standing in for the whole network: records each connection's first line."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _FirstLine)
        self.port = self.server_address[1]
        self.requests: list[str] = []
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()

    def __exit__(self, *exc) -> None:
        self.shutdown()
        super().__exit__(*exc)  # server_close() also joins the handler threads

    @staticmethod
    def host(request_line: str) -> str:
        """``CONNECT host:443 HTTP/1.1`` or ``GET http://host/path HTTP/1.1`` -> host."""
        parts = request_line.split()
        target = parts[1] if len(parts) > 1 else ""
        target = target.split("://", 1)[-1]
        return target.split("/", 1)[0].rsplit(":", 1)[0].lower()

    def page_connections(self) -> list[str]:
        return [r for r in self.requests if self.host(r) not in BROWSER_SERVICE_HOSTS]


def visit(chromium: tuple[BrowserType, str], page: Path) -> dict:
    """Open ``page`` in a fresh browser whose only network is a :class:`Sink`.

    Returns its network requests, failed requests, console messages, screenshot and layout, and
    the connections the sink received (browser services set aside).
    """
    browser_type, binary = chromium
    requests: list[str] = []
    failed: list[tuple[str, str | None]] = []
    console: list[str] = []
    # The browser is closed before the sink (``with`` exits in reverse order), so every
    # connection it made has been accepted and read by then.
    with (
        Sink() as sink,
        browser_type.launch(
            executable_path=binary,
            proxy={"server": f"http://127.0.0.1:{sink.port}"},
            args=[f"--host-resolver-rules=MAP * 127.0.0.1:{sink.port}"],
        ) as browser,
    ):
        context = browser.new_context(viewport={"width": 1200, "height": 2000})
        context.set_default_timeout(20_000)
        context.on("request", lambda r: requests.append(r.url))
        context.on("requestfailed", lambda r: failed.append((r.url, r.failure)))
        tab = context.new_page()
        # CSP violations reach the console from Chromium's log (Log.entryAdded), not from a script
        tab.on("console", lambda m: console.append(m.text))
        # "networkidle": nothing in flight for 500 ms, so late loads (lazy, redirects) are seen
        tab.goto(page.as_uri(), wait_until="networkidle")
        result = {
            "screenshot": tab.screenshot(),
            "n_plots": tab.locator("svg.plot").count(),
            "verdict_html": tab.locator(".verdict-word").evaluate_all("els => els.map(e => e.outerHTML).join('')"),
            "height": tab.evaluate("document.documentElement.scrollHeight"),
            "banner_text": tab.locator("#verdict").evaluate_all("els => els.map(e => e.innerText).join('')"),
        }
    result.update(
        network=[u for u in requests if not u.startswith(("file:", "data:", "about:"))],
        failed=failed,
        console=console,
        wire=sink.page_connections(),
    )
    return result


def pixels(png: bytes):
    import matplotlib.image

    return matplotlib.image.imread(io.BytesIO(png), format="png")[:, :, :3]


def near(img, hex_colour: str, tol: float = 0.08):
    rgb = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    return (abs(img - rgb) <= tol).all(axis=2)


# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, verdict, banner_colour",
    [
        ("sample-report.json", "CONSISTENT", "#1b7f3b"),
        ("sample-report-violated.json", "VIOLATED", "#b3261e"),
    ],
)
@pytest.mark.slow
def test_report_renders_and_fetches_nothing(chromium, tmp_path, name, verdict, banner_colour):
    """Set UNLEARN_AUDIT_SCREENSHOTS=<dir> to keep the screenshots."""
    report = json.loads((DATA / name).read_text())
    page = tmp_path / "report.html"
    page.write_text(render_html(report), encoding="utf-8")

    result = visit(chromium, page)

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
    assert result["network"] == [], result["network"]
    assert result["wire"] == [], result["wire"]
    assert not [t for t in result["console"] if "Content Security Policy" in t]


def test_a_warning_is_named_in_an_amber_banner(chromium, tmp_path):
    """Issue 24: the default audit's only finding, no-power, is read in the banner at the top of the
    rendered page (not 8,500 px down), and the banner is amber, not the green of a clean pass."""
    from audit.findings import CODES

    report = json.loads((DATA / "sample-report.json").read_text())
    report["findings"] = [{"severity": "warning", "code": "no-power", "message": "no attack proves anything"}]
    page = tmp_path / "report.html"
    page.write_text(render_html(report), encoding="utf-8")

    result = visit(chromium, page)

    text = " ".join(result["banner_text"].split())
    assert text.startswith("CONSISTENT 1 warning: " + CODES["no-power"].short + " no-power"), text
    assert "this pass proves little" in text
    img = pixels(result["screenshot"])
    assert near(img[:400], "#d99400").sum() > 2000  # the amber border, full width
    assert near(img[:400], "#1b7f3b").sum() < 100  # and no green


def test_comparison_page_renders_its_table_and_frontier_and_fetches_nothing(chromium, tmp_path):
    """`audit compare`'s page: the recommendation banner, one table row per method, the frontier
    chart with a line per certified method, and not one request (its links are not loads)."""
    from audit.comparing import compare
    from audit.config import AuditConfig

    result = compare(
        AuditConfig(
            max_train=300,
            trials=10,
            shadow_models=2,
            attacks=("ulira", "rmia"),
            noise_draws=3,
            curve_points=3,
            frontier=(0.5, 1.0, 4.0),
        ),
        ["r2d", "newton", "finetune", "retrain"],
    )
    result.write(tmp_path / "cmp")
    out = visit(chromium, tmp_path / "cmp" / "report.html")
    assert out["n_plots"] == 1 and out["network"] == [] and out["wire"] == [], (out["network"], out["wire"])
    assert not [t for t in out["console"] if "Content Security Policy" in t]
    img = pixels(out["screenshot"])
    assert img.std() > 0.1 and near(img[:400], "#1b7f3b").sum() > 2000  # a method is recommended: green
    if keep := os.environ.get("UNLEARN_AUDIT_SCREENSHOTS"):
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / "comparison.png").write_bytes(out["screenshot"])
    page = (tmp_path / "cmp" / "report.html").read_text()
    frontier = page[page.index('<svg class="plot"') : page.index("</svg>")]
    assert frontier.count("<polyline") >= 3  # r2d, newton, retrain (finetune has no certificate)
    assert all(f'id="row-{m}"' in page for m in ("r2d", "newton", "finetune", "retrain"))


def test_the_network_checks_can_fail(chromium, tmp_path):
    """Positive control: an external image is seen by both checks; our CSP then blocks it."""
    img = f'<img src="http://{CANARY}/pixel.png" alt="">'
    open_page = tmp_path / "open.html"
    open_page.write_text(f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{img}</body></html>')
    result = visit(chromium, open_page)
    assert result["network"] == [f"http://{CANARY}/pixel.png"]
    assert [Sink.host(r) for r in result["wire"]] == [CANARY]

    guarded = tmp_path / "guarded.html"
    guarded.write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}"></head><body>{img}</body></html>'
    )
    result = visit(chromium, guarded)
    assert result["network"] == [f"http://{CANARY}/pixel.png"]  # the page tries (so check 1 sees it) ...
    assert result["failed"] == [(f"http://{CANARY}/pixel.png", "csp")]  # ... the CSP refuses,
    assert result["wire"] == []  # and no connection is made
    assert any("Content Security Policy" in t for t in result["console"])
