"""Charts of the HTML report, each returned as an SVG string ready to inline.

Every chart is deterministic: the same input gives the same bytes, in any process. That
matters because the report's HTML is hashed and signed, and golden-file tests compare it byte
for byte. What makes matplotlib's SVG output reproducible:

* ``svg.hashsalt`` fixed (otherwise clip-path and glyph ids are random per process);
* ``metadata={"Date": None, ...}`` (otherwise the file records when it was drawn);
* ``svg.fonttype = "path"``: text is drawn as glyph outlines from DejaVu Sans, which ships with
  matplotlib, so the picture depends neither on the fonts of the viewer nor of the machine;
* fixed figure size, DPI, font sizes and colours, set in a local ``rc_context`` (the global
  matplotlib state of the caller is left alone), and no ``pyplot`` (no global figure manager).

The SVG is then made inlinable: the XML declaration, DOCTYPE, comments and ``<metadata>`` are
dropped, the fixed ``width``/``height`` are replaced by the ``viewBox`` alone (the page's CSS
sizes the chart), and every ``id`` is prefixed with the chart's name so several charts can share
one HTML document without their ids (glyphs, clip paths) colliding.

Output is byte-identical for identical input *with the same matplotlib version*; a different
matplotlib may draw the same chart with different bytes.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from statistics import NormalDist
from typing import Any

# No pyplot and no backend switch: a bare Figure renders to SVG with matplotlib's SVG canvas
# whatever backend the caller has chosen, and the caller's global state stays untouched.
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.ticker import LogLocator, NullFormatter

# Okabe–Ito colour-blind-safe palette
BLUE, ORANGE, GREEN, VERMILLION = "#0072B2", "#E69F00", "#009E73", "#D55E00"
RED = "#C62828"  # violations only: a plain, unmistakable red
SKY, PURPLE, YELLOW, GREY = "#56B4E9", "#CC79A7", "#F0E442", "#777777"
MODEL_COLOURS = {"original": GREY, "unlearned": BLUE, "retrained": GREEN}
SPLIT_COLOURS = {"forget": VERMILLION, "retain": BLUE, "unseen": GREEN, "test": PURPLE}
ATTACK_COLOURS = [BLUE, ORANGE, GREEN, PURPLE, SKY, VERMILLION, GREY]

WIDTH_IN = 7.2  # inches; at 72 dpi the SVG viewBox is 518.4 pt wide
DPI = 72
HASH_SALT = "unlearn-audit-report"

RC: dict[str, Any] = {
    "svg.hashsalt": HASH_SALT,
    "svg.fonttype": "path",
    "svg.image_inline": True,
    "font.family": "DejaVu Sans",
    "font.size": 9.0,
    "axes.titlesize": 10.0,
    "axes.labelsize": 9.0,
    "legend.fontsize": 8.0,
    "xtick.labelsize": 8.0,
    "ytick.labelsize": 8.0,
    "mathtext.fontset": "dejavusans",
    "text.usetex": False,
    "axes.unicode_minus": True,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
    "legend.frameon": False,
    "lines.linewidth": 1.6,
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "savefig.bbox": "standard",
    "savefig.facecolor": "white",
    "path.simplify": True,
}

# ----------------------------------------------------------------------------------------
# numbers as they arrive from report.json


def num(v: Any) -> float:
    """A report number as a float: ``"inf"``/``"-inf"``/``"nan"`` strings decode, None is NaN."""
    if v is None or isinstance(v, bool):
        return math.nan
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)  # accepts "inf", "-inf", "nan"
        except ValueError:
            return math.nan
    return math.nan


def _finite_positive(values: Iterable[float]) -> list[float]:
    return [v for v in values if math.isfinite(v) and v > 0]


def _text(s: Any) -> str:
    """A report string as literal chart text (a ``$`` would otherwise start mathtext)."""
    return str(s).replace("$", r"\$")


def fmt_short(v: float) -> str:
    if math.isnan(v):
        return "n/a"
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    if v == 0:
        return "0"
    return f"{v:.3g}"


# ----------------------------------------------------------------------------------------
# SVG post-processing

_XML_DECL = re.compile(r"<\?xml[^>]*\?>\s*")
_DOCTYPE = re.compile(r"<!DOCTYPE[^>]*>\s*", re.DOTALL)
_COMMENT = re.compile(r"<!--.*?-->\s*", re.DOTALL)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.DOTALL)
_ROOT = re.compile(r"<svg\b[^>]*>", re.DOTALL)
_ID_REF = re.compile(r'(\bid="|href="#|url\(#)([^")]+)')


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _inline(svg: str, name: str, title: str) -> str:
    svg = _XML_DECL.sub("", svg)
    svg = _DOCTYPE.sub("", svg)
    svg = _COMMENT.sub("", svg)
    svg = _METADATA.sub("", svg)
    # keep only the ids something refers to (glyphs, markers, clip paths), prefixed per chart
    referenced = set(re.findall(r'(?:href="#|url\(#)([^")]+)', svg))
    svg = re.sub(r'\sid="([^"]+)"', lambda m: m.group(0) if m.group(1) in referenced else "", svg)
    svg = _ID_REF.sub(lambda m: m.group(1) + (f"{name}-{m.group(2)}" if m.group(2) in referenced else m.group(2)), svg)
    # whitespace: matplotlib indents every element and breaks path data over lines
    svg = re.sub(r"\s*\n\s*", " ", svg)
    svg = re.sub(r">\s+<", "><", svg)

    root = _ROOT.search(svg)
    if root is None:  # pragma: no cover - matplotlib always writes one
        raise ValueError("matplotlib wrote no <svg> element")
    tag = root.group(0)
    tag = re.sub(r'\s(width|height)="[^"]*"', "", tag)
    tag = tag.replace("<svg", f'<svg class="plot" role="img" aria-labelledby="{name}-title"', 1)
    svg = svg[: root.start()] + tag + f'<title id="{name}-title">{_escape(title)}</title>' + svg[root.end():]
    return svg.strip()


def _render(fig: Figure, name: str, title: str) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg",
                metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    return _inline(buf.getvalue(), name, title)


def _figure(height_in: float, *, nrows: int = 1, ncols: int = 1, **kw) -> tuple[Figure, Any]:
    fig = Figure(figsize=(WIDTH_IN, height_in), dpi=DPI, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, **kw)
    return fig, axes


def _empty(name: str, title: str, message: str) -> str:
    with rc_context(RC):
        fig, axes = _figure(1.2)
        ax = axes[0][0]
        ax.set_axis_off()
        ax.text(0.5, 0.5, message, ha="center", va="center", color=GREY, transform=ax.transAxes)
        return _render(fig, name, title)


# ----------------------------------------------------------------------------------------
# the charts


def epsilon_chart(certified: Any, realized: Any, empirical: Mapping[str, Any] | None,
                  ceilings: Mapping[str, Any] | None = None, best: str | None = None,
                  confidence: Any = None) -> str:
    """Certified ε, realized ε and each attack's empirical ε lower bound, on one log axis.

    Bars above the certified ε (dashed line) are red: a measured lower bound or the realized ε
    above the certified ε contradicts the certificate. A lower bound of 0 is drawn as a mark
    at the left edge; the tick on each attack's row is the largest ε that its number of trials
    could prove at all (the ceiling).
    """
    name, title = "epsilon", "Certified, realized and empirical epsilon"
    cert, real = num(certified), num(realized)
    # no certificate (no theorem, or not issued): nothing certified to draw
    rows: list[tuple[str, float, str, float]] = [] if certified is None else [("certified ε", cert, BLUE, math.nan)]
    real_colour = RED if (math.isfinite(cert) and real > cert * (1 + 1e-9)) else ORANGE
    rows.append(("realized ε (noiseless distance)", real, real_colour, math.nan))
    conf = num(confidence)
    if empirical:
        for attack in sorted(empirical):
            v = num(empirical[attack])
            colour = RED if (math.isfinite(cert) and v > cert * (1 + 1e-9)) else GREEN
            label = f"empirical ε ≥ ({_text(attack)}{', best' if attack == best else ''})"
            rows.append((label, v, colour, num((ceilings or {}).get(attack))))

    positives = _finite_positive([r[1] for r in rows] + [r[3] for r in rows])
    lo = min(positives) / 10 if positives else 1e-3
    hi = max(positives) * 10 if positives else 10.0
    lo, hi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))

    with rc_context(RC):
        fig, axes = _figure(0.55 + 0.36 * len(rows) + (0.3 if not empirical else 0))
        ax = axes[0][0]
        ax.set_xscale("log")
        ax.set_xlim(lo, hi)
        ys = list(range(len(rows)))[::-1]
        for y, (label, v, colour, ceiling) in zip(ys, rows):
            if math.isnan(v):
                ax.text(lo * 1.3, y, "not measured", va="center", color=GREY)
                continue
            right = hi if math.isinf(v) and v > 0 else v
            if right > 0:
                ax.barh(y, right - lo, left=lo, height=0.6, color=colour, alpha=0.85)
                ax.text(min(right, hi) * (0.85 if right >= hi else 1.15), y, fmt_short(v),
                        va="center", ha="right" if right >= hi else "left", fontsize=8)
            else:
                ax.plot([lo], [y], marker="|", markersize=14, color=colour, clip_on=False)
                ax.text(lo * 1.4, y, "0 (no evidence of leakage)", va="center", fontsize=8, color=GREY)
            if math.isfinite(ceiling) and ceiling > 0:
                ax.plot([ceiling], [y], marker="|", markersize=16, markeredgewidth=2, color="#333333")
        if math.isfinite(cert) and cert > 0:
            ax.axvline(cert, color=BLUE, linestyle="--", linewidth=1.2)
        ax.set_yticks(ys, [r[0] for r in rows])
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.grid(axis="y", visible=False)
        ax.set_xlabel("ε (log scale)"
                      + (f"; lower bounds at {conf:.0%} confidence" if math.isfinite(conf) else "")
                      + ("; black tick: largest ε the trials can prove" if empirical else ""))
        if not empirical:
            ax.set_title("no attacks were run: only certified and realized ε", fontsize=9, color=GREY)
        return _render(fig, name, title)


def _clip_rates(values: Sequence[Any], n: Any) -> list[float]:
    floor = 1.0 / num(n) if num(n) and math.isfinite(num(n)) and num(n) > 0 else 1e-6
    return [min(max(num(v), floor), 1.0) if math.isfinite(num(v)) else floor for v in values]


def roc_chart(curves: Mapping[str, Mapping[str, Any]]) -> str:
    """ROC of each attack on log–log axes, with the diagonal (a blind guess).

    ``curves[name]`` is a report ROC summary: ``curve.fpr``, ``curve.tpr``, ``n_neg``, ``n_pos``,
    ``auroc``, ``tpr_at_1pct_fpr``. Rates of 0 cannot sit on a log axis: they are drawn at 1/n,
    the smallest non-zero rate the trials can show.
    """
    name, title = "roc", "ROC curves of the attacks, log-log"
    usable = {k: v for k, v in curves.items() if v and v.get("curve") and v["curve"].get("fpr")}
    if not usable:
        return _empty(name, title, "no ROC curves in this report (no attacks were run)")
    floors = [1.0 / num(v.get("n_neg")) for v in usable.values() if num(v.get("n_neg")) > 0]
    floors += [1.0 / num(v.get("n_pos")) for v in usable.values() if num(v.get("n_pos")) > 0]
    lo = min(floors) if floors else 1e-4
    lo = 10 ** math.floor(math.log10(lo))
    with rc_context(RC):
        fig, axes = _figure(5.2)
        ax = axes[0][0]
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.plot([lo, 1], [lo, 1], color=GREY, linestyle=":", linewidth=1.2, label="blind guess (TPR = FPR)")
        for ref in (1e-3, 1e-2):
            if ref >= lo:
                ax.axvline(ref, color="#bbbbbb", linewidth=0.8, linestyle="--")
        for i, attack in enumerate(sorted(usable)):
            roc = usable[attack]
            fpr = _clip_rates(roc["curve"]["fpr"], roc.get("n_neg"))
            tpr = _clip_rates(roc["curve"]["tpr"], roc.get("n_pos"))
            label = f"{_text(attack)} (AUROC {fmt_short(num(roc.get('auroc')))})"  # the rest is in the table
            ax.plot(fpr, tpr, color=ATTACK_COLOURS[i % len(ATTACK_COLOURS)], label=label,
                    linestyle=("-", "--", "-.")[i % 3], drawstyle="steps-post", alpha=0.9)  # overlaps stay visible
        # a little room beyond [1/n, 1] so curves along the edges stay visible
        ax.set_xlim(lo / 1.4, 1.4)
        ax.set_ylim(lo / 1.4, 1.4)
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_locator(LogLocator(base=10, numticks=12))
            axis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("false-positive rate (retrained-world model called unlearned)")
        ax.set_ylabel("true-positive rate")
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=3)
        return _render(fig, name, title)


def loss_histogram_chart(histograms: Mapping[str, Any] | None) -> str:
    """Per-record loss distributions of forget, retain and unseen records, one panel per model.

    Each split is normalised to fractions of its own records (the forget set can hold a single
    record), drawn as a step histogram over the report's shared bin edges.
    """
    name, title = "losses", "Loss histograms of forget, retain and unseen records"
    if not histograms or not histograms.get("edges") or not histograms.get("counts"):
        return _empty(name, title, "no loss histograms in this report")
    edges = [num(e) for e in histograms["edges"]]
    counts = histograms["counts"]
    models = [m for m in ("original", "unlearned", "retrained") if m in counts]
    models += sorted(m for m in counts if m not in models)
    with rc_context(RC):
        fig, axes = _figure(2.8, ncols=len(models), sharey=True)
        for ax, model in zip(axes[0], models):
            splits = counts[model]
            order = [s for s in ("retain", "unseen", "forget") if s in splits]
            order += sorted(s for s in splits if s not in order)
            for split in order:
                c = [num(x) for x in splits[split]]
                total = sum(x for x in c if math.isfinite(x))
                if total <= 0 or len(c) != len(edges) - 1:
                    continue
                frac = [x / total for x in c]
                colour = SPLIT_COLOURS.get(split, GREY)
                n = int(total)
                ax.stairs(frac, edges, color=colour, linewidth=1.4 if split != "forget" else 1.8,
                          fill=split == "forget", alpha=0.35 if split == "forget" else 1.0,
                          label=f"{_text(split)} (n={n})")
                if split == "forget":
                    ax.stairs(frac, edges, color=colour, linewidth=1.6)
            ax.set_title(_text(model), color=MODEL_COLOURS.get(model, "black"))
            ax.set_xlabel("per-record loss")
            ax.set_xlim(edges[0], edges[-1])
            ax.set_yscale("symlog", linthresh=0.01)
            ax.set_ylim(0, 1.05)
        axes[0][0].set_ylabel("fraction of the split's records")
        axes[0][0].legend(loc="upper right")
        return _render(fig, name, title)


def relearn_chart(relearn: Mapping[str, Any] | None) -> str:
    """Mean forget-set loss during fine-tuning on the forget set, unlearned vs retrained world.

    The dashed line is the original model's forget loss (the relearn target); a model that
    reaches it in fewer steps remembers more of the forget set.
    """
    name, title = "relearn", "Relearn-time curves"
    worlds = {w: relearn.get(w) for w in ("unlearned", "retrained")} if relearn else {}
    worlds = {w: v for w, v in worlds.items() if v and v.get("curve_mean_forget_loss")}
    if not worlds:
        return _empty(name, title, "no relearn-time curves in this report")
    with rc_context(RC):
        fig, axes = _figure(3.0)
        ax = axes[0][0]
        target = math.nan
        for world, v in worlds.items():
            y = [num(x) for x in v["curve_mean_forget_loss"]]
            x = list(range(len(y)))
            label = (f"{world} world: mean {fmt_short(num(v.get('mean_steps')))} steps, "
                     f"median {fmt_short(num(v.get('median_steps')))}, "
                     f"censored {fmt_short(num(v.get('censored_fraction')))}")
            ax.plot(x, y, color=MODEL_COLOURS[world], label=label, marker="o", markersize=2.5,
                    linestyle="--" if world == "retrained" else "-")
            target = num(v.get("target_loss")) if math.isnan(target) else target
        if math.isfinite(target):
            ax.axhline(target, color=GREY, linestyle=":", linewidth=1.2,
                       label=f"target: original model's forget loss ({fmt_short(target)})")
        ax.set_xscale("symlog", linthresh=1)
        ax.set_xlim(0, None)
        ax.set_xlabel("fine-tuning steps on the forget set (symmetric log scale)")
        ax.set_ylabel("mean forget-set loss")
        ax.legend(loc="best")
        return _render(fig, name, title)


def tradeoff_chart(tradeoff: Mapping[str, Any] | None, certified_epsilon: Any = None) -> str:
    """The knob–σ–ε tradeoff: for each value of the method's knob (R2D: the rewind K), the σ its
    bound needs at the certified ε, the realized ε, and the utility."""
    name, title = "tradeoff", "Knob-sigma-epsilon tradeoff curve"
    tradeoff = tradeoff or {}
    knob = tradeoff.get("knob") or {}
    points = sorted({num(r.get("value")): r for r in (tradeoff.get("rows") or [])
                     if math.isfinite(num(r.get("value")))}.items())
    if not points:
        return _empty(name, title, "no tradeoff curve in this report")
    xs = [k for k, _ in points]
    symbol = _text(knob.get("symbol") or knob.get("option") or "knob")
    log_x = min(xs) > 0 and max(xs) / min(xs) >= 50

    def col(key: str) -> list[float]:
        return [num(r.get(key)) for _, r in points]

    chosen = num(tradeoff.get("chosen"))
    cert = num(certified_epsilon)
    with rc_context(RC):
        fig, axes = _figure(6.2, nrows=3, sharex=True)
        a0, a1, a2 = axes[0][0], axes[1][0], axes[2][0]
        for ax, key, label, colour, style in (
                (a0, "sigma", "σ needed for the certified ε", BLUE, "-"),
                (a0, "sensitivity", "sensitivity bound Δ", ORANGE, "--"),
                (a0, "distance", "measured ‖θ_U − θ_R‖", GREEN, ":")):
            ys = col(key)
            if _finite_positive(ys):
                ax.plot(xs, [y if math.isfinite(y) and y > 0 else math.nan for y in ys],
                        color=colour, linestyle=style, marker="o", markersize=3, label=label)
        a0.set_yscale("log")
        a0.set_ylabel("parameter-space\ndistance")
        a0.legend(loc="best")

        real = col("realized_epsilon")
        if _finite_positive(real):
            a1.plot(xs, [y if math.isfinite(y) and y > 0 else math.nan for y in real], color=ORANGE,
                    marker="o", markersize=3, label=f"realized ε (measured ‖θ_U − θ_R‖ at that {symbol}'s σ)")
        if math.isfinite(cert) and cert > 0:
            a1.axhline(cert, color=BLUE, linestyle="--", linewidth=1.2, label=f"certified ε = {fmt_short(cert)}")
        a1.set_yscale("log")
        a1.set_ylabel("ε")
        a1.legend(loc="best")

        for key, label, colour, style in (("test_accuracy_noiseless", "test accuracy, noiseless", GREY, "--"),
                                          ("test_accuracy_released", "test accuracy, released (noisy)", BLUE, "-")):
            ys = col(key)
            if any(math.isfinite(y) for y in ys):
                a2.plot(xs, ys, color=colour, linestyle=style, marker="o", markersize=3, label=label)
        a2.set_ylabel("accuracy")
        a2.set_xlabel(f"{symbol} ({_text(knob.get('option') or 'knob')})")
        if log_x:
            a2.set_xscale("log")
        a2.legend(loc="best")
        if math.isfinite(chosen):
            for ax in (a0, a1, a2):
                ax.axvline(chosen, color=RED, linewidth=1.0, alpha=0.7)
            a0.annotate(f"this audit: {symbol} = {fmt_short(chosen)}", xy=(chosen, 1),
                        xycoords=("data", "axes fraction"), xytext=(-4, -2), textcoords="offset points",
                        ha="right", va="top", color=RED, fontsize=8)
        return _render(fig, name, title)


# ----------------------------------------------------------------------------------------
# the trade-off (f-DP) curve

_STD_NORMAL = NormalDist()


def gaussian_tradeoff(alpha: float, mu: float) -> float:
    """G_μ(α) = Φ(Φ⁻¹(1 − α) − μ): the smallest type-II error (FNR) any test at type-I error (FPR)
    α can have against μ-GDP (Dong, Roth & Su 2022, Eq. (2.4)); the Gaussian mechanism with
    sensitivity Δ and noise σ is exactly μ-GDP with μ = Δ/σ."""
    a, m = num(alpha), num(mu)
    if math.isnan(a) or math.isnan(m) or m < 0:
        return math.nan
    if a <= 0:
        return 1.0
    if a >= 1 or math.isinf(m):
        return 0.0
    return _STD_NORMAL.cdf(_STD_NORMAL.inv_cdf(1.0 - a) - m)


def empirical_tradeoff(roc: Mapping[str, Any] | None, direction: Any = "U>R") -> tuple[list[float], list[float]]:
    """The (FPR, FNR) points of an attack's test, from a report ROC summary, in increasing FPR.

    The report's curve is "say U when score ≥ t" (U>R): FNR = 1 − TPR. For an attack whose bound
    used the other direction (R>U: say U when the score is low) the test says U exactly where the
    U>R test says R, so its point at t is (1 − FPR, TPR).
    """
    curve = (roc or {}).get("curve") or {}
    fpr = [num(v) for v in curve.get("fpr") or []]
    tpr = [num(v) for v in curve.get("tpr") or []]
    pts = [(f, t) for f, t in zip(fpr, tpr) if math.isfinite(f) and math.isfinite(t)]
    if direction == "R>U":
        pts = [(1.0 - f, t) for f, t in pts]
    else:
        pts = [(f, 1.0 - t) for f, t in pts]
    pts.sort(key=lambda p: (p[0], -p[1]))
    return [p[0] for p in pts], [p[1] for p in pts]


def points_below(alpha: Sequence[float], beta: Sequence[float], mu: Any, tol: float = 1e-9) -> int:
    """How many (α, β) points lie below G_μ: tests better than the certificate allows."""
    m = num(mu)
    if not (math.isfinite(m) and m >= 0):
        return 0
    return sum(1 for a, b in zip(alpha, beta) if b < gaussian_tradeoff(a, m) - tol)


def fdp_chart(roc: Mapping[str, Any] | None, direction: Any = "U>R", attack: Any = None,
              mu: Any = None, no_curve_reason: str | None = None) -> str:
    """The best attack's empirical trade-off curve and the Gaussian curve G_μ the certificate promises.

    x: FPR (a retrained-world release called unlearned), y: FNR (an unlearned-world release
    called retrained) of the attack's test at each threshold; straight segments between the
    points are the randomised tests in between. A certificate that holds puts every test on or
    above G_μ; points below it (red) are tests that beat the promise (point estimates). The
    diagonal FNR = 1 − FPR is a blind guess. Without a Gaussian promise (no certificate, σ = 0)
    only the empirical curve is drawn, and ``no_curve_reason`` is written on the chart.
    """
    name, title = "fdp", "Trade-off (f-DP) curve: best attack and the certificate's Gaussian curve"
    alpha, beta = empirical_tradeoff(roc, direction)
    m = num(mu)
    has_mu = math.isfinite(m) and m >= 0
    if not alpha and not has_mu:
        return _empty(name, title, "no trade-off curve: no attack was run and no Gaussian curve is promised")
    with rc_context(RC):
        fig, axes = _figure(5.2)
        ax = axes[0][0]
        ax.plot([0, 1], [1, 0], color=GREY, linestyle=":", linewidth=1.2, label="blind guess (FNR = 1 − FPR)")
        if has_mu:
            grid = sorted({i / 400 for i in range(401)} | {10.0 ** (-k / 4) for k in range(1, 25)})
            ax.plot(grid, [gaussian_tradeoff(a, m) for a in grid], color=BLUE, linestyle="--", linewidth=1.6,
                    label=f"promised by the certificate: G_μ, μ = Δ/σ = {fmt_short(m)}")
        if alpha:
            label = f"best attack: {_text(attack) if attack is not None else 'attack'} (direction {_text(direction)})"
            ax.plot(alpha, beta, color=VERMILLION, linewidth=1.6, marker="o", markersize=2.2, label=label)
            if has_mu:
                below = [(a, b) for a, b in zip(alpha, beta) if b < gaussian_tradeoff(a, m) - 1e-9]
                if below:
                    ax.plot([p[0] for p in below], [p[1] for p in below], linestyle="none", marker="o",
                            markersize=5, color=RED, label=f"below the promised curve ({len(below)} points)")
        if not has_mu and no_curve_reason:
            ax.text(0.97, 0.97, _text(no_curve_reason), transform=ax.transAxes, ha="right", va="top",
                    color=GREY, fontsize=8)
        ax.set_xlim(-0.01, 1.01)
        ax.set_ylim(-0.01, 1.01)
        ax.set_aspect("equal", adjustable="box")
        ax.set_xlabel("false-positive rate α (retrained-world release called unlearned)")
        ax.set_ylabel("false-negative rate β (unlearned-world release called retrained)")
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=2)
        return _render(fig, name, title)
