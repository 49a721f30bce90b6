"""The HTML report: sections, verdict banner, no script, no network, deterministic bytes.

The browser-level checks (it renders, is not blank, fetches nothing) are in
``test_html_browser.py``; these are the static ones.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import re
import shlex
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
from markupsafe import escape

from audit.findings import CODES
from audit.report import plots
from audit.report.encoding import json_safe
from audit.report.html import CSP, VERDICTS, command_line, render_html, write_html

DATA = Path(__file__).parent / "data"
SRC = Path(__file__).resolve().parents[1] / "src"
SECTIONS = (
    "verdict",
    "epsilon",
    "roc",
    "fdp",
    "losses",
    "relearn",
    "tradeoff",
    "utility",
    "certificate",
    "findings",
    "reproduce",
)


def load(name: str) -> dict:
    return json.loads((DATA / name).read_text())


@pytest.fixture(scope="module")
def consistent() -> dict:
    return load("sample-report.json")


@pytest.fixture(scope="module")
def violated() -> dict:
    return load("sample-report-violated.json")


@pytest.fixture(scope="module")
def page(consistent) -> str:
    return render_html(consistent)


@pytest.fixture(scope="module")
def page_violated(violated) -> str:
    return render_html(violated)


def bare(report: dict) -> dict:
    """A report of an audit run with --attacks none, no tradeoff and no checkpoint check."""
    r = copy.deepcopy(report)
    r["attacks"] = None
    r["tradeoff"] = None
    r["checkpoint_recovery"] = None
    r["utility"].pop("loss_histograms", None)
    return r


def tags(html: str) -> list[str]:
    return re.findall(r"<[a-zA-Z][^>]*>", html)


# ----------------------------------------------------------------------------------------
# structure and content


def test_every_section_is_present(page):
    for section in SECTIONS:
        assert f'<section id="{section}"' in page, section
    assert page.count('<svg class="plot"') == 6  # ε chart, ROC, trade-off (f-DP), losses, relearn, tradeoff
    for heading in (
        "ROC curves (log–log)",
        "Loss distributions",
        "Relearn time",
        "K–σ–ε knob sweep",
        "Utility",
        "Constants",
        "How to reproduce",
        "Seeds",
        "Versions",
        "Hashes",
    ):
        assert heading in page, heading


def test_verdict_banner_consistent(page, consistent):
    assert '<section id="verdict" class="banner consistent">' in page
    assert '<div class="verdict-word">CONSISTENT</div>' in page
    banner = page[page.index('id="verdict"') : page.index("</section>")]
    # the three numbers of the verdict: certified, realized, best empirical
    assert "certified ε</dt><dd>1</dd>" in banner
    assert "realized ε</dt><dd>1.553e-5</dd>" in banner
    assert "best empirical ε lower bound</dt>" in banner and "<dd>0</dd>" in banner
    assert "VIOLATED" not in banner


def test_verdict_banner_violated(page_violated, violated):
    assert '<section id="verdict" class="banner violated">' in page_violated
    assert '<div class="verdict-word">VIOLATED</div>' in page_violated
    banner = page_violated[page_violated.index('id="verdict"') : page_violated.index("</section>")]
    assert "<dd>4.895</dd>" in banner  # the MIA lower bound, the best one
    assert "mia attack" in banner
    for finding in violated["findings"]:
        if finding["severity"] == "error":  # every error finding is in the banner
            assert finding["code"] in banner
    assert "does NOT hold" in banner
    # the violating attack rows are marked
    attacks = page_violated[page_violated.index('<section id="roc">') : page_violated.index('<section id="fdp">')]
    assert attacks.count('<tr class="bad">') == 3  # mia, ulira, whitebox > ε = 1


def test_verdict_banner_not_certified(consistent):
    r = copy.deepcopy(consistent)
    r["verdict"] = "not-certified"
    r["certificate"]["valid"] = False
    html = render_html(r)
    assert '<section id="verdict" class="banner not-certified">' in html
    assert "NOT CERTIFIED" in html
    headline = html[html.index('id="verdict"') : html.index("</section>")]
    assert "<dd>not issued</dd>" in headline and "certified ε" not in headline  # no number for no certificate


def test_a_warning_turns_the_consistent_banner_amber_and_is_named_in_it(consistent, page):
    """Issue 24: no-power and released-at-chance are in the banner, never only at the bottom."""
    r = copy.deepcopy(consistent)
    r["findings"] = [
        {"severity": "warning", "code": "released-at-chance", "message": "released at chance"},
        {"severity": "warning", "code": "no-power", "message": "no attack proves anything"},
    ]
    html = render_html(r)
    assert '<section id="verdict" class="banner consistent caution">' in html
    banner = html[html.index('id="verdict"') : html.index("</section>")]
    assert "<b>2 warnings:</b>" in banner
    for code in ("released-at-chance", "no-power"):
        assert (
            f'<li class="warning">{escape(CODES[code].short)} <a href="#findings"><code>{code}</code></a></li>'
            in banner
        )
    assert "this pass proves little" in banner and VERDICTS["consistent"][1] not in banner
    assert "<title>Unlearning audit: CONSISTENT (2 warnings) — " in html
    # the clean page stays green and says nothing of warnings
    clean = page[page.index('id="verdict"') : page.index("</section>")]
    assert "caution" not in clean and 'class="headline"' not in clean and VERDICTS["consistent"][1] in clean


def test_the_banner_names_errors_before_warnings(page_violated, violated):
    banner = page_violated[page_violated.index('id="verdict"') : page_violated.index("</section>")]
    assert "<b>3 errors, 1 warning:</b>" in banner and "caution" not in banner
    named = re.findall(r'<li class="(error|warning)">[^<]*<a href="#findings"><code>([a-z-]+)</code>', banner)
    assert named == [
        ("error", "certificate-violated"),
        ("error", "bound-violated"),
        ("error", "realized-exceeds-certified"),
        ("warning", "conditional-constants"),
    ]


def test_verdict_derived_from_findings_when_absent(violated):
    r = copy.deepcopy(violated)
    del r["verdict"]
    assert 'class="banner violated"' in render_html(r)


def test_constants_with_provenance_and_estimator(page, page_violated, consistent):
    for c in consistent["certificate"]["constants"]:
        assert f"<code>{c['name'].replace('*', '*')}</code>" in page
        assert f'<span class="prov {c["provenance"]}">' in page
    assert '<span class="prov assumed">assumed</span>' in page_violated  # the planted G
    assert "G supplied by the user" in page_violated


def test_utility_table(page, consistent):
    u = consistent["utility"]
    section = page[page.index('<section id="utility"') : page.index('<section id="certificate"')]
    for model in ("original", "unlearned", "retrained"):
        assert f'<th scope="row">{model}</th>' in section
    assert "0.8141" in section  # test accuracy
    assert f"{u['retrained']['retain']['noisy_accuracy_std']:.4g}" in section


def test_reproduce_section(page, consistent):
    section = page[page.index('<section id="reproduce"') :]
    assert "audit run --method r2d" in section
    for name, seed in consistent["seeds"].items():
        assert str(seed) in section, name
    for value in (
        consistent["dataset"]["content_hash"],
        consistent["parameters"]["sha256_unlearned"],
        consistent["deletion_request"]["commitment"],
        consistent["dataset"]["source"]["sha256"]["adult.data"],
    ):
        assert value in section
    for package, version in consistent["environment"]["packages"].items():
        if version:
            assert version in section, package
    assert consistent["environment"]["python"] in section


def test_command_line_parses_back_to_the_config(violated):
    """Every flag of the reconstructed command exists and parses to the report's config."""
    import typer.main

    from audit.cli import app

    cfg = violated["config"]
    cmd = command_line(cfg)
    argv = shlex.split(cmd)
    assert argv[:2] == ["audit", "run"]
    run = typer.main.get_command(app).commands["run"]
    ctx = run.make_context("run", argv[2:])  # parses without running the audit
    p = ctx.params
    for key in (
        "method",
        "epsilon",
        "delta",
        "mechanism",
        "dataset",
        "model",
        "forget_count",
        "steps",
        "horizon",
        "rewind_fraction",
        "seed",
        "device",
        "dtype",
        "max_train",
        "noise_draws",
        "curve_points",
        "trials",
        "trial_mode",
        "shadow_models",
        "confidence",
        "relearn_max_steps",
    ):
        assert p[key] == (int(cfg[key]) if key == "seed" else cfg[key]), key  # seeds travel as strings
    assert p["constants__G"] == cfg["constants"]["G"] == 1e-7
    assert p["constants__L"] is None
    assert p["hidden"] == ",".join(map(str, cfg["hidden"]))
    assert p["attacks"].split(",") == cfg["attacks"]
    for key in ("eta", "rewind", "sigma_budget", "forget_fraction", "forget_class", "forget_groups"):
        assert p[key] is None  # None in the config: no flag


