"""The audit report as one self-contained HTML page.

``render_html(report)`` turns a ``report.json`` document (the dict of
:meth:`audit.report.AuditReport.to_dict`, or the AuditReport itself) into a single HTML file:

* rendered from the Jinja2 template ``templates/report.html.j2`` (package data, loaded through
  importlib.resources so it works from an installed wheel), with autoescaping on;
* CSS inline, charts as inline SVG from :mod:`audit.report.plots`; nothing is loaded from
  anywhere, and a Content-Security-Policy forbids every fetch and every script anyway;
* no JavaScript; the report itself is embedded as a non-executed
  ``<script type="application/json" id="report-data">`` block, so the page carries its data;
* deterministic: the same report gives the same bytes (nothing is time-stamped at render time,
  the charts are byte-reproducible, the JSON is key-sorted). The page can therefore be hashed and
  signed next to ``report.json``.
"""

from __future__ import annotations

import json
import math
import os
import shlex
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import (
    BaseLoader,
    ChainableUndefined,
    Environment,
    TemplateNotFound,
    Undefined,
)
from markupsafe import Markup

from audit.report import encode_nonfinite, plots, write_atomic

#: No fetch of any kind (default-src 'none' covers connect, font, frame, media, object, script,
#: worker, manifest...); inline styles are the only thing allowed to apply. ``img-src data:``
#: permits nothing from the network (data: URIs are in the document already).
CSP = ("default-src 'none'; script-src 'none'; style-src 'unsafe-inline'; img-src data:; "
       "font-src 'none'; connect-src 'none'; media-src 'none'; object-src 'none'; "
       "frame-src 'none'; worker-src 'none'; manifest-src 'none'; base-uri 'none'; "
       "form-action 'none'")

VERDICTS = {
    "consistent": ("CONSISTENT", "No measurement contradicts the certificate: the certified ε is at "
                   "least the realized ε, and no attack proves a larger ε."),
    "violated": ("VIOLATED", "The certificate is contradicted: a measurement below exceeds what the "
                 "certificate allows. Treat the unlearning as not certified."),
    "not-certified": ("NOT CERTIFIED", "No certificate was issued: a condition of the theorem failed, "
                      "so no ε guarantee applies to this unlearning."),
}

#: ``audit run`` flags in the order the CLI declares them; constants become --L / --G
FLAG_ORDER = (
    "method", "epsilon", "delta", "mechanism", "dataset", "model", "hidden", "pca_components",
    "feature_map", "forget_count", "forget_fraction", "forget_class", "forget_groups", "group_column",
    "label_column", "requests", "budget_epsilon", "steps", "eta", "horizon", "rewind", "rewind_fraction", "sigma_budget", "seed",
    "device", "dtype", "max_train", "noise_draws", "curve_points", "constants", "attacks", "trials",
    "trial_mode", "shadow_models", "confidence", "relearn_max_steps",
)


# ----------------------------------------------------------------------------------------
class _PackageLoader(BaseLoader):
    """Templates from ``audit/report/templates`` via importlib.resources (wheel, zip or tree)."""

    def get_source(self, environment, template):
        ref = resources.files("audit.report").joinpath("templates", *template.split("/"))
        try:
            source = ref.read_text(encoding="utf-8")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise TemplateNotFound(template) from None
        return source, None, lambda: True


