"""Charts of the HTML report, each returned as an SVG string ready to inline, drawn here.

Why this module writes the SVG itself instead of asking matplotlib (issue 14). The six charts
are lines, step lines, horizontal bars and step histograms on linear, log and symlog axes: a
scale, ticks, a clipped plot area and a legend are all they need. Drawn by matplotlib's SVG
backend they cost the default audit's report 1.7 to 2 s of CPU (about 0.3 s importing
matplotlib, 1.4 to 1.6 s drawing; ``bench/bench_report.py``), against a budget of a few
hundred milliseconds.
Cheaper matplotlib settings, measured while choosing (warm renders of the sample report, the
old path at 1.4 s), do not get there, because the time goes to matplotlib laying out its
artists and text whatever the output: text as ``<text>`` instead of glyph outlines 1.5 s, Agg
PNG at 72 dpi 1.3 s and at 50 dpi 1.2 s (and a PNG loses the text), no constrained layout 0.6 s
(and labels then collide). Drawn here, the six cost about 7 ms and import nothing (the bench
measures both in the same run), and that buys more than time:

* text is real ``<text>``: searchable, selectable, read by assistive technology, and each chart
  is a few kilobytes instead of about 65 KB of glyph outlines;
* what is plotted is exact and checkable: coordinates come from :class:`_Scale` and the data,
  so tests can count and locate the plotted points;
* deterministic by construction: plain string building from the input in a fixed order, the
  same bytes in any process and under any library version (the page is hashed and signed).

The price: text is drawn in the viewer's sans-serif font (the page's own font stack), so label
widths are estimated (:func:`_text_width`, generously) rather than measured, and layouts leave
room to spare. Everything from the report that reaches a chart is escaped (:func:`_escape`).

Every chart is ``<svg class="plot" role="img" aria-labelledby="NAME-title">`` with a
``<title>``, sized by the page's CSS through its ``viewBox``; every id in it starts with the
chart's name, so the six charts share one page without clashes. Data are drawn inside a
``<g clip-path=…>`` per plot area (lines end at the axes, as before); legends and labels
outside it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from statistics import NormalDist
from typing import Any, NotRequired, TypedDict, cast

# Okabe–Ito colour-blind-safe palette
BLUE, ORANGE, GREEN, VERMILLION = "#0072B2", "#E69F00", "#009E73", "#D55E00"
RED = "#C62828"  # violations only: a plain, unmistakable red
SKY, PURPLE, YELLOW, GREY = "#56B4E9", "#CC79A7", "#F0E442", "#777777"
MODEL_COLOURS = {"original": GREY, "unlearned": BLUE, "retrained": GREEN}
SPLIT_COLOURS = {"forget": VERMILLION, "retain": BLUE, "unseen": GREEN, "test": PURPLE}
ATTACK_COLOURS = [BLUE, ORANGE, GREEN, PURPLE, SKY, VERMILLION, GREY]
INK, GRID = "#333333", "#dddddd"


class LineStyle(TypedDict):
    """How a polyline is drawn: the keywords of :meth:`_Panel.line` besides ``steps``."""

    colour: str
    width: NotRequired[float]
    dash: NotRequired[str | None]
    marker: NotRequired[float]
    opacity: NotRequired[float | None]


#: A legend entry: its label and style (a line style, or a filled box with ``fill``)
LegendItem = tuple[str, Mapping[str, Any]]

WIDTH = 720  # viewBox width in user units; the page's CSS scales the chart to its column
FONT = "'DejaVu Sans', 'Segoe UI', Helvetica, Arial, sans-serif"  # the page's own stack
TICK, LABEL, TITLE = 11.0, 12.0, 13.0  # font sizes
ROW = 17.0  # height of a legend row

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


def fmt_short(v: float) -> str:
    if math.isnan(v):
        return "n/a"
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    if v == 0:
        return "0"
    return f"{v:.3g}"


# ----------------------------------------------------------------------------------------
# SVG primitives


def _escape(text: Any) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _c(v: float) -> str:
    """A coordinate: a tenth of a user unit is below a screen pixel at any size the page uses."""
    s = f"{v:.1f}"
    s = s[:-2] if s.endswith(".0") else s
    return "0" if s == "-0" else s


def _text_width(text: str, size: float) -> float:
    """Estimated width of ``text``: 0.65 em a character is at least the average of DejaVu Sans
    (digits 0.64 em, lower case less) and of the usual fallbacks, so space reserved from it is
    enough."""
    return 0.65 * size * len(text)


def _wrap(parts: Sequence[str], width: float, size: float, sep: str = "; ") -> str:
    """``parts`` joined by ``sep``, broken into lines ("\n") that fit ``width`` where possible."""
    lines: list[str] = []
    for part in parts:
        if lines and _text_width(lines[-1] + sep + part, size) <= width:
            lines[-1] += sep + part
        else:
            lines.append(part)
    return (sep.rstrip() + "\n").join(lines)


def _dash(style: str | None, width: float) -> str | None:
    """matplotlib's dash patterns, scaled by the line width as matplotlib scales them."""
    pattern = {"--": (3.7, 1.6), ":": (1.0, 1.65), "-.": (6.4, 1.6, 1.0, 1.6)}.get(style or "")
    return None if pattern is None else " ".join(_c(p * width) for p in pattern)