def test_command_line_short_form_and_none_attacks(consistent):
    cfg = dict(consistent["config"], attacks=[], max_train=500)
    defaults = {"method": "r2d", "epsilon": 1.0, "attacks": ("mia",), "max_train": None, "seed": 0}
    cmd = command_line(cfg, defaults)
    assert "--method" not in cmd and "--epsilon" not in cmd  # equal to the defaults
    assert "--attacks none" in cmd and "--max-train 500" in cmd
    assert "--seed 0" in cmd  # the seed always stays
    assert shlex.split(command_line({"dataset": "csv:/data/my file.csv"}))[-1] == "csv:/data/my file.csv"


def test_seeds_as_decimal_strings(consistent):
    """Schema 1.0 writes seeds as canonical decimal strings: the page shows them the same way."""
    r = copy.deepcopy(consistent)
    r["seeds"] = {k: str(v) for k, v in r["seeds"].items()}
    r["config"]["seed"] = "0"
    r["attacks"]["trials"]["root_seed"] = str(r["attacks"]["trials"]["root_seed"])
    html = render_html(r)
    assert " --seed 0 " in html
    for seed in r["seeds"].values():
        assert f'<td class="num mono">{seed}</td>' in html


# ----------------------------------------------------------------------------------------
# no script, no network


def test_no_script_but_the_json_data_block(page, page_violated):
    for html in (page, page_violated):
        assert re.findall(r"<script\b[^>]*>", html, re.IGNORECASE) == [
            '<script type="application/json" id="report-data">'
        ]
        assert html.count("</script>") == 1
        assert "javascript:" not in html.lower()
        for tag in tags(html):  # no inline event handler on any element (onload=, onerror=...)
            assert not re.search(r"\son[a-z]+\s*=", tag, re.IGNORECASE), tag[:120]


def test_embedded_json_is_the_report(page, consistent):
    block = page[page.index('id="report-data">') + len('id="report-data">') : page.index("</script>")]
    assert "<" not in block and ">" not in block and "&" not in block
    assert json.loads(block) == consistent


