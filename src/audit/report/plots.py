"""Charts of the HTML report, each returned as an SVG string ready to inline.

Drawn with the report's own SVG kit (:mod:`audit.report.svg`, which says why the report does not
use matplotlib): the ε bars, ROC curves, loss histograms, relearn-time curves, the knob's
tradeoff, the privacy–utility frontier and the f-DP trade-off chart (with its Gaussian reference
curve, :func:`gaussian_tradeoff`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import NormalDist
from typing import Any

from audit.report.svg import (
    ATTACK_COLOURS,
    BLUE,
    GREEN,
    GREY,
    INK,
    LABEL,
    MODEL_COLOURS,
    ORANGE,
    RED,
    SPLIT_COLOURS,
    TICK,
    VERMILLION,
    WIDTH,
    LegendItem,
    LineStyle,
    _Chart,
    _empty,
    _finite_positive,
    _label,
    _line,
    _linear_domain,
    _log_domain,
    _Panel,
    _stroke,
    _text_width,
    _wrap,
    fmt_short,
    num,
)

# ----------------------------------------------------------------------------------------
# the charts


def epsilon_chart(
    certified: Any,
    realized: Any,
    empirical: Mapping[str, Any] | None,
    ceilings: Mapping[str, Any] | None = None,
    best: str | None = None,
    confidence: Any = None,
) -> str:
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
            label = f"empirical ε ≥ ({attack}{', best' if attack == best else ''})"
            rows.append((label, v, colour, num((ceilings or {}).get(attack))))

    positives = _finite_positive([r[1] for r in rows] + [r[3] for r in rows])
    lo = min(positives) / 10 if positives else 1e-3
    hi = max(positives) * 10 if positives else 10.0
    lo, hi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))

    chart = _Chart(name, title)
    left = min(12 + max(_text_width(r[0], TICK) for r in rows) + 8, WIDTH * 0.45)
    top = 12 + (24 if not empirical else 0)
    row_h = 28.0
    p = chart.panel(left, top, WIDTH - left - 20, row_h * len(rows), ("log", lo, hi), ("linear", -0.6, len(rows) - 0.4))
    ys = list(range(len(rows)))[::-1]
    xlabel = (
        ["ε (log scale)"]
        + ([f"lower bounds at {conf:.0%} confidence"] if math.isfinite(conf) else [])
        + (["black tick: largest ε the trials can prove"] if empirical else [])
    )
    xlabel_text = _wrap(xlabel, WIDTH - 40, LABEL)
    p.frame(grid="x", yticks=[(y, r[0]) for y, r in zip(ys, rows)], xlabel=xlabel_text)
    for y, (_, v, colour, ceiling) in zip(ys, rows):
        if math.isnan(v):
            p.text(lo * 1.3, y, "not measured", colour=GREY)
            continue
        right = hi if math.isinf(v) and v > 0 else v
        if right > 0:
            p.barh(y, lo, right, 0.6, colour, 0.85)
            p.text(
                min(right, hi) * (0.85 if right >= hi else 1.15),
                y,
                fmt_short(v),
                anchor="end" if right >= hi else "start",
            )
        else:
            p.tick_mark(lo, y, 18, colour, 1.5)
            p.text(lo * 1.4, y, "0 (no evidence of leakage)", colour=GREY)
        if math.isfinite(ceiling) and ceiling > 0:
            p.tick_mark(ceiling, y, 22, INK, 2.5)
    if math.isfinite(cert) and cert > 0:
        p.vline(cert, colour=BLUE, dash="--", width=1.6)
    if not empirical:
        p.title("no attacks were run: only certified and realized ε", colour=GREY, size=LABEL)
    return chart.svg(p.y + p.h + 44 + 1.25 * LABEL * xlabel_text.count("\n"))


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
    chart = _Chart(name, title)
    # a little room beyond [1/n, 1] so curves along the edges stay visible
    p = chart.panel(84, 12, WIDTH - 84 - 24, 380, ("log", lo / 1.4, 1.4), ("log", lo / 1.4, 1.4))
    p.frame(xlabel="false-positive rate (retrained-world model called unlearned)", ylabel="true-positive rate")
    items: list[LegendItem] = []
    blind: LineStyle = {"colour": GREY, "dash": ":", "width": 1.5}
    p.line([lo, 1], [lo, 1], **blind)
    items.append(("blind guess (TPR = FPR)", blind))
    for ref in (1e-3, 1e-2):
        if ref >= lo:
            p.vline(ref, colour="#bbbbbb", width=1.0, dash="--")
    for i, attack in enumerate(sorted(usable)):
        roc = usable[attack]
        fpr = _clip_rates(roc["curve"]["fpr"], roc.get("n_neg"))
        tpr = _clip_rates(roc["curve"]["tpr"], roc.get("n_pos"))
        # overlapping curves stay visible: a dash pattern each, slightly transparent
        style: LineStyle = {
            "colour": ATTACK_COLOURS[i % len(ATTACK_COLOURS)],
            "dash": ("-", "--", "-.")[i % 3],
            "width": 2.0,
            "opacity": 0.9,
        }
        p.line(fpr, tpr, steps=True, **style)
        items.append((f"{attack} (AUROC {fmt_short(num(roc.get('auroc')))})", style))  # the rest is in the table
    height = chart.legend(items, 24, p.y + p.h + 48, WIDTH - 48, 3)
    return chart.svg(p.y + p.h + 48 + height + 8)


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
    x_domain = (
        (edges[0], edges[-1])
        if all(map(math.isfinite, (edges[0], edges[-1]))) and edges[-1] > edges[0]
        else _linear_domain(edges)
    )
    chart = _Chart(name, title)
    left, gap, top, h = 70.0, 16.0, 28.0, 180.0
    w = (WIDTH - left - 12 - gap * (len(models) - 1)) / max(1, len(models))
    items: list[tuple[str, dict]] = []
    for i, model in enumerate(models):
        # shared y: tick labels and the y label on the first panel only
        p = chart.panel(left + i * (w + gap), top, w, h, ("linear", *x_domain), ("symlog", 0.0, 1.05, 0.01))
        p.frame(
            xlabel="per-record loss", ylabel="fraction of the split's records" if i == 0 else None, ytick_labels=i == 0
        )
        p.title(str(model), colour=MODEL_COLOURS.get(model, INK))
        splits = counts[model] or {}
        order = [s for s in ("retain", "unseen", "forget") if s in splits]
        order += sorted(s for s in splits if s not in order)
        for split in order:
            c = [num(x) for x in splits[split]]
            total = sum(x for x in c if math.isfinite(x))
            if total <= 0 or len(c) != len(edges) - 1:
                continue
            frac = [x / total for x in c]
            colour = SPLIT_COLOURS.get(split, GREY)
            forget = split == "forget"
            p.stairs(frac, edges, colour=colour, width=2.2 if forget else 1.8, fill=forget)
            if i == 0:
                items.append((f"{split} (n={int(total)})", {"colour": colour, "fill": forget, "width": 1.8}))
    height = chart.legend(items, left, top + h + 44, WIDTH - left - 12, 3)
    return chart.svg(top + h + 44 + height + 6)


def relearn_chart(relearn: Mapping[str, Any] | None) -> str:
    """Mean forget-set loss during fine-tuning on the forget set, unlearned vs retrained world.

    The dashed line is the original model's forget loss (the relearn target); a model that
    reaches it in fewer steps remembers more of the forget set.
    """
    name, title = "relearn", "Relearn-time curves"
    worlds: dict[str, Any] = {w: relearn.get(w) for w in ("unlearned", "retrained")} if relearn else {}
    worlds = {w: v for w, v in worlds.items() if v and v.get("curve_forget_loss")}
    if not worlds:
        return _empty(name, title, "no relearn-time curves in this report")
    curves = {w: [num(x) for x in v["curve_forget_loss"]] for w, v in worlds.items()}
    target = next((t for v in worlds.values() if not math.isnan(t := num(v.get("target_loss")))), math.nan)
    steps = max(len(y) for y in curves.values()) - 1
    y_domain = _linear_domain([y for ys in curves.values() for y in ys] + [target])
    chart = _Chart(name, title)
    p = chart.panel(84, 12, WIDTH - 84 - 24, 220, ("symlog", 0.0, max(steps, 1), 1.0), ("linear", *y_domain))
    p.frame(
        xlabel="fine-tuning steps on the forget set (symmetric log scale)",
        ylabel="forget-set loss of the audit's own model",
    )
    items: list[LegendItem] = []
    for world, v in worlds.items():
        style: LineStyle = {
            "colour": MODEL_COLOURS[world],
            "dash": "--" if world == "retrained" else None,
            "width": 2.0,
            "marker": 2.0,
        }
        y = curves[world]
        p.line(list(range(len(y))), y, **style)
        items.append(
            (
                f"{world} world: mean {fmt_short(num(v.get('mean_steps')))} steps, "
                f"median {fmt_short(num(v.get('median_steps')))}, "
                f"censored {fmt_short(num(v.get('censored_fraction')))}",
                style,
            )
        )
    if math.isfinite(target):
        style = {"colour": GREY, "dash": ":", "width": 1.5}
        p.hline(target, **style)
        items.append((f"target: original model's forget loss ({fmt_short(target)})", style))
    height = chart.legend(items, 84, p.y + p.h + 48, WIDTH - 84 - 24, 1)
    return chart.svg(p.y + p.h + 48 + height + 6)


def tradeoff_chart(tradeoff: Mapping[str, Any] | None, certified_epsilon: Any = None) -> str:
    """The knob–σ–ε tradeoff: for each value of the method's knob (R2D: the rewind K), the σ its
    bound needs at the certified ε, the realized ε, and the utility."""
    name, title = "tradeoff", "Knob sweep: the sigma and epsilon at each value of the knob"
    tradeoff = tradeoff or {}
    knob = tradeoff.get("knob") or {}
    points = sorted(
        {num(r.get("value")): r for r in (tradeoff.get("rows") or []) if math.isfinite(num(r.get("value")))}.items()
    )
    if not points:
        return _empty(name, title, "no knob sweep in this report")
    xs = [k for k, _ in points]
    symbol = str(knob.get("symbol") or knob.get("option") or "knob")
    log_x = min(xs) > 0 and max(xs) / min(xs) >= 50

    def col(key: str) -> list[float]:
        return [num(r.get(key)) for _, r in points]

    chosen = num(tradeoff.get("chosen"))
    cert = num(certified_epsilon)
    if log_x:
        x_scale = ("log", *_log_domain(xs))
    else:
        x_scale = ("linear", *_linear_domain(xs + ([chosen] if math.isfinite(chosen) else [])))

    # three panels sharing x, each with its legend above it: (series, y scale, y label, extra lines);
    # a series is (column key, legend label, colour, dash)
    distance: list[tuple[str, str, str, str | None]] = [
        (key, label, colour, dash)
        for key, label, colour, dash in (
            ("sigma", "σ needed for the certified ε", BLUE, None),
            ("sensitivity", "sensitivity bound Δ", ORANGE, "--"),
            ("distance", "measured ‖θ_U − θ_R‖", GREEN, ":"),
        )
        if _finite_positive(col(key))
    ]
    real = col("realized_epsilon")
    epsilon: list[tuple[str, str, str, str | None]] = (
        [("realized_epsilon", f"realized ε (measured ‖θ_U − θ_R‖ at that {symbol}'s σ)", ORANGE, None)]
        if _finite_positive(real)
        else []
    )
    accuracy: list[tuple[str, str, str, str | None]] = [
        (key, label, colour, dash)
        for key, label, colour, dash in (
            ("test_accuracy_noiseless", "test accuracy, noiseless", GREY, "--"),
            ("test_accuracy_released", "test accuracy, released (noisy)", BLUE, None),
        )
        if any(math.isfinite(y) for y in col(key))
    ]
    cert_line = math.isfinite(cert) and cert > 0
    # an extra horizontal line: (legend label, style, y)
    cert_hline: list[tuple[str, LineStyle, float]] = [
        (f"certified ε = {fmt_short(cert)}", {"colour": BLUE, "dash": "--", "width": 1.6}, cert)
    ]
    no_hlines: list[tuple[str, LineStyle, float]] = []
    panels = (
        (
            distance,
            ("log", *_log_domain(v for s in distance for v in col(s[0]))),
            "parameter-space\ndistance",
            no_hlines,
        ),
        (
            epsilon,
            ("log", *_log_domain(real + ([cert] if cert_line else []))),
            "ε",
            cert_hline if cert_line else no_hlines,
        ),
        (accuracy, ("linear", *_linear_domain(v for s in accuracy for v in col(s[0]))), "accuracy", no_hlines),
    )
    chart = _Chart(name, title)
    left, width, y = 84.0, WIDTH - 84 - 24, 6.0
    drawn: list[_Panel] = []
    for i, (series, y_scale, ylabel, hlines) in enumerate(panels):
        items: list[tuple[str, LineStyle]] = [
            (label, {"colour": colour, "dash": dash, "width": 2.0, "marker": 2.5}) for _, label, colour, dash in series
        ]
        items += [(label, style) for label, style, _ in hlines]
        y += chart.legend(items, left, y, width, 2) + 6
        p = chart.panel(left, y, width, 120, x_scale, y_scale)
        last = i == len(panels) - 1
        p.frame(ylabel=ylabel, xtick_labels=last, xlabel=f"{symbol} ({knob.get('option') or 'knob'})" if last else None)
        for (key, _, _, _), (_, style) in zip(series, items):
            # log panels: a value ≤ 0 cannot be drawn and breaks the line (the scale returns None)
            p.line(xs, col(key), **style)
        for _, style, value in hlines:
            p.hline(value, **style)
        drawn.append(p)
        y += 120 + 12
    if math.isfinite(chosen):
        for p in drawn:
            p.vline(chosen, colour=RED, width=1.2, opacity=0.7)
        a0 = drawn[0]
        if (px := a0.xs(chosen)) is not None:
            a0.over.append(
                _label(px - 4, a0.y + 8, f"this audit: {symbol} = {fmt_short(chosen)}", anchor="end", colour=RED)
            )
    return chart.svg(y + 34)


def frontier_chart(
    frontiers: Mapping[str, Mapping[str, Any]], *, epsilon: Any = None, retrained: Any = None, chance: Any = None
) -> str:
    """The privacy-utility frontier of several methods on one chart: released test accuracy
    (mean over noise draws, with a ±1 sd band as whiskers) against ε on a log axis, one line per
    method, with retraining's noiseless accuracy, the majority-class rate and the requested ε."""
    name, title = "frontier", "Privacy-utility frontier: released test accuracy against epsilon"
    series = {
        m: sorted(
            (
                (num(p.get("epsilon")), num(p.get("test_accuracy_mean")), num(p.get("test_accuracy_std")))
                for p in (f.get("points") or [])
            ),
            key=lambda t: t[0],
        )
        for m, f in frontiers.items()
        if f and f.get("applicable") and f.get("points")
    }
    if not series:
        return _empty(name, title, "no compared method has a frontier (no output-noise certificate)")
    eps = [e for pts in series.values() for e, _, _ in pts] + ([num(epsilon)] if math.isfinite(num(epsilon)) else [])
    ref, floor = num(retrained), num(chance)
    accs = [a + k * s for pts in series.values() for _, a, s in pts for k in (-1, 1) if math.isfinite(a)]
    accs += [v for v in (ref, floor) if math.isfinite(v)]
    chart = _Chart(name, title)
    left, width = 72.0, WIDTH - 72 - 24
    styles: dict[str, LineStyle] = {
        m: {
            "colour": ATTACK_COLOURS[i % len(ATTACK_COLOURS)],
            "width": 2.0,
            "marker": 3.0,
            "dash": (None, "--", ":")[(i // len(ATTACK_COLOURS)) % 3],
        }
        for i, m in enumerate(series)
    }
    items: list[LegendItem] = [(m, st) for m, st in styles.items()]
    if math.isfinite(ref):
        items.append((f"retraining, noiseless ({fmt_short(ref)})", {"colour": INK, "dash": "--", "width": 1.4}))
    if math.isfinite(floor):
        items.append((f"majority-class rate ({fmt_short(floor)})", {"colour": GREY, "dash": ":", "width": 1.4}))
    if math.isfinite(num(epsilon)):
        items.append((f"requested ε = {fmt_short(num(epsilon))}", {"colour": RED, "width": 1.2, "opacity": 0.7}))
    y = 6.0 + chart.legend(items, left, 6.0, width, 3) + 8
    p = chart.panel(left, y, width, 260, ("log", *_log_domain(eps)), ("linear", *_linear_domain(accs)))
    p.frame(xlabel="ε (log scale); each method's σ is its own certificate at that ε", ylabel="test accuracy,\nreleased")
    if math.isfinite(ref):
        p.hline(ref, colour=INK, dash="--", width=1.4)
    if math.isfinite(floor):
        p.hline(floor, colour=GREY, dash=":", width=1.4)
    if math.isfinite(num(epsilon)):
        p.vline(num(epsilon), colour=RED, width=1.2, opacity=0.7)
    for m, pts in series.items():
        st = styles[m]
        p.line([e for e, _, _ in pts], [a for _, a, _ in pts], **st)
        for e, a, s in pts:
            if math.isfinite(s) and s > 0:
                lo, hi = p._point(e, a - s), p._point(e, a + s)
                if lo is not None and hi is not None:
                    p.data.append(_line(lo[0], lo[1], hi[0], hi[1], _stroke(st["colour"], 1.0, opacity=0.6)))
    return chart.svg(p.y + p.h + 48)


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


#: α values at which G_μ is drawn: uniform on [0, 1] plus a log-spaced run towards 0, where the
#: curve bends fastest
FDP_GRID = tuple(sorted({i / 400 for i in range(401)} | {10.0 ** (-k / 4) for k in range(1, 25)}))


def fdp_chart(
    roc: Mapping[str, Any] | None,
    direction: Any = "U>R",
    attack: Any = None,
    mu: Any = None,
    no_curve_reason: str | None = None,
) -> str:
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
    chart = _Chart(name, title)
    side = 400.0  # square: equal scales on both axes
    p = chart.panel((WIDTH - side) / 2 + 20, 12, side, side, ("linear", -0.01, 1.01), ("linear", -0.01, 1.01))
    p.frame(
        xlabel="false-positive rate α (retrained-world release called unlearned)",
        ylabel="false-negative rate β (unlearned-world release called retrained)",
    )
    items: list[LegendItem] = []
    blind: LineStyle = {"colour": GREY, "dash": ":", "width": 1.5}
    p.line([0, 1], [1, 0], **blind)
    items.append(("blind guess (FNR = 1 − FPR)", blind))
    if has_mu:
        style: LineStyle = {"colour": BLUE, "dash": "--", "width": 2.0}
        p.line(FDP_GRID, [gaussian_tradeoff(a, m) for a in FDP_GRID], **style)
        items.append((f"promised by the certificate: G_μ, μ = Δ/σ = {fmt_short(m)}", style))
    if alpha:
        style = {"colour": VERMILLION, "width": 2.0, "marker": 1.8}
        p.line(alpha, beta, **style)
        items.append((f"best attack: {attack if attack is not None else 'attack'} (direction {direction})", style))
        if has_mu:
            below = [(a, b) for a, b in zip(alpha, beta) if b < gaussian_tradeoff(a, m) - 1e-9]
            if below:
                p.dots([a for a, _ in below], [b for _, b in below], colour=RED, r=3.5)
                items.append(
                    (f"below the promised curve ({len(below)} points)", {"colour": RED, "dash": "none", "marker": 3.5})
                )
    if not has_mu and no_curve_reason:
        p.over.append(_label(p.x + p.w - 6, p.y + 10, no_curve_reason, anchor="end", colour=GREY))
    height = chart.legend(items, 24, p.y + p.h + 48, WIDTH - 48, 2)
    return chart.svg(p.y + p.h + 48 + height + 6)