def _stroke(colour: str, width: float, dash: str | None = None, opacity: float | None = None) -> str:
    out = f'fill="none" stroke="{colour}" stroke-width="{_c(width)}"'
    if (d := _dash(dash, width)) is not None:
        out += f' stroke-dasharray="{d}"'
    if opacity is not None:
        out += f' stroke-opacity="{opacity}"'
    return out


def _line(x0: float, y0: float, x1: float, y1: float, attrs: str) -> str:
    return f'<line x1="{_c(x0)}" y1="{_c(y0)}" x2="{_c(x1)}" y2="{_c(y1)}" {attrs}/>'


def _label(
    x: float,
    y: float,
    text: Any,
    *,
    size: float = TICK,
    anchor: str = "start",
    colour: str | None = None,
    rotate: bool = False,
) -> str:
    """Text centred vertically on ``y`` (``dy=".35em"``); ``rotate`` turns it to read upwards.
    Newlines in ``text`` become stacked lines (centred as a block)."""
    attrs = f'x="{_c(x)}" y="{_c(y)}"'
    if size != TICK:
        attrs += f' font-size="{_c(size)}"'
    if anchor != "start":
        attrs += f' text-anchor="{anchor}"'
    if colour:
        attrs += f' fill="{colour}"'
    if rotate:
        attrs += f' transform="rotate(-90 {_c(x)} {_c(y)})"'
    lines = str(text).split("\n")
    if len(lines) == 1:
        return f'<text {attrs} dy=".35em">{_escape(text)}</text>'
    first = 0.35 - 0.6 * (len(lines) - 1)
    spans = "".join(
        f'<tspan x="{_c(x)}" dy="{first if i == 0 else 1.2:g}em">{_escape(s)}</tspan>' for i, s in enumerate(lines)
    )
    return f"<text {attrs}>{spans}</text>"


