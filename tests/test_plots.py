"""The report's charts, checked on the SVG they are: what each one plots, where, and with which labels.

The charts are SVG written by :mod:`audit.report.plots`, so they parse as XML. Data sit in the
groups clipped to a plot area (``<g clip-path=…>``); legends and labels are outside them. A
position is checked against the chart's own axes: a line drawn through two known values (the
diagonal of the ROC and trade-off charts) calibrates the axis, and every other plotted vertex
must sit where its value belongs on it. Page-level checks (sections, ids, no external
reference) are in ``test_html.py``.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from audit.report import plots

S = "{http://www.w3.org/2000/svg}"
DATA = Path(__file__).parent / "data"
TOL = 0.11  # coordinates are written to a tenth of a user unit


@pytest.fixture(scope="module")
def violated() -> dict:
    return json.loads((DATA / "sample-report-violated.json").read_text())


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def areas(root: ET.Element) -> list[ET.Element]:
    """The plot areas' contents: the groups clipped to a plot area, in drawing order."""
    return [g for g in root.iter(S + "g") if "clip-path" in g.attrib]


def polylines(node: ET.Element, colour: str) -> list[list[tuple[float, float]]]:
    return [
        [tuple(map(float, p.split(","))) for p in pl.get("points").split()]
        for pl in node.iter(S + "polyline")
        if pl.get("stroke") == colour
    ]


def lines(node: ET.Element, colour: str) -> list[ET.Element]:
    return [el for el in node.iter(S + "line") if el.get("stroke") == colour]


def texts(node: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in node.iter(S + "text")]


def axis(p0: float, v0: float, p1: float, v1: float, log: bool = False):
    """The pixel of a value on an axis through (value v0 at p0) and (v1 at p1)."""
    f = math.log10 if log else (lambda v: v)
    return lambda v: p0 + (f(v) - f(v0)) / (f(v1) - f(v0)) * (p1 - p0)


def curve(fpr, tpr, n=100, auroc=0.6):
    return {"curve": {"fpr": fpr, "tpr": tpr}, "n_pos": n, "n_neg": n, "auroc": auroc}


# ----------------------------------------------------------------------------------------


def test_every_chart_is_an_accessible_svg_with_its_axis_labels(violated):
    a = violated["attacks"]["attacks"]
    charts = {
        "epsilon": (
            plots.epsilon_chart(1.0, 2.0, {"mia": 3.0}, {}, "mia", 0.95),
            # the label is broken into two lines where it would not fit on one
            [
                "ε (log scale); lower bounds at 95% confidence;",
                "black tick: largest ε the trials can prove",
                "certified ε",
                "realized ε (noiseless distance)",
                "empirical ε ≥ (mia, best)",
            ],
        ),
        "roc": (
            plots.roc_chart({k: v["bound"]["roc"] for k, v in a.items()}),
            ["false-positive rate (retrained-world model called unlearned)", "true-positive rate"],
        ),
        "losses": (
            plots.loss_histogram_chart(violated["utility"]["loss_histograms"]),
            ["per-record loss", "fraction of the split's records", "original", "unlearned", "retrained"],
        ),
        "relearn": (
            plots.relearn_chart(a["relearn"]["details"]),
            ["fine-tuning steps on the forget set (symmetric log scale)", "forget-set loss of the audit's own model"],
        ),
        "tradeoff": (
            plots.tradeoff_chart(violated["tradeoff"], 1.0),
            ["parameter-spacedistance", "ε", "accuracy", "K (rewind)"],
        ),
        "fdp": (
            plots.fdp_chart(a["mia"]["bound"]["roc"], "U>R", "mia", 0.27),
            [
                "false-positive rate α (retrained-world release called unlearned)",
                "false-negative rate β (unlearned-world release called retrained)",
            ],
        ),
    }
    for name, (svg, labels) in charts.items():
        root = parse(svg)  # well-formed XML
        assert root.tag == S + "svg" and root.get("role") == "img"
        title = root.find(S + "title")
        assert title is not None and root.get("aria-labelledby") == title.get("id") == f"{name}-title"
        assert title.text and title.text.strip()
        assert len(areas(root)) >= 1, name
        # text is text (searchable, read aloud), and every axis label is there
        words = texts(root)
        for label in labels:
            assert label in words, (name, label)


