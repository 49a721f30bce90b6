"""The SVG drawing kit of the report's charts (:mod:`audit.report.plots` draws the charts with it).

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