class _Scale:
    """Data values to one pixel axis. ``kind``: ``linear``, ``log`` (base 10) or ``symlog``
    (linear within ±linthresh, log10 beyond; matplotlib's definition with linscale 1)."""

    def __init__(self, kind: str, lo: float, hi: float, a: float, b: float, linthresh: float = 1.0):
        self.kind, self.lo, self.hi, self.a, self.b, self.lt = kind, lo, hi, a, b, linthresh
        self._t0, self._t1 = self._t(lo), self._t(hi)

    def _t(self, v: float) -> float:
        if self.kind == "log":
            return math.log10(v)
        if self.kind == "symlog":
            c, av = 1 / (1 - 0.1), abs(v)
            return math.copysign(av / self.lt * c if av <= self.lt else c + math.log10(av / self.lt), v)
        return v

    def __call__(self, v: float) -> float | None:
        """Pixel of ``v``; None where it cannot be drawn (non-finite, or ≤ 0 on a log axis)."""
        if not math.isfinite(v) or (self.kind == "log" and v <= 0):
            return None
        return self.a + (self._t(v) - self._t0) / (self._t1 - self._t0) * (self.b - self.a)

    def inside(self, v: float) -> bool:
        lo, hi = min(self.lo, self.hi), max(self.lo, self.hi)
        return lo - 1e-9 * (abs(lo) + abs(hi)) <= v <= hi + 1e-9 * (abs(lo) + abs(hi))

    def ticks(self) -> tuple[list[tuple[float, str]], list[float]]:
        """Major ticks as (value, label) and minor tick values, all inside the domain."""
        if self.kind == "log":
            e0, e1 = math.floor(math.log10(self.lo) + 1e-9), math.ceil(math.log10(self.hi) - 1e-9)
            stride = max(1, math.ceil((e1 - e0 + 1) / 12))
            major = [(10.0**e, _pow10(e)) for e in range(e0, e1 + 1) if e % stride == 0]
            minor = [m * 10.0**e for e in range(e0 - 1, e1 + 1) for m in range(2, 10)] if stride == 1 else []
            return ([t for t in major if self.inside(t[0])], [m for m in minor if self.inside(m)])
        if self.kind == "symlog":
            values = [0.0] + [self.lt * 10.0**k for k in range(0, 12)]
            return [(v, f"{v:g}") for v in values if self.inside(v)], []
        step = _nice_step((self.hi - self.lo) / 6)
        decimals = max(0, -math.floor(math.log10(step) + 1e-9))
        k0, k1 = math.ceil(self.lo / step - 1e-9), math.floor(self.hi / step + 1e-9)
        out = []
        for k in range(k0, k1 + 1):
            s = f"{k * step:.{decimals}f}"
            s = s.lstrip("-") if float(s) == 0 else s.replace("-", "−")
            out.append((k * step, s))
        return out, []


def _nice_step(raw: float) -> float:
    if not (math.isfinite(raw) and raw > 0):
        return 1.0
    mag = 10.0 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw * (1 - 1e-9))


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _pow10(e: int) -> str:
    """10^e as a tick label: plain decimals from 0.001 to 1000, 10⁻⁴-style beyond."""
    if -3 <= e <= 3:
        return f"{10.0**e:.{max(0, -e)}f}"
    return "10" + str(e).translate(_SUPERSCRIPT)


def _log_domain(values: Iterable[float], default: tuple[float, float] = (0.1, 10.0)) -> tuple[float, float]:
    """Whole decades around the finite positive values (at least one decade wide)."""
    pos = _finite_positive(values)
    if not pos:
        return default
    # a little room first, so a value at a power of ten (a certified ε of 1) is not on the frame
    lo, hi = math.floor(math.log10(min(pos) / 1.5)), math.ceil(math.log10(max(pos) * 1.5))
    if hi == lo:
        lo, hi = lo - 1, hi + 1
    return 10.0**lo, 10.0**hi


def _linear_domain(values: Iterable[float], margin: float = 0.05) -> tuple[float, float]:
    """The range of the finite values with matplotlib's 5 % margins (±0.5 around a constant)."""
    fin = [v for v in values if math.isfinite(v)]
    if not fin:
        return 0.0, 1.0
    lo, hi = min(fin), max(fin)
    if hi == lo:
        return lo - 0.5, hi + 0.5
    pad = (hi - lo) * margin
    return lo - pad, hi + pad