def test_markup_in_report_strings_is_escaped(consistent):
    r = copy.deepcopy(consistent)
    evil = '</script><script>alert(1)</script><img src="http://evil.example/x.png">'
    r["findings"] = [{"code": "x", "severity": "error", "message": evil}]
    r["method"]["title"] = evil
    r["config"]["dataset"] = "csv:" + evil
    html = render_html(r)
    assert re.findall(r"<script\b", html) == ["<script"]  # only the data block
    assert "<img" not in html and "evil.example" in html  # present as text only
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in html
    block = html[html.index('id="report-data">') + len('id="report-data">') : html.rindex("</script>")]
    assert json.loads(block)["findings"][0]["message"] == evil


def csp_directives(html: str) -> dict[str, list[str]]:
    m = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', html)
    assert m, "no CSP meta element"
    out = {}
    for part in m.group(1).split(";"):
        words = part.split()
        if words:
            out[words[0]] = words[1:]
    return out


def test_content_security_policy_forbids_every_fetch(page):
    head = page[: page.index("</head>")]
    # the CSP meta comes before anything that could load (it only governs what follows it)
    assert head.index("Content-Security-Policy") < head.index("<link") < head.index("<style")
    d = csp_directives(page)
    assert d["default-src"] == ["'none'"]
    assert d["script-src"] == ["'none'"]
    assert d["style-src"] == ["'unsafe-inline'"]
    for directive, sources in d.items():
        for source in sources:  # no scheme, host or wildcard that reaches the network
            assert source in ("'none'", "'unsafe-inline'", "data:"), (directive, source)
    assert d["img-src"] == ["data:"]
    assert d["connect-src"] == d["font-src"] == d["object-src"] == d["frame-src"] == ["'none'"]
    assert d["base-uri"] == d["form-action"] == ["'none'"]
    assert page.count("Content-Security-Policy") == 1 and CSP in page


XMLNS = {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}


def test_no_external_resource_reference(page, page_violated):
    for html in (page, page_violated):
        # no attribute that fetches points anywhere but the page itself or a data: URI
        for tag in tags(html):
            for attr, value in re.findall(r'\s([a-zA-Z:-]+)\s*=\s*"([^"]*)"', tag):
                if attr.lower() in (
                    "src",
                    "href",
                    "xlink:href",
                    "action",
                    "formaction",
                    "poster",
                    "data",
                    "srcset",
                    "background",
                    "manifest",
                    "ping",
                    "cite",
                ):
                    assert value.startswith(("#", "data:")), (attr, value)
                if re.match(r"(?i)\s*(https?:|//|ftp:|wss?:)", value):
                    assert attr in ("xmlns", "xmlns:xlink") and value in XMLNS, (attr, value)
        assert not re.search(r"(?i)url\(\s*['\"]?\s*(?!#|data:)", html)  # CSS url(...) to outside
        assert "@import" not in html
        assert not re.search(
            r"(?i)<(link|iframe|frame|object|embed|img|video|audio|source|base|form)\b"
            r"(?![^>]*rel=\"icon\" href=\"data:,\")",
            html,
        )
        # every remaining http(s) URL is text (escaped, shown to the reader) or an SVG namespace
        for m in re.finditer(r"https?://[^\s\"'<)]+", html):
            before = html[max(0, m.start() - 20) : m.start()]
            inside_script = html.rfind("<script", 0, m.start()) > html.rfind("</script>", 0, m.start())
            assert m.group(0) in XMLNS or inside_script or not before.rstrip().endswith(("=", '="')), m.group(0)


# ----------------------------------------------------------------------------------------
# robustness


def test_attacks_none_and_empty_sections(consistent):
    html = render_html(bare(consistent))
    for section in SECTIONS:
        assert f'<section id="{section}"' in html
    assert "No attacks were run for this report" in html
    assert "<dd>not measured</dd>" in html
    assert "No knob sweep" in html
    assert "The relearn-time attack was not run" in html
    assert "This report holds no loss histograms" in html
    assert "Checkpoint recovery check" not in html
    assert '<section id="verdict" class="banner consistent">' in html
    # the ε chart (certified vs realized) and the certificate's promised trade-off curve alone
    assert html.count('<svg class="plot"') == 2
    assert "no attack was run, so no empirical curve is drawn" in html


def test_nonfinite_numbers(violated):
    r = copy.deepcopy(violated)
    r["realized"]["epsilon"] = math.inf  # a real float, as AuditReport holds it before encoding
    r["attacks"]["comparison"]["best_empirical_epsilon"] = "inf"
    r["certificate"]["sigma"] = "nan"
    r["tradeoff"]["rows"][0]["realized_epsilon"] = "inf"
    html = render_html(r)
    banner = html[html.index('id="verdict"') : html.index("</section>")]
    assert "realized ε</dt><dd>∞</dd>" in banner
    assert "best empirical ε lower bound</dt>\n      <dd>∞</dd>" in banner
    assert "σ = NaN" in banner
    block = html[html.index('id="report-data">') + len('id="report-data">') : html.index("</script>")]
    assert json.loads(block)["realized"]["epsilon"] == "inf"  # valid JSON: no bare Infinity


def test_minimal_and_partial_reports_render():
    for r in (
        {},
        {"verdict": "consistent"},
        {"verdict": "violated", "certificate": {"epsilon": 1.0}},
        {"verdict": "weird", "attacks": {"attacks": {}, "comparison": {}}},
    ):
        html = render_html(r)
        assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")


def test_accepts_an_audit_report_object(consistent, page):
    class Fake:
        def to_dict(self):
            return consistent

    assert render_html(Fake()) == page