def test_roc_plots_every_point_of_every_curve_on_log_log_axes():
    curves = {
        "b": curve([0.0, 0.01, 0.1, 0.5, 1.0], [0.02, 0.05, 0.3, 0.8, 1.0], auroc=0.7),
        "a": curve([0.0, 0.2, 1.0], [0.1, 0.6, 1.0], auroc=0.65),
        "c": curve([0.0, 0.0, 0.03, 1.0], [0.0, 0.5, 0.9, 1.0], auroc=0.95),
    }
    root = parse(plots.roc_chart(curves))
    [area] = areas(root)
    # the blind guess runs from (lo, lo) to (1, 1), lo = 1/n rounded down to a power of ten
    [diagonal] = polylines(area, plots.GREY)
    (x0, y0), (x1, y1) = diagonal
    X, Y = axis(x0, 0.01, x1, 1.0, log=True), axis(y0, 0.01, y1, 1.0, log=True)
    for i, name in enumerate(sorted(curves)):  # colours in name order
        [line] = polylines(area, plots.ATTACK_COLOURS[i])
        fpr = plots._clip_rates(curves[name]["curve"]["fpr"], 100)
        tpr = plots._clip_rates(curves[name]["curve"]["tpr"], 100)
        assert len(line) == 2 * len(fpr) - 1  # steps-post: a corner between two points
        for k, (px, py) in enumerate(line):
            j, corner = divmod(k, 2)  # even k: point j; odd k: (x of point j + 1, y of point j)
            assert px == pytest.approx(X(fpr[j + corner]), abs=TOL), (name, k)
            assert py == pytest.approx(Y(tpr[j]), abs=TOL), (name, k)
    assert {"a (AUROC 0.65)", "b (AUROC 0.7)", "c (AUROC 0.95)", "blind guess (TPR = FPR)"} <= set(texts(root))
    # reference verticals at FPR 0.1% (below 1/n here: not drawn) and 1%
    refs = lines(area, "#bbbbbb")
    assert [float(r.get("x1")) for r in refs] == [pytest.approx(X(0.01), abs=TOL)]


def test_epsilon_bars_on_a_log_axis_red_above_the_certificate():
    root = parse(plots.epsilon_chart(1.0, 2.0, {"x": 0.0, "y": 3.0, "z": 0.5}, {"x": 5.0}, "y", 0.95))
    [area] = areas(root)
    bars = [(r.get("fill"), float(r.get("x")), float(r.get("width"))) for r in area.iter(S + "rect")]
    # rows top to bottom: certified, realized, then the attacks by name; "x" proves nothing: no bar
    assert [b[0] for b in bars] == [plots.BLUE, plots.RED, plots.RED, plots.GREEN]  # 2 and 3 exceed ε = 1
    left = bars[0][1]
    assert all(b[1] == left for b in bars)  # every bar starts at the axis' left end, lo = 0.01
    X = axis(left, 0.01, left + bars[0][2], 1.0, log=True)
    for (_, x, w), v in zip(bars, (1.0, 2.0, 3.0, 0.5)):
        assert x + w == pytest.approx(X(v), abs=TOL)
    [cert] = lines(area, plots.BLUE)  # the dashed certified ε
    assert cert.get("stroke-dasharray") and float(cert.get("x1")) == pytest.approx(X(1.0), abs=TOL)
    [ceiling] = lines(root, plots.INK)[-1:]  # the ceiling tick of x, drawn last
    assert float(ceiling.get("x1")) == pytest.approx(X(5.0), abs=TOL)
    words = texts(root)
    assert "0 (no evidence of leakage)" in words and "empirical ε ≥ (y, best)" in words
    assert {"1", "2", "3", "0.5"} <= set(words)  # each bar's value


def test_loss_histograms_one_panel_per_model_one_step_line_per_split():
    hist = {
        "edges": [0.0, 1.0, 2.0, 3.0],
        "counts": {
            m: {"retain": [1, 2, 1], "unseen": [2, 2, 0], "forget": [0, 1, 0]}
            for m in ("retrained", "original", "unlearned")
        },
    }
    root = parse(plots.loss_histogram_chart(hist))
    panels = areas(root)
    assert len(panels) == 3
    titles = {t: el.get("fill") for el in root.iter(S + "text") if (t := "".join(el.itertext())) in plots.MODEL_COLOURS}
    assert titles == plots.MODEL_COLOURS  # original, unlearned, retrained, in their colours
    for panel in panels:
        outlines = {p.get("stroke"): p.get("d") for p in panel.iter(S + "path") if p.get("stroke")}
        assert set(outlines) == {plots.SPLIT_COLOURS[s] for s in ("retain", "unseen", "forget")}
        fills = [p for p in panel.iter(S + "path") if p.get("fill") == plots.VERMILLION]
        assert len(fills) == 1  # the forget split is shaded
        for split, fractions in (("retain", [0.25, 0.5, 0.25]), ("forget", [0.0, 1.0, 0.0])):
            d = outlines[plots.SPLIT_COLOURS[split]]
            assert d.count("H") == 3  # one step per bin
            heights = [float(v) for v in re.findall(r"V(-?[\d.]+)", d)]
            base, steps = heights[-1], heights[:-1]  # back down to the baseline at the end
            for f, y in zip(fractions, steps):  # a larger fraction is drawn higher (smaller y)
                assert (y == base) if f == 0 else (y < base)
            assert (steps[1] < steps[0]) == (fractions[1] > fractions[0])
    assert {"retain (n=4)", "unseen (n=4)", "forget (n=1)"} <= set(texts(root))