class _Chart:
    """One chart being drawn: definitions (clip paths, markers), plot areas, other elements."""

    def __init__(self, name: str, title: str):
        self.name, self.title = name, title
        self.defs: list[str] = []
        self.body: list[str] = []
        self.panels: list[_Panel] = []
        self._markers: dict[tuple[str, float], str] = {}

    def id(self, suffix: str) -> str:
        return f"{self.name}-{suffix}"

    def marker(self, colour: str, r: float) -> str:
        """The id of a round marker of radius ``r`` (drawn at every vertex of a polyline)."""
        key = (colour, r)
        if key not in self._markers:
            mid = self.id(f"m{len(self._markers)}")
            self._markers[key] = mid
            self.defs.append(
                f'<marker id="{mid}" markerWidth="{_c(2 * r)}" markerHeight="{_c(2 * r)}" '
                f'refX="{_c(r)}" refY="{_c(r)}" markerUnits="userSpaceOnUse">'
                f'<circle cx="{_c(r)}" cy="{_c(r)}" r="{_c(r)}" fill="{colour}"/></marker>'
            )
        return self._markers[key]

    def panel(self, x: float, y: float, w: float, h: float, xscale: tuple, yscale: tuple) -> _Panel:
        """A plot area at (x, y, w, h); each scale is ``(kind, lo, hi)`` or ``(kind, lo, hi, linthresh)``."""
        p = _Panel(self, len(self.panels), x, y, w, h, xscale, yscale)
        self.panels.append(p)
        return p

    def legend(self, items: Sequence[LegendItem], x: float, y: float, width: float, columns: int) -> float:
        """Legend entries ``(label, style)`` in rows from (x, y), at most ``columns`` a row and
        fewer when the labels are too wide for them; returns the height used."""
        if not items:
            return 0.0
        widest = max(34 + _text_width(label, TICK) for label, _ in items)
        columns = max(1, min(columns, len(items), int(width // widest)))
        col_w = width / columns
        for i, (label, style) in enumerate(items):
            cx, cy = x + (i % columns) * col_w, y + (i // columns) * ROW + ROW / 2
            self.body.append(_swatch(cx, cy, style))
            self.body.append(_label(cx + 30, cy, label))
        return math.ceil(len(items) / columns) * ROW

    def svg(self, height: float) -> str:
        parts = [
            f'<svg class="plot" role="img" aria-labelledby="{self.id("title")}" '
            f'xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {_c(height)}" '
            f'font-family="{_escape(FONT)}" font-size="{_c(TICK)}" fill="{INK}">',
            f'<title id="{self.id("title")}">{_escape(self.title)}</title>',
        ]
        clips = [
            f'<clipPath id="{p.clip}"><rect x="{_c(p.x)}" y="{_c(p.y)}" width="{_c(p.w)}" '
            f'height="{_c(p.h)}"/></clipPath>'
            for p in self.panels
        ]
        if clips or self.defs:
            parts.append("<defs>" + "".join(clips + self.defs) + "</defs>")
        parts.append(f'<rect width="{WIDTH}" height="{_c(height)}" fill="white"/>')
        for p in self.panels:
            parts += p.under
            if p.data:
                parts.append(f'<g clip-path="url(#{p.clip})">' + "".join(p.data) + "</g>")
            parts += p.over
        parts += self.body
        parts.append("</svg>")
        return "".join(parts)


def _swatch(x: float, y: float, style: Mapping[str, Any]) -> str:
    """A legend's sample of a style: a filled box, a marker alone, or a line (with its marker)."""
    colour = style["colour"]
    if style.get("fill"):
        return (
            f'<rect x="{_c(x)}" y="{_c(y - 5)}" width="24" height="10" fill="{colour}" '
            f'fill-opacity="{style.get("fill_opacity", 0.35)}" stroke="{colour}" stroke-width="1.5"/>'
        )
    if style.get("dash") == "none":
        return f'<circle cx="{_c(x + 12)}" cy="{_c(y)}" r="{_c(style.get("marker", 3))}" fill="{colour}"/>'
    out = _line(x, y, x + 24, y, _stroke(colour, style.get("width", 2.0), style.get("dash"), style.get("opacity")))
    if style.get("marker"):
        out += f'<circle cx="{_c(x + 12)}" cy="{_c(y)}" r="{_c(style["marker"])}" fill="{colour}"/>'
    return out


class _Panel:
    """A plot area with its two scales. ``under``: grid and axes; ``data``: drawn in data
    coordinates, clipped to the area; ``over``: unclipped marks and labels."""

    def __init__(self, chart: _Chart, index: int, x: float, y: float, w: float, h: float, xscale: tuple, yscale: tuple):
        self.chart, self.x, self.y, self.w, self.h = chart, x, y, w, h
        self.clip = chart.id(f"clip{index}")
        self.xs = _Scale(xscale[0], xscale[1], xscale[2], x, x + w, *xscale[3:])
        self.ys = _Scale(yscale[0], yscale[1], yscale[2], y + h, y, *yscale[3:])
        self.under: list[str] = []
        self.data: list[str] = []
        self.over: list[str] = []

    # -- axes
    def frame(
        self,
        *,
        xlabel: str | None = None,
        ylabel: str | None = None,
        grid: str = "both",
        xticks: list | None = None,
        yticks: list | None = None,
        xtick_labels: bool = True,
        ytick_labels: bool = True,
    ) -> None:
        """Grid, the left and bottom axes with ticks and tick labels, and the axis labels."""
        x0, y0, x1, y1 = self.x, self.y, self.x + self.w, self.y + self.h
        xt, xminor = self.xs.ticks() if xticks is None else (xticks, [])
        yt, yminor = self.ys.ticks() if yticks is None else (yticks, [])
        grid_attrs, tick_attrs = _stroke(GRID, 0.8), _stroke(INK, 0.8)
        u = self.under
        for v, text in xt:
            px = self.xs(v)
            if px is None:
                continue
            if grid in ("both", "x"):
                u.append(_line(px, y0, px, y1, grid_attrs))
            u.append(_line(px, y1, px, y1 + 4, tick_attrs))
            if xtick_labels:
                u.append(_label(px, y1 + 13, text, anchor="middle"))
        for v in xminor:
            if (px := self.xs(v)) is not None:
                u.append(_line(px, y1, px, y1 + 2.5, tick_attrs))
        label_w = 0.0
        for v, text in yt:
            py = self.ys(v)
            if py is None:
                continue
            if grid in ("both", "y"):
                u.append(_line(x0, py, x1, py, grid_attrs))
            u.append(_line(x0 - 4, py, x0, py, tick_attrs))
            if ytick_labels:
                u.append(_label(x0 - 6, py, text, anchor="end"))
                label_w = max(label_w, _text_width(text, TICK))
        for v in yminor:
            if (py := self.ys(v)) is not None:
                u.append(_line(x0 - 2.5, py, x0, py, tick_attrs))
        u.append(f'<path d="M{_c(x0)} {_c(y0)}V{_c(y1)}H{_c(x1)}" {_stroke(INK, 1.0)}/>')
        for i, line in enumerate((xlabel or "").split("\n") if xlabel else []):
            u.append(
                _label(
                    (x0 + x1) / 2,
                    y1 + (31 if xtick_labels else 14) + 1.25 * LABEL * i,
                    line,
                    size=LABEL,
                    anchor="middle",
                )
            )
        if ylabel:
            # the label's block of lines ends clear of the tick labels (rotated, lines stack rightwards)
            n = ylabel.count("\n") + 1
            u.append(
                _label(
                    x0 - 12 - label_w - 0.5 * LABEL - 0.6 * LABEL * (n - 1),
                    (y0 + y1) / 2,
                    ylabel,
                    size=LABEL,
                    anchor="middle",
                    rotate=True,
                )
            )

    def title(self, text: str, colour: str | None = None, size: float = TITLE) -> None:
        self.over.append(_label(self.x + self.w / 2, self.y - 11, text, size=size, anchor="middle", colour=colour))

    # -- data
    def _point(self, x: Any, y: Any) -> tuple[float, float] | None:
        px, py = self.xs(num(x)), self.ys(num(y))
        return None if px is None or py is None else (px, py)

    def line(
        self,
        xs: Sequence[Any],
        ys: Sequence[Any],
        *,
        colour: str,
        width: float = 2.0,
        dash: str | None = None,
        marker: float = 0.0,
        steps: bool = False,
        opacity: float | None = None,
    ) -> None:
        """A polyline through the points (broken where a point cannot be drawn, as matplotlib
        breaks at NaN); ``steps``: horizontal then vertical between points (steps-post)."""
        segments: list[list[tuple[float, float]]] = [[]]
        for x, y in zip(xs, ys):
            p = self._point(x, y)
            if p is None:
                segments.append([])
                continue
            seg = segments[-1]
            if steps and seg:
                seg.append((p[0], seg[-1][1]))
            seg.append(p)
        attrs = _stroke(colour, width, dash, opacity) + ' stroke-linejoin="round"'
        if marker:
            m = self.chart.marker(colour, marker)
            attrs += f' marker-start="url(#{m})" marker-mid="url(#{m})" marker-end="url(#{m})"'
        for seg in segments:
            if seg:
                pts = " ".join(f"{_c(px)},{_c(py)}" for px, py in seg)
                self.data.append(f'<polyline points="{pts}" {attrs}/>')

    def hline(self, y: float, **style: Any) -> None:
        if (py := self.ys(y)) is not None:
            self.data.append(_line(self.x, py, self.x + self.w, py, _line_attrs(style)))

    def vline(self, x: float, **style: Any) -> None:
        if (px := self.xs(x)) is not None:
            self.data.append(_line(px, self.y, px, self.y + self.h, _line_attrs(style)))

    def dots(self, xs: Sequence[float], ys: Sequence[float], *, colour: str, r: float) -> None:
        for x, y in zip(xs, ys):
            if (p := self._point(x, y)) is not None:
                self.data.append(f'<circle cx="{_c(p[0])}" cy="{_c(p[1])}" r="{_c(r)}" fill="{colour}"/>')

    def barh(self, y: float, left: float, right: float, height: float, colour: str, opacity: float) -> None:
        x0, x1 = self.xs(left), self.xs(right)
        ya, yb = self.ys(y + height / 2), self.ys(y - height / 2)
        if x0 is None or x1 is None or ya is None or yb is None:
            return
        self.data.append(
            f'<rect x="{_c(min(x0, x1))}" y="{_c(min(ya, yb))}" width="{_c(abs(x1 - x0))}" '
            f'height="{_c(abs(yb - ya))}" fill="{colour}" fill-opacity="{opacity}"/>'
        )

    def tick_mark(self, x: float, y: float, length: float, colour: str, width: float) -> None:
        """A vertical mark of ``length`` user units centred on (x, y), not clipped."""
        p = self._point(x, y)
        if p is not None:
            self.over.append(_line(p[0], p[1] - length / 2, p[0], p[1] + length / 2, _stroke(colour, width)))

    def stairs(
        self,
        values: Sequence[float],
        edges: Sequence[float],
        *,
        colour: str,
        width: float,
        fill: bool = False,
        opacity: float = 0.35,
    ) -> None:
        """A step histogram from the baseline 0: each value spans its two edges (matplotlib's
        ``stairs``); ``fill`` shades the area under it."""
        base = self.ys(0.0)
        scaled_xs = [self.xs(e) for e in edges]
        scaled_ys = [self.ys(v if math.isfinite(v) else 0.0) for v in values]
        if base is None or None in scaled_xs or None in scaled_ys:
            return
        # no None left (checked just above)
        xs, ys = cast(list[float], scaled_xs), cast(list[float], scaled_ys)
        d = f"M{_c(xs[0])} {_c(base)}" + "".join(f"V{_c(y)}H{_c(x)}" for y, x in zip(ys, xs[1:])) + f"V{_c(base)}"
        if fill:
            self.data.append(f'<path d="{d}Z" fill="{colour}" fill-opacity="{opacity}"/>')
        self.data.append(f'<path d="{d}" {_stroke(colour, width)} stroke-linejoin="miter"/>')

    def text(self, x: float, y: float, text: str, **kw: Any) -> None:
        """Text at a data position, clipped to the plot area like the data."""
        p = self._point(x, y)
        if p is not None:
            self.data.append(_label(p[0], p[1], text, **kw))


def _line_attrs(style: Mapping[str, Any]) -> str:
    return _stroke(style["colour"], style.get("width", 1.2), style.get("dash"), style.get("opacity"))


def _empty(name: str, title: str, message: str) -> str:
    chart = _Chart(name, title)
    chart.body.append(_label(WIDTH / 2, 36, message, size=LABEL, anchor="middle", colour=GREY))
    return chart.svg(72)


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