def test_write_html(tmp_path, consistent, page):
    path = write_html(consistent, tmp_path / "sub" / "report.html")
    assert path == tmp_path / "sub" / "report.html"
    assert path.read_text(encoding="utf-8") == page
    assert os.listdir(path.parent) == ["report.html"]  # no temp file left behind


def test_template_ships_as_package_data():
    templates = resources.files("audit.report").joinpath("templates")
    assert templates.joinpath("report.html.j2").is_file()
    assert templates.joinpath("report.css.j2").is_file()


# ----------------------------------------------------------------------------------------
# determinism


def test_render_twice_identical(consistent, page):
    assert render_html(copy.deepcopy(consistent)) == page


RENDER = """
import hashlib, json, sys
from audit.report.html import render_html
from audit.report import plots
r = json.load(open(sys.argv[1]))
h = render_html(r).encode()
roc = plots.roc_chart({k: v["bound"]["roc"] for k, v in r["attacks"]["attacks"].items()}).encode()
print(hashlib.sha256(h).hexdigest(), hashlib.sha256(roc).hexdigest())
"""


@pytest.mark.slow
def test_identical_bytes_across_processes(violated, page_violated):
    """Two fresh interpreters (different hash seeds) render the same bytes as this one."""
    roc = plots.roc_chart({k: v["bound"]["roc"] for k, v in violated["attacks"]["attacks"].items()})
    expected = f"{hashlib.sha256(page_violated.encode()).hexdigest()} {hashlib.sha256(roc.encode()).hexdigest()}"
    procs = []
    for hashseed in ("1", "2"):  # concurrently: each interpreter spends seconds importing torch
        env = dict(
            os.environ,
            PYTHONHASHSEED=hashseed,
            PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
        )
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", RENDER, str(DATA / "sample-report-violated.json")],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
        )
    outs = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        outs.append(out.strip())
    assert outs == [expected, expected]


# ----------------------------------------------------------------------------------------
# the charts


def test_charts_are_inlinable_svg(violated):
    a = violated["attacks"]["attacks"]
    charts = {
        "epsilon": plots.epsilon_chart(1.0, 2.0, {"x": 0.0, "y": 3.0}, {"x": 5.0}, "y", 0.95),
        "roc": plots.roc_chart({k: v["bound"]["roc"] for k, v in a.items()}),
        "losses": plots.loss_histogram_chart(violated["utility"]["loss_histograms"]),
        "relearn": plots.relearn_chart(a["relearn"]["details"]),
        "tradeoff": plots.tradeoff_chart(violated["tradeoff"], 1.0),
        "fdp": plots.fdp_chart(a["mia"]["bound"]["roc"], "U>R", "mia", 0.27),
    }
    all_ids: list[str] = []
    for name, svg in charts.items():
        assert svg.startswith(f'<svg class="plot" role="img" aria-labelledby="{name}-title"')
        assert svg.endswith("</svg>")
        for banned in ("<?xml", "<!DOCTYPE", "<!--", "<metadata", "<script", "<image", "matplotlib.org"):
            assert banned not in svg, (name, banned)
        assert not re.search(r"<svg[^>]*\s(width|height)=", svg)  # sized by CSS through viewBox
        ids = re.findall(r'\bid="([^"]+)"', svg)
        assert ids and all(i.startswith(f"{name}-") for i in ids), name
        for ref in re.findall(r'(?:href="#|url\(#)([^")]+)', svg):
            assert ref in ids, (name, ref)  # every reference resolves inside its own chart
        all_ids += ids
        assert set(re.findall(r"https?://[^\"]+", svg)) <= XMLNS
    assert len(all_ids) == len(set(all_ids))  # charts can share a page without id clashes


def test_roc_zero_rates_on_log_axes():
    curve = {
        "curve": {"fpr": [0.0, 0.0, 0.5, 1.0], "tpr": [0.0, 1.0, 1.0, 1.0]},
        "n_pos": 10,
        "n_neg": 20,
        "auroc": 1.0,
        "tpr_at_1pct_fpr": 1.0,
    }
    assert plots._clip_rates([0.0, 0.5, "nan", 1.0], 20) == [0.05, 0.5, 0.05, 1.0]
    svg = plots.roc_chart({"a": curve})
    assert "NaN" not in svg and "inf" not in svg.lower().replace("info", "")


def test_chart_text_from_the_report_is_literal():
    """Names from the report are drawn as text: no mathtext ($), no markup (<, &)."""
    svg = plots.epsilon_chart(1.0, 0.5, {"a$b$<i>&": 0.1}, {}, "a$b$<i>&")
    assert "<i>" not in svg and "&" not in svg.replace("&amp;", "").replace("&lt;", "").replace("&gt;", "")
    svg = plots.roc_chart({"$x^2$": {"curve": {"fpr": [0, 1], "tpr": [0, 1]}, "n_pos": 4, "n_neg": 4}})
    assert svg.startswith('<svg class="plot"')


def test_empty_charts_say_so():
    for svg in (
        plots.roc_chart({}),
        plots.loss_histogram_chart(None),
        plots.relearn_chart(None),
        plots.tradeoff_chart(None),
        plots.fdp_chart(None),
    ):
        assert svg.startswith('<svg class="plot"')
    assert plots.epsilon_chart("inf", "nan", None).startswith('<svg class="plot"')


def test_chart_numbers_decode_the_report_encoding():
    """(What each chart draws is checked in test_plots.py.)"""
    assert plots.num("-inf") == -math.inf and json_safe(plots.num("-inf")) == "-inf"
    assert math.isnan(plots.num(None)) and math.isnan(plots.num("abc")) and plots.num(3) == 3.0