def test_relearn_curves_with_every_step_and_the_target_line():
    relearn = {
        "unlearned": {
            "curve_forget_loss": [1.0, 0.5, 0.4, 0.3],
            "mean_steps": 2,
            "median_steps": 2,
            "censored_fraction": 0.0,
            "target_loss": 0.35,
        },
        "retrained": {
            "curve_forget_loss": [1.0, 0.8, 0.6, 0.5, 0.45],
            "mean_steps": 5,
            "median_steps": 5,
            "censored_fraction": 0.5,
            "target_loss": 0.35,
        },
    }
    root = parse(plots.relearn_chart(relearn))
    [area] = areas(root)
    [unlearned] = polylines(area, plots.BLUE)
    [retrained] = polylines(area, plots.GREEN)
    assert len(unlearned) == 4 and len(retrained) == 5
    assert [x for x, _ in retrained] == sorted({x for x, _ in retrained})  # steps left to right
    assert all(pl.get("marker-mid") for pl in area.iter(S + "polyline"))  # every step marked
    Y = axis(unlearned[0][1], 1.0, unlearned[1][1], 0.5)
    assert retrained[2][1] == pytest.approx(Y(0.6), abs=TOL)
    [target] = lines(area, plots.GREY)
    assert float(target.get("y1")) == pytest.approx(Y(0.35), abs=TOL)
    words = texts(root)
    assert "unlearned world: mean 2 steps, median 2, censored 0" in words
    assert "target: original model's forget loss (0.35)" in words


def test_tradeoff_panels_series_and_the_chosen_knob(violated):
    tradeoff = violated["tradeoff"]
    n = len(tradeoff["rows"])

    def positive(key: str) -> int:  # a log axis shows values > 0 only (K = T: distance 0)
        return sum(plots.num(r[key]) > 0 for r in tradeoff["rows"])

    root = parse(plots.tradeoff_chart(tradeoff, 1.0))
    distance, epsilon, accuracy = areas(root)
    for colour, key in ((plots.BLUE, "sigma"), (plots.ORANGE, "sensitivity"), (plots.GREEN, "distance")):
        assert [len(p) for p in polylines(distance, colour)] == [positive(key)] == [n - 1]
    assert [len(p) for p in polylines(epsilon, plots.ORANGE)] == [positive("realized_epsilon")]
    assert len(lines(epsilon, plots.BLUE)) == 1  # certified ε
    assert [len(p) for p in polylines(accuracy, plots.GREY)] == [len(p) for p in polylines(accuracy, plots.BLUE)] == [n]
    chosen = [lines(area, plots.RED) for area in (distance, epsilon, accuracy)]
    assert [len(c) for c in chosen] == [1, 1, 1]
    assert len({c[0].get("x1") for c in chosen}) == 1  # one x for all three panels
    assert f"this audit: K = {plots.fmt_short(tradeoff['chosen'])}" in texts(root)
    # a σ of 0 has no place on the log axis: the line breaks there instead of diving to -∞
    broken = json.loads(json.dumps(tradeoff))
    broken["rows"][3]["sigma"] = 0.0
    segments = polylines(areas(parse(plots.tradeoff_chart(broken, 1.0)))[0], plots.BLUE)
    assert len(segments) == 2 and sum(map(len, segments)) == positive("sigma") - 1


def test_fdp_chart_draws_the_attack_the_promise_and_the_points_below(violated):
    roc = violated["attacks"]["attacks"]["mia"]["bound"]["roc"]
    mu = 0.27
    root = parse(plots.fdp_chart(roc, "U>R", "mia", mu))
    [area] = areas(root)
    [diagonal] = polylines(area, plots.GREY)  # the blind guess, (0, 1) to (1, 0)
    (x0, y0), (x1, y1) = diagonal
    X, Y = axis(x0, 0.0, x1, 1.0), axis(y0, 1.0, y1, 0.0)
    alpha, beta = plots.empirical_tradeoff(roc, "U>R")
    [attack] = polylines(area, plots.VERMILLION)
    assert len(attack) == len(alpha)
    for (px, py), a, b in zip(attack, alpha, beta):
        assert px == pytest.approx(X(a), abs=TOL) and py == pytest.approx(Y(b), abs=TOL)
    [promised] = polylines(area, plots.BLUE)
    assert len(promised) == len(plots.FDP_GRID)
    for (_px, py), a in zip(promised, plots.FDP_GRID):
        assert py == pytest.approx(Y(plots.gaussian_tradeoff(a, mu)), abs=TOL)
    below = [c for c in area.iter(S + "circle") if c.get("fill") == plots.RED]
    assert len(below) == plots.points_below(alpha, beta, mu) > 100
    assert f"below the promised curve ({len(below)} points)" in texts(root)
    # without a promise: no blue curve, no red points, and the chart says why
    root = parse(plots.fdp_chart(roc, "U>R", "mia", None, "no Gaussian curve: σ = 0"))
    assert plots.BLUE not in ET.tostring(root, encoding="unicode")
    assert not [c for c in root.iter(S + "circle") if c.get("fill") == plots.RED]
    assert "no Gaussian curve: σ = 0" in texts(root)