@lru_cache(maxsize=1)
def _environment() -> Environment:
    env = Environment(loader=_PackageLoader(), autoescape=True, undefined=ChainableUndefined,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["fmt"] = fmt
    env.filters["pct"] = pct
    env.filters["kv"] = kv
    return env


# ----------------------------------------------------------------------------------------
# formatting


def fmt(v: Any, digits: int = 4) -> str:
    """A report value for people: non-finite strings as symbols, floats to ``digits`` figures."""
    if v is None or isinstance(v, Undefined):  # absent from this report (older or partial schema)
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, str):
        return {"inf": "∞", "-inf": "−∞", "nan": "NaN"}.get(v, v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "∞" if v > 0 else "−∞"
        if v == 0:
            return "0"
        if v.is_integer() and abs(v) < 1e15:
            return str(int(v))
        return f"{v:.{digits}g}".replace("e-0", "e-").replace("e+0", "e+").replace("e+", "e")
    if isinstance(v, (list, tuple)):
        return ", ".join(fmt(x, digits) for x in v)
    if isinstance(v, Mapping):
        return kv(v, digits)
    return str(v)


def pct(v: Any) -> str:
    x = plots.num(v)
    return "—" if not math.isfinite(x) else f"{100 * x:.2f}%"


def kv(d: Any, digits: int = 4) -> str:
    if not isinstance(d, Mapping):
        return fmt(d, digits)
    if not d:
        return "none"
    return "; ".join(f"{k} = {fmt(v, digits)}" for k, v in sorted(d.items()))


def _flag_value(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)  # round-trips exactly
    if key == "hidden":
        return ",".join(str(int(h)) for h in value)
    if key == "attacks":
        return ",".join(value) if value else "none"
    return str(value)


def command_line(config: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> str:
    """The ``audit run`` command that repeats an audit, from the report's ``config``.

    With ``defaults`` the flags whose value equals the default are left out (``--seed`` always
    stays). Unknown keys (from a newer schema) are appended in sorted order.
    """
    parts = ["audit", "run"]
    keys = [k for k in FLAG_ORDER if k in config] + sorted(k for k in config if k not in FLAG_ORDER)
    for key in keys:
        value = config[key]
        if value is None:
            continue
        if defaults is not None and key != "seed" and key in defaults and _same(defaults[key], value):
            continue
        if key == "constants":
            for name in sorted(value or {}):
                parts += [f"--{name}", _flag_value(name, value[name])]
            continue
        if key in ("method_options", "feature_map"):
            flag = "--option" if key == "method_options" else "--feature"
            for name in sorted(value or {}):
                parts += [flag, shlex.quote(f"{name}={json.dumps(value[name])}")]
            continue
        parts += [f"--{key.replace('_', '-')}", shlex.quote(_flag_value(key, value))]
    return " ".join(parts)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return list(a) == list(b)
    return a == b


def _config_defaults() -> dict[str, Any] | None:
    """Defaults of this version's AuditConfig fields (None when audit.config cannot load)."""
    try:
        from dataclasses import MISSING, fields

        from audit.config import AuditConfig
    except Exception:  # pragma: no cover - the package always ships it
        return None
    out: dict[str, Any] = {}
    for f in fields(AuditConfig):
        if f.default is not MISSING:
            out[f.name] = f.default
        elif f.default_factory is not MISSING:  # type: ignore[misc]
            out[f.name] = f.default_factory()  # type: ignore[misc]
    return out


def _hashes(obj: Any, path: str = "", hashed: bool = False) -> list[tuple[str, str]]:
    """Every hash-like string in a report section, as (dotted path, value), sorted by path.

    A value counts when it is a hex string of at least 32 digits under a key that names a hash
    (``*sha256*``, ``*hash*``, ``commitment``), or anywhere inside such a key's mapping.
    """
    out: list[tuple[str, str]] = []
    if isinstance(obj, Mapping):
        for k in sorted(obj, key=str):
            p = f"{path}.{k}" if path else str(k)
            named = hashed or any(t in str(k).lower() for t in ("sha256", "hash", "commitment"))
            v = obj[k]
            if isinstance(v, str):
                if named and len(v) >= 32 and all(c in "0123456789abcdef" for c in v.lower()):
                    out.append((p, v))
            elif isinstance(v, (Mapping, list)):
                out.extend(_hashes(v, p, named))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.extend(_hashes(v, f"{path}[{i}]", hashed))
    return out


def _verdict(report: Mapping[str, Any]) -> str:
    v = report.get("verdict")
    if v:
        return str(v)
    codes = {f.get("code") for f in report.get("findings") or [] if f.get("severity") == "error"}
    if codes & {"bound-violated", "realized-exceeds-certified", "certificate-violated"}:
        return "violated"
    if "certificate-not-issued" in codes:
        return "not-certified"
    return "consistent"


def _embedded_json(report: Mapping[str, Any]) -> Markup:
    """The report as JSON that cannot end its <script> element or open a comment early."""
    text = json.dumps(report, sort_keys=True, allow_nan=False, ensure_ascii=True, indent=None,
                      separators=(",", ":"))
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text)  # safe: escaped above (and ensure_ascii escapes U+2028/U+2029)


# ----------------------------------------------------------------------------------------
def _context(report: Mapping[str, Any]) -> dict[str, Any]:
    def g(d: Any, *keys: str, default: Any = None) -> Any:
        return _get(d, keys, default)

    cert = report.get("certificate") or {}
    realized = report.get("realized") or {}
    attacks = report.get("attacks") or None
    comparison = (attacks or {}).get("comparison") or {}
    attack_results = (attacks or {}).get("attacks") or {}
    utility = report.get("utility") or {}
    config = report.get("config") or {}
    method = report.get("method") or {}
    verdict = _verdict(report)
    label, sentence = VERDICTS.get(verdict, (verdict.upper(), "Unrecognised verdict."))

    confidence = g(attacks, "trials", "confidence")
    charts = {
        "epsilon": plots.epsilon_chart(
            cert.get("epsilon"), realized.get("epsilon"),
            comparison.get("empirical_epsilon_lower") if attacks else None,
            {k: g(v, "bound", "ceiling") for k, v in attack_results.items()},
            comparison.get("best_attack"), confidence),
        "roc": plots.roc_chart({k: g(v, "bound", "roc") for k, v in attack_results.items()
                                if g(v, "bound", "roc")}),
        "losses": plots.loss_histogram_chart(utility.get("loss_histograms")),
        "relearn": plots.relearn_chart(attack_results.get("relearn")),
        "tradeoff": plots.tradeoff_chart(report.get("tradeoff") or [],
                                         g(method, "hyperparameters", "rewind"), cert.get("epsilon")),
    }
    # safe: our own matplotlib output; report strings reach a chart only as tick/legend text,
    # which svg.fonttype = "path" turns into glyph outlines, never into markup
    charts = {k: Markup(v) for k, v in charts.items()}

    attack_rows = []
    for name in sorted(attack_results):
        r = attack_results[name] or {}
        b = r.get("bound") or {}
        roc = b.get("roc") or {}
        gdp = b.get("gdp_estimate") or {}
        attack_rows.append({
            "name": name, "description": r.get("description"), "epsilon_lower": b.get("epsilon_lower"),
            "ceiling": b.get("ceiling"), "confidence": b.get("confidence"), "delta": b.get("delta"),
            "method": b.get("method"), "direction": b.get("direction"), "counts": b.get("counts"),
            "threshold": b.get("threshold"), "n_trials": b.get("n_trials"),
            "n_evaluated": b.get("n_evaluated"),
            "auroc": roc.get("auroc"), "tpr1": roc.get("tpr_at_1pct_fpr"), "tpr01": roc.get("tpr_at_0_1pct_fpr"),
            "gdp_epsilon": gdp.get("epsilon_estimate"), "gdp_mu": gdp.get("mu"), "gdp_note": gdp.get("note"),
            "gdp_method": gdp.get("method"),
            "exceeds": plots.num(b.get("epsilon_lower")) > plots.num(cert.get("epsilon")) * (1 + 1e-9),
            "best": name == comparison.get("best_attack"),
        })

    population = []
    for model, entry in sorted(((g(attack_results, "mia", "population_auroc") or {}).items()),
                               key=lambda kv_: _MODEL_ORDER.get(kv_[0], 9)):
        for kind in ("noiseless", "released"):
            p = (entry or {}).get(kind)
            if p:
                population.append({"model": model, "kind": kind, **p})

    models = [m for m in ("original", "unlearned", "retrained") if isinstance(utility.get(m), Mapping)]
    splits: list[str] = []
    for m in models:
        for s in utility[m]:
            if isinstance(utility[m][s], Mapping) and s not in splits:
                splits.append(s)
    splits.sort(key=lambda s: _SPLIT_ORDER.get(s, 9))

    tradeoff = sorted(report.get("tradeoff") or [], key=lambda r: plots.num(r.get("rewind")))
    defaults = _config_defaults()
    full = command_line(config)
    short = command_line(config, defaults) if defaults is not None else None
    env = report.get("environment") or {}
    findings = report.get("findings") or []
    severity_rank = {"error": 0, "warning": 1, "info": 2}
    findings = sorted(findings, key=lambda f: severity_rank.get(f.get("severity"), 3))

    return {
        "r": report, "verdict": verdict, "verdict_label": label, "verdict_sentence": sentence,
        "cert": cert, "realized": realized, "attacks": attacks, "comparison": comparison,
        "attack_rows": attack_rows, "population": population, "utility": utility,
        "models": models, "splits": splits, "tradeoff": tradeoff, "config": config,
        "method": method, "dataset": report.get("dataset") or {}, "seeds": report.get("seeds") or {},
        "environment": env, "packages": env.get("packages") or {},
        "tool": report.get("tool") or {}, "timings": report.get("timings") or {},
        "parameters": report.get("parameters") or {},
        "deletion": report.get("deletion_request") or {},
        "checkpoint": report.get("checkpoint_recovery"),
        "findings": findings, "errors": [f for f in findings if f.get("severity") == "error"],
        "hashes": (_hashes({"dataset": report.get("dataset") or {}})
                   + _hashes({"parameters": report.get("parameters") or {}})
                   + _hashes({"deletion_request": report.get("deletion_request") or {}})),
        "command": full, "command_short": short if short != full else None,
        "charts": charts,
        "csp": Markup(CSP),  # a constant, so its quotes stay literal
        "report_json": _embedded_json(report),
        "confidence": confidence, "trials": (attacks or {}).get("trials") or {},
        "relearn": attack_results.get("relearn"),
        "histograms": utility.get("loss_histograms"),
        "ledger": report.get("ledger"),
    }


_MODEL_ORDER = {"original": 0, "unlearned": 1, "retrained": 2}
_SPLIT_ORDER = {"forget": 0, "retain": 1, "test": 2, "unseen": 3}


def _get(d: Any, keys: tuple, default: Any = None) -> Any:
    for k in keys:
        if not isinstance(d, Mapping) or k not in d:
            return default
        d = d[k]
    return d


def render_html(report: Mapping[str, Any] | Any) -> str:
    """The report as one self-contained HTML document (str). Same report, same bytes."""
    if hasattr(report, "to_dict"):
        report = report.to_dict()
    report = encode_nonfinite(dict(report))
    return _environment().get_template("report.html.j2").render(**_context(report))


def write_html(report: Mapping[str, Any] | Any, path: str | os.PathLike) -> Path:
    """Render ``report`` and write it to ``path`` atomically (temp file + rename)."""
    return write_atomic(Path(path), render_html(report))