def test_a_method_without_a_theorem_shows_no_certified_epsilon(consistent):
    """kind none: no 'certified ε' card, number or bar; the banner says why there is no certificate."""
    r = copy.deepcopy(consistent)
    r["certificate"].update(
        kind="none",
        epsilon=None,
        sensitivity=None,
        sigma=0.0,
        valid=False,
        theorem="none: a heuristic baseline with no theorem",
    )
    r["realized"].update(sensitivity_bound=None, bound_slack=None)
    r["attacks"]["comparison"].update(certified_epsilon=None, ordering_holds=None)
    r["findings"] = [{"severity": "warning", "code": "no-theorem", "message": "no certificate"}]
    r["verdict"] = "not-certified"
    html = render_html(r)
    banner = html[html.index('id="verdict"') : html.index("</section>")]
    assert "NO CERTIFICATE" in banner and "no certificate (the method has no theorem)" in banner
    assert "certified ε" not in banner and "a condition of the theorem failed" not in banner
    assert "nothing certified, so nothing can be violated" in banner
    chart = html[html.index('<section id="epsilon">') : html.index('<section id="roc">')]
    assert "certified ε" not in chart.split("<figcaption>")[0]  # the chart draws no certified bar
    assert '<tr class="bad">' not in html  # no attack row can exceed a certificate that does not exist


# ----------------------------------------------------------------------------------------
# the trade-off (f-DP) curve


def fdp_section(html: str) -> str:
    return html[html.index('<section id="fdp">') : html.index('<section id="losses">')]


def promised_mu(report: dict) -> float:
    return report["certificate"]["sensitivity"] / report["certificate"]["sigma"]


def test_gaussian_tradeoff_values():
    from scipy.stats import norm

    for mu in (0.0, 0.27, 1.0, 3.5):
        for alpha in (1e-6, 0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 0.9, 0.999):
            assert plots.gaussian_tradeoff(alpha, mu) == pytest.approx(
                norm.cdf(norm.ppf(1 - alpha) - mu), rel=1e-9, abs=1e-15
            )
    assert plots.gaussian_tradeoff(0.0, 1.0) == 1.0 and plots.gaussian_tradeoff(1.0, 1.0) == 0.0
    assert plots.gaussian_tradeoff(0.3, 0.0) == pytest.approx(0.7)  # μ = 0: the blind guess
    assert plots.gaussian_tradeoff(0.3, "inf") == 0.0 and math.isnan(plots.gaussian_tradeoff(0.3, -1.0))


def test_empirical_tradeoff_is_direction_aware():
    roc = {"curve": {"fpr": [0.0, 0.1, 0.5, 1.0], "tpr": [0.0, 0.4, 0.9, 1.0]}}
    assert plots.empirical_tradeoff(roc, "U>R") == ([0.0, 0.1, 0.5, 1.0], [1.0, 0.6, pytest.approx(0.1), 0.0])
    # R>U says U where U>R says R: the point at each threshold is (1 − FPR, TPR)
    assert plots.empirical_tradeoff(roc, "R>U") == ([0.0, 0.5, 0.9, 1.0], [1.0, 0.9, 0.4, 0.0])
    alpha, beta = plots.empirical_tradeoff(roc, "U>R")
    assert plots.points_below(alpha, beta, 0.0) == 2  # below the diagonal: (0.1, 0.6) and (0.5, 0.1)
    assert plots.points_below(alpha, beta, 3.0) == 0  # G_3 lies below both
    assert plots.empirical_tradeoff(None) == ([], [])


def test_fdp_chart_with_a_certificate(page_violated, violated):
    section = fdp_section(page_violated)
    assert '<svg class="plot" role="img" aria-labelledby="fdp-title"' in section
    mu = promised_mu(violated)
    assert f"μ = Δ/σ = {mu:.4g}" in section
    assert (
        "an empirical curve below the promised curve\n    anywhere is visible evidence against the certificate"
        in section.replace("promised curve anywhere", "promised curve\n    anywhere")
    )
    best = violated["attacks"]["comparison"]["best_attack"]
    assert f"<b>{best}</b>" in section
    # the planted violation: the MIA separates the worlds far better than G_μ allows
    roc = violated["attacks"]["attacks"][best]["bound"]["roc"]
    alpha, beta = plots.empirical_tradeoff(roc, violated["attacks"]["attacks"][best]["bound"]["direction"])
    below = plots.points_below(alpha, beta, mu)
    assert below > 100 and f"Here {below} of {len(alpha)} points lie below it." in section
    assert '<p class="warn"><strong>Below the promised curve:</strong>' in section
    # the table (the chart's text alternative): G_μ(α) = Φ(Φ⁻¹(1 − α) − μ) at each α
    from scipy.stats import norm

    rows = re.findall(
        r'<td class="num">([^<]+)</td><td class="num">([^<]+)</td>\s*<td class="num">([^<]+)</td>', section
    )
    assert [float(r[0]) for r in rows] == [0.001, 0.01, 0.05, 0.1, 0.25, 0.5]
    for a, _, promised in rows:
        assert float(promised) == pytest.approx(norm.cdf(norm.ppf(1 - float(a)) - mu), rel=1e-5)
    assert section.count('<tr class="bad">') == 6


def test_fdp_chart_of_an_honest_run(page, consistent):
    section = fdp_section(page)
    assert f"μ = Δ/σ = {promised_mu(consistent):.4g}" in section
    assert "Here 0 of" in section and 'class="warn"' not in section and '<tr class="bad">' not in section


def _without(report: dict, **cert) -> str:
    r = copy.deepcopy(report)
    r["certificate"].update(cert)
    return fdp_section(render_html(r))