def test_report_strings_are_drawn_as_literal_text():
    name = "a<b>&\"c' $x^2$ </svg>"
    eps = parse(plots.epsilon_chart(1.0, 0.5, {name: 0.1}, {}, name))
    assert f"empirical ε ≥ ({name}, best)" in texts(eps)
    roc = parse(plots.roc_chart({name: curve([0, 1], [0, 1])}))
    assert f"{name} (AUROC 0.6)" in texts(roc)
    knob = {"knob": {"symbol": "<K>", "option": "a&b"}, "chosen": 1, "rows": [{"value": 1, "sigma": 1.0}]}
    assert "<K> (a&b)" in texts(parse(plots.tradeoff_chart(knob)))


NUMERIC = ("x", "y", "x1", "x2", "y1", "y2", "cx", "cy", "r", "width", "height", "points", "d")


def test_non_finite_values_never_reach_a_coordinate(violated):
    tradeoff = json.loads(json.dumps(violated["tradeoff"]))
    tradeoff["rows"][0].update(realized_epsilon="inf", sigma="nan", test_accuracy_released=None)
    charts = [
        plots.epsilon_chart(1.0, "inf", {"a": "nan", "b": "inf", "c": 0.0}, {"a": "inf"}, "b", "nan"),
        plots.epsilon_chart("inf", "nan", None),
        plots.roc_chart({"a": curve([0.0, "nan", 0.5, 1.0], [0.0, "inf", 0.9, 1.0])}),
        plots.tradeoff_chart(tradeoff, "inf"),
        plots.relearn_chart({"unlearned": {"curve_forget_loss": [1.0, "nan", 0.5], "target_loss": "nan"}}),
        plots.fdp_chart(curve([0.0, "nan", 1.0], [0.0, 0.5, 1.0]), "U>R", "a", "inf"),
    ]
    for svg in charts:
        root = parse(svg)
        for el in root.iter():
            for attr in NUMERIC:
                value = el.get(attr)
                if value is not None and el.tag != S + "svg":
                    assert not re.search(r"(?i)nan|inf", value), (el.tag, attr, value)
    assert "∞" in texts(parse(charts[0]))  # an infinite realized ε is written, its bar runs to the edge


def test_empty_charts_say_why():
    for svg, message in (
        (plots.roc_chart({}), "no ROC curves in this report (no attacks were run)"),
        (plots.loss_histogram_chart(None), "no loss histograms in this report"),
        (plots.relearn_chart(None), "no relearn-time curves in this report"),
        (plots.tradeoff_chart(None), "no knob sweep in this report"),
        (plots.fdp_chart(None), "no trade-off curve: no attack was run and no Gaussian curve is promised"),
    ):
        root = parse(svg)
        assert texts(root) == [message] and not areas(root)


def test_same_input_same_bytes(violated):
    a = violated["attacks"]["attacks"]
    first = plots.roc_chart({k: v["bound"]["roc"] for k, v in a.items()})
    again = plots.roc_chart({k: v["bound"]["roc"] for k, v in reversed(list(a.items()))})
    assert first == again  # dict order does not matter either


CHARTS_WITHOUT_MATPLOTLIB = """
import json, sys
import audit.report.html
from audit.report import plots
r = json.load(open(sys.argv[1]))
a = r["attacks"]["attacks"]
plots.epsilon_chart(1.0, 2.0, {"mia": 3.0}, {}, "mia", 0.95)
plots.roc_chart({k: v["bound"]["roc"] for k, v in a.items()})
plots.loss_histogram_chart(r["utility"]["loss_histograms"])
plots.relearn_chart(a["relearn"]["details"])
plots.tradeoff_chart(r["tradeoff"], 1.0)
plots.fdp_chart(a["mia"]["bound"]["roc"], "U>R", "mia", 0.27)
print(sorted(m for m in sys.modules if m.split(".")[0] == "matplotlib"))
"""


def test_charts_need_no_plotting_library():
    """The charts are drawn here: importing the report or drawing every chart loads no matplotlib
    (importing it cost about half a second of every audit)."""
    out = subprocess.run(
        [sys.executable, "-c", CHARTS_WITHOUT_MATPLOTLIB, str(DATA / "sample-report-violated.json")],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert out.stdout.strip() == "[]"