def test_no_gaussian_curve_without_a_certificate(consistent):
    promised_colour = plots.BLUE.lower()  # the promised curve is the only blue line of the chart
    assert promised_colour in fdp_section(render_html(consistent)).lower()
    cases = {
        "no certificate was issued": dict(valid=False),
        "the method has no theorem": dict(kind="none", epsilon=None, sensitivity=None, valid=False),
        "σ = 0. The release is the retrained model itself": dict(kind="exact", sigma=0.0, sensitivity=0.0),
        "σ = 0. The privacy comes from noise inside training": dict(kind="training-noise", sigma=0.0, sensitivity=None),
        "σ = 0, no noise on the released parameters": dict(sigma=0.0),
    }
    for sentence, cert in cases.items():
        section = _without(consistent, **cert)
        assert sentence in section, sentence
        assert '<p class="empty">No Gaussian curve' in section or "No certificate" in section
        assert "G<sub>μ</sub>(α) = Φ" not in section  # no promise stated
        assert promised_colour not in section.lower(), sentence  # and none drawn
        assert '<svg class="plot" role="img" aria-labelledby="fdp-title"' in section  # the attack's curve stays
        assert '<td class="num">—</td></tr>' in section  # the table's promised column is empty


def test_fdp_curve_of_an_attack_in_the_other_direction(violated):
    """Negated scores: the report's ROC (say U iff score ≥ t) is mirrored and the bound's direction
    is R>U; the attack's test, and so its trade-off curve, is the same as before."""
    r = copy.deepcopy(violated)
    best = r["attacks"]["comparison"]["best_attack"]
    bound = r["attacks"]["attacks"][best]["bound"]
    before = plots.empirical_tradeoff(bound["roc"], bound["direction"])
    curve = bound["roc"]["curve"]
    bound["direction"] = "R>U"
    curve["fpr"], curve["tpr"] = [1 - f for f in curve["fpr"]][::-1], [1 - t for t in curve["tpr"]][::-1]
    after = plots.empirical_tradeoff(bound["roc"], "R>U")
    assert after[0] == pytest.approx(before[0]) and after[1] == pytest.approx(before[1])
    section = fdp_section(render_html(r))
    assert "R&gt;U" in section
    below = plots.points_below(*before, promised_mu(violated))
    assert f"Here {below} of {len(before[0])} points lie below it." in section


def test_the_trade_off_section_is_in_the_contents(page):
    assert '<a href="#roc">ROC</a> <a href="#fdp">trade-off curve</a>' in page
    assert page.index('<section id="roc">') < page.index('<section id="fdp">') < page.index('<section id="losses">')


# ----------------------------------------------------------------------------------------
# the unlearning-competition measurement


def test_competition_section(violated):
    import numpy as np

    from attacks.competition import CAVEATS, competition_metric

    rng = np.random.default_rng(0)
    res = competition_metric(rng.normal(1.0, 1.0, (64, 5)), rng.normal(size=(64, 5)))
    details = res.to_dict()
    details["caveats"] = CAVEATS.format(k=64, delta=1e-5, emax=res.max_epsilon, cap=50.0)
    r = copy.deepcopy(violated)
    r["attacks"]["attacks"]["competition"] = dict(
        copy.deepcopy(r["attacks"]["attacks"]["mia"]), title="Unlearning-competition ε (NeurIPS 2023)", details=details
    )
    html = render_html(r)
    assert '<a href="#competition">competition ε</a>' in html
    section = html[html.index('<section id="competition">') : html.index('<section id="losses">')]
    assert f"forget score <b>{details['forget_score']:.4g}</b>" in section
    assert "<b>estimates, not bounds</b>" in section
    bound = r["attacks"]["attacks"]["competition"]["bound"]
    assert f"ε ≥ {bound['epsilon_lower']:.4g}" in section
    assert section.count('<tr><td class="num">') == len(details["epsilon_histogram"]) == 11  # K = 64: 10 + "≥ 5"
    assert "≥ 5</td>" in section and "not a bound" in section
    # the attack's row keeps the headline numbers only (the section has the rest)
    row = html[html.index('<th scope="row">competition') :]
    row = row[: row.index("</tr>", row.index('<tr class="desc">'))]
    assert "forget_score = " in row and "caveats" not in row and "example_epsilons" not in row


def test_page_states_the_trial_mode_the_positive_control_and_the_one_run_audit(consistent):
    page = render_html(consistent)
    assert "Why this mode: noise mode" in page and 'id="positive-control"' in page
    assert "can see a deletion that did nothing" in page and 'id="one-run"' not in page
    blind = copy.deepcopy(consistent)
    blind["attacks"]["positive_control"].update(has_power=False, best_epsilon_lower=0.0)
    blind["one_run"] = {
        "inserted": 50,
        "m": 50,
        "v": 41,
        "r": 40 + 10,
        "epsilon_lower": 0.83,
        "confidence": 0.95,
        "ceiling": 1.27,
        "certified_epsilon": 1.0,
        "note": "a bound on the group certificate",
    }
    page = render_html(blind)
    assert "no attack proves anything" in page and "this audit has no power" in page
    assert 'id="one-run"' in page and "41 of" in page and "0.83" in page and "a bound on the group certificate" in page
    assert 'id="one-run-control"' not in page  # a report from before the control


def test_page_renders_a_one_run_bound_whose_control_proves_nothing_as_no_power(consistent):
    report = copy.deepcopy(consistent)
    report["one_run"] = {
        "inserted": 1000,
        "m": 1000,
        "v": 54,
        "r": 100,
        "epsilon_lower": 0.0,
        "confidence": 0.95,
        "ceiling": 1.66,
        "certified_epsilon": 1.0,
        "can_test": True,
        "violation": False,
        "note": "n",
        "control": {"v": 52, "r": 100, "epsilon_lower": 0.0, "has_power": False},
    }

    def one_run_section() -> str:
        page = " ".join(render_html(report).split())
        return page[page.index('id="one-run"') : page.index('<p class="note">n</p>')]

    text = one_run_section()
    assert "<b>could not have caught a deletion that did nothing with 1,000 canary pairs on this model</b>" in text
    assert "ε ≥ <b>" not in text and "52 of 100 guesses right, ε ≥ 0" in text
    assert "<b>this game cannot see a deletion that did nothing</b>" in text
    report["one_run"]["control"].update(v=80, epsilon_lower=0.6)  # sees the no-op, not beyond epsilon 1
    assert "<b>this game sees a deletion that did nothing, but not beyond the certified ε</b>" in one_run_section()
    report["one_run"]["control"].update(v=100, epsilon_lower=1.66, has_power=True)
    text = one_run_section()
    assert "ε ≥ <b>0</b>" in text and "this game can catch a deletion that did nothing" in text


def test_attack_rows_show_the_gaussian_shape_test_and_the_most_exposed_records(consistent):
    report = copy.deepcopy(consistent)
    name = sorted(report["attacks"]["attacks"])[0]
    entry = report["attacks"]["attacks"][name]
    entry["bound"]["gdp_estimate"].update(gof="accepted", gof_p_value=0.42, epsilon_lower=0.731)
    entry["details"]["per_record"] = {
        "records": 20,
        "top": [
            {"record": 7, "auroc": 0.91, "epsilon_lower": 1.25},
            {"record": 3, "auroc": 0.12, "epsilon_lower": 0.5},
        ],
        "epsilon": {"confidence_per_record": 0.9975},
    }
    page = render_html(report)
    assert "Gaussian shape of the trade-off: accepted (goodness of fit p = 0.42)" in page
    assert "GDP lower bound ε ≥ 0.731, valid under the Gaussian hypothesis" in page
    assert "#7: 0.91, 1.25; #3: 0.12, 0.5." in page and "jointly over the 20 records" in page
    entry["bound"]["gdp_estimate"]["gof"] = "discrete"
    assert "Gaussian shape of the trade-off: discrete" in render_html(report)
    assert "valid under the Gaussian hypothesis" not in render_html(report).split("Trade-off (f-DP)")[0]


# ----------------------------------------------------------------------------------------
# the request box: what was deleted, from what, and whether the page is signed


def _box(html: str) -> str:
    return html[html.index('<section id="request"') : html.index('<nav class="toc"')]


def test_the_request_box_sits_under_the_banner_and_says_what_was_deleted(page, consistent):
    assert page.index('<section id="verdict"') < page.index('<section id="request"') < page.index('<nav class="toc"')
    box = _box(page)
    request = consistent["deletion_request"]
    assert "<dd>none given</dd>" in box  # no --request-id in the sample
    assert f"<dd>{request['n_records']}</dd>" in box and request["identifier"] in box
    assert request["commitment"] in box
    # the exact command that opens the commitment, with the files audit run --out writes
    assert "audit commitment verify report.json --salt deletion-commitment.salt --ids IDS.txt" in box
    named = copy.deepcopy(consistent)
    named["deletion_request"]["request_id"] = "REQ-2026-0042"
    assert "<dd><code>REQ-2026-0042</code></dd>" in _box(render_html(named))
    # a comparison's method page (methods/<name>/) opens the comparison's one salt, two levels up
    assert "--salt ../../deletion-commitment.salt --ids" in _box(
        render_html(consistent, salt="../../deletion-commitment.salt")
    )


def test_the_built_in_model_is_tagged_as_a_demonstration_and_a_callers_is_not(page, consistent):
    box = _box(page)
    assert "<code>logreg</code>, 3 parameters" in box and "built-in demonstration model</span>" in box
    assert "not your model" in box
    for origin, source in (
        ("caller", "the caller's module (my.Net)"),
        ("module", "factory module:net.py:build"),
        ("plug-in", "plug-in model 'acme'"),
    ):
        mine = copy.deepcopy(consistent)
        mine["model"].update(origin=origin, source=source)
        mine["config"]["model"] = {"caller": "caller", "module": "module:net.py:build", "plug-in": "acme"}[origin]
        box = _box(render_html(mine))
        assert "demonstration" not in box and "not your model" not in box, origin
        assert "3 parameters" in box and str(escape(source)) in box


def test_the_signature_line_names_the_key_or_says_unsigned_and_never_claims_a_check(page, consistent):
    assert "<dd>unsigned</dd>" in _box(page) and "written without <code>--sign-key</code>" in _box(page)
    signed = _box(render_html(consistent, signed_by="sha256:" + "ab" * 32))
    assert f"signed by key <code>sha256:{'ab' * 32}</code>" in signed and "unsigned" not in signed
    assert "audit verify DIR --key PUBLIC.pem" in signed and "cannot check itself" in signed
    assert "verified" not in signed and "valid" not in signed
    again = _box(render_html(consistent, page="rerendered", envelope_beside=True))
    assert "not signed: re-rendered" in again and "A signature envelope lies next to" in again
    assert "No signature envelope" in _box(render_html(consistent, page="rerendered"))
    with pytest.raises(ValueError):
        render_html(consistent, page="signed")


def test_audit_report_says_its_page_is_re_rendered(tmp_path):
    from typer.testing import CliRunner

    from audit.cli import app

    (tmp_path / "report.json").write_text((DATA / "sample-report.json").read_text())
    (tmp_path / "report.dsse.json").write_text("{}")  # only its presence is reported: the page checks nothing
    result = CliRunner().invoke(app, ["report", str(tmp_path / "report.json"), "--html", str(tmp_path / "again.html")])
    assert result.exit_code == 0, result.output
    box = _box((tmp_path / "again.html").read_text())
    assert "not signed: re-rendered" in box and "A signature envelope lies next to" in box


def test_long_tables_fold_behind_details_and_a_violation_stays_open(page, page_violated, consistent):
    def folded(html: str, marker: str) -> str:
        """The <details> start tag that holds ``marker``."""
        start = html.rindex("<details", 0, html.index(marker))
        assert html.index("</details>", start) > html.index(marker)
        return html[start : html.index(">", start) + 1]

    for marker in (
        "<th>ε lower bound</th>",
        '<table class="constants">',
        "<h3>Seeds</h3>",
        "<h3>Hashes</h3>",
        "<h3>Versions</h3>",
        '<table class="conditions">',
    ):
        assert "open" not in folded(page, marker), marker
    assert "open" in folded(page_violated, "<th>ε lower bound</th>")  # attacks that prove ε > certified
    failed = copy.deepcopy(consistent)
    failed["certificate"]["conditions"][0]["met"] = False
    assert "open" in folded(render_html(failed), '<table class="conditions">')  # a failed condition
    for value in ("0.8141", "1.553e-5"):  # numbers stay in the document, folded or not
        assert value in page
    css = page[page.index("<style>") : page.index("</style>")]
    assert "details::details-content { content-visibility: visible" in css[css.index("@media print") :]


# ----------------------------------------------------------------------------------------------
# The page's vocabulary: one name per thing, nothing shown that does not apply


def _visible_text(html: str) -> str:
    html = re.sub(r"<(style|script)[^>]*>.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"<[^>]+>", " ", html)


def test_the_f_dp_curve_and_the_knob_sweep_have_two_names(page):
    text = _visible_text(page)
    fdp = text[text.index("Trade-off (f-DP) curve") : text.index("Loss distributions")]
    sweep = text[text.index("The K–σ–ε knob sweep") :]
    assert "trade-off" in fdp.lower() and "knob sweep" not in fdp.lower()
    assert "trade-off" not in sweep[: sweep.index("Utility")].lower()
    assert not re.search(r"(?i)\btradeoff\b", text)  # the section id stays; the word is no name of either


def test_population_rows_that_do_not_apply_are_hidden_and_named_once(page, consistent):
    populations = consistent["attacks"]["attacks"]["mia"]["details"]["population_auroc"]
    hidden = sorted(
        {m for m, e in populations.items() for k in ("noiseless", "released") if e.get(k) and not e[k]["applicable"]}
    )
    assert hidden  # the sample has them
    assert "not applicable" not in _visible_text(page)
    note = page[page.index("Population membership inference does not apply") :]
    note = note[: note.index("</p>")]
    assert all(note.count(m) == 1 for m in hidden), note


def test_options_that_do_not_apply_print_no_dash(consistent):
    r = copy.deepcopy(consistent)
    r["method"]["hyperparameters"] = {"eta": 0.12, "eta_requested": None, "constant_overrides": {}, "steps": 100}
    dd = render_html(r).split("<dt>hyperparameters</dt><dd>")[1].split("</dd>")[0]
    assert dd == "eta = 0.12; steps = 100"


def test_versions_list_the_tool_once(consistent):
    r = copy.deepcopy(consistent)  # earlier reports also recorded the tool among the packages
    r["environment"]["packages"][r["tool"]["name"]] = "0.0.9"
    html = render_html(r)
    versions = html[html.index("<h3>Versions</h3>") :]
    versions = versions[: versions.index("</table>")]
    assert versions.count(f'<th scope="row">{r["tool"]["name"]}</th>') == 1 and r["tool"]["version"] in versions
    assert "0.0.9" not in versions


def test_the_trial_count_is_explained_under_the_attacks(page, consistent):
    r = copy.deepcopy(consistent)  # ``page`` rendered first: the template is compiled
    said = "16,000 trials per world, sized by cost (0.23 ms per trial measured on a pilot)"
    r["attacks"]["trials"]["sizing"] = {"chosen_by": "cost", "why": said, "stopped_by": "decided"}
    assert f"Trial count: {said}." in render_html(r) and "Trial count:" not in page


def test_a_noise_mode_bound_below_both_ceilings_says_either_bound_and_the_count_by_its_bound(consistent):
    """audit.sizing.attack_resolution: the attack row and the best bound say which bound the count is for."""
    report = copy.deepcopy(consistent)
    bound = report["attacks"]["attacks"][report["attacks"]["comparison"]["best_attack"]]["bound"]
    gdp = {"kind": "bound", "ceiling": 0.9, "epsilon_lower": 0.0, "mu_lower": 0.0}
    bound.update(ceiling=0.6, can_test=False, size_to_test=13, test_bound="gdp-bound", gdp_bound=gdp)
    page = " ".join(render_html(report).split())
    assert page.count("with either bound; 13 trials per world could with the GDP bound") == 2
    bound.update(can_test=True, size_to_test=None, gdp_bound={**gdp, "ceiling": 33.6})
    page = " ".join(render_html(report).split())
    assert page.count("tested by the GDP bound (ceiling 33.6); the Clopper-Pearson bound alone cannot test") == 2
