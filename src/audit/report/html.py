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
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, TypeGuard

from jinja2 import (
    BaseLoader,
    ChainableUndefined,
    Environment,
    TemplateNotFound,
    Undefined,
)
from markupsafe import Markup

from audit.findings import BOUND_WORDS, cannot_catch_no_op, cannot_test, headline, one_run_blind, tested_by_gdp
from audit.report import SALT_FILE, plots, write_atomic
from audit.report.encoding import json_safe

#: No fetch of any kind (default-src 'none' covers connect, font, frame, media, object, script,
#: worker, manifest...); inline styles are the only thing allowed to apply. ``img-src data:``
#: permits nothing from the network (data: URIs are in the document already).
CSP = (
    "default-src 'none'; script-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "font-src 'none'; connect-src 'none'; media-src 'none'; object-src 'none'; "
    "frame-src 'none'; worker-src 'none'; manifest-src 'none'; base-uri 'none'; "
    "form-action 'none'"
)

VERDICTS = {
    "consistent": (
        "CONSISTENT",
        "No measurement contradicts the certificate: the certified ε is at "
        "least the realized ε, and no attack proves a larger ε.",
    ),
    "violated": (
        "VIOLATED",
        "The certificate is contradicted: a measurement below exceeds what the "
        "certificate allows. Treat the unlearning as not certified.",
    ),
    "not-certified": (
        "NOT CERTIFIED",
        "No certificate was issued: a condition of the theorem failed, so no ε guarantee applies to this unlearning.",
    ),
    "unusable": (
        "UNUSABLE",
        "The unlearned model failed: it departs from the retrained model, or it is "
        "no better than chance. Whatever the certificate says, do not ship it.",
    ),
}
#: the sentence of a ``consistent`` banner that names findings: [qualified, vacuous]
QUALIFIED = (
    "No measurement contradicts the certificate, but the findings named above qualify this pass: read "
    "them before relying on it.",
    "No measurement contradicts the certificate, but this pass proves little: a finding named above says "
    "the measurements could not have refuted it, or that the release is of no use. Do not file it as "
    "evidence that the unlearning worked.",
)
#: The commands the request box prints: open the deletion commitment (the ids stay with the
#: operator, the salt file is the one ``audit run --out`` writes), and check the signature with the
#: signer's public key (obtained from the signer, never from the report directory).
COMMITMENT_COMMAND = "audit commitment verify report.json --salt {salt} --ids IDS.txt"
VERIFY_COMMAND = "audit verify DIR --key PUBLIC.pem"

#: How the page came to be, for its signature line: written with the report (signed with a key or
#: not), or re-rendered later from report.json by ``audit report`` (never covered by a signature).
PAGE_ORIGINS = ("written", "rerendered")

#: the banner of a method without a theorem (certificate kind ``none``)
NO_THEOREM = (
    "NO CERTIFICATE",
    "No certificate (the method has no theorem): nothing is certified, and the measurements below are all there is.",
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
def templates() -> Environment:
    """The page templates (report and comparison) with the formatting filters, autoescaping on."""
    env = Environment(
        loader=_PackageLoader(),
        autoescape=True,
        undefined=ChainableUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["fmt"] = fmt
    env.filters["pct"] = pct
    env.filters["kv"] = kv
    env.filters["options"] = options
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


def _per_record(details: Mapping[str, Any]) -> dict | None:
    """An attack's ranking of the forgotten records (``details.per_record``), if it kept one."""
    ranking = details.get("per_record")
    if not isinstance(ranking, Mapping) or not isinstance(ranking.get("top"), list):
        return None
    return {
        "rows": [r for r in ranking["top"][:10] if isinstance(r, Mapping)],
        "records": ranking.get("records"),
        "level": (ranking.get("epsilon") or {}).get("confidence_per_record"),
    }


def kv(d: Any, digits: int = 4) -> str:
    if not isinstance(d, Mapping):
        return fmt(d, digits)
    if not d:
        return "none"
    return "; ".join(f"{k} = {fmt(v, digits)}" for k, v in sorted(d.items()))


def options(d: Any) -> str:
    """A method's options for people: those that do not apply to this run (null, an empty mapping or
    list) are left out rather than shown as "—"."""
    if isinstance(d, Mapping):
        d = {k: v for k, v in d.items() if v is not None and v != {} and v != []}
    return kv(d)


def command_line(config: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> str:
    """The ``audit run`` command that repeats an audit (derived from :data:`audit.config.FIELDS`)."""
    from audit.config import command_line as derived

    return derived(config, defaults)


def _config_defaults() -> dict[str, Any] | None:
    """This version's default configuration (None when it cannot be built)."""
    try:
        from audit.config import defaults
    except Exception:  # pragma: no cover - the package always ships it
        return None
    return defaults()


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
    from audit.findings import verdict_of

    return str(report.get("verdict") or verdict_of(report.get("findings") or []))


def embedded_json(report: Mapping[str, Any]) -> Markup:
    """The report as JSON that cannot end its <script> element or open a comment early."""
    text = json.dumps(report, sort_keys=True, allow_nan=False, ensure_ascii=True, indent=None, separators=(",", ":"))
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text)  # safe: escaped above (and ensure_ascii escapes U+2028/U+2029)


# ----------------------------------------------------------------------------------------
# the request box: what was deleted, from what, and whether the page is signed


def _request(report: Mapping[str, Any], salt: str = SALT_FILE) -> dict[str, Any]:
    """The deletion request as the box shows it (the report's ``deletion_request``); ``salt``: the
    salt file's path from the page's directory."""
    block = report.get("deletion_request") or {}
    return {
        "id": block.get("request_id"),
        "n_records": block.get("n_records"),
        "identifier": block.get("identifier"),
        "commitment": block.get("commitment"),
        "id_column": (report.get("config") or {}).get("id_column"),
        "command": COMMITMENT_COMMAND.format(salt=salt),
    }


def _model(report: Mapping[str, Any]) -> dict[str, Any]:
    """The audited model's name, size and origin; ``demonstration`` when it is this toolkit's
    built-in model rather than the caller's."""
    model = report.get("model") or {}
    origin = model.get("origin")
    name = (report.get("config") or {}).get("model") if origin != "caller" else model.get("module_class")
    return {
        "name": name or model.get("module_class"),
        "parameters": model.get("parameters"),
        "origin": origin,
        "source": model.get("source"),
        "module_class": model.get("module_class"),
        "demonstration": origin == "built-in",
    }


def _signature(signed_by: str | None, page: str, envelope_beside: bool) -> dict[str, Any]:
    """What the page may say of its signature: the key it was signed with when it was written
    (the page is rendered before the signature exists, so it names the key and never claims a
    verification), unsigned, or re-rendered (no signature covers a re-rendered page)."""
    if page not in PAGE_ORIGINS:
        raise ValueError(f"page must be one of {PAGE_ORIGINS}, not {page!r}")
    if page == "rerendered":
        return {"state": "rerendered", "envelope_beside": envelope_beside, "command": VERIFY_COMMAND}
    return {"state": "signed" if signed_by else "unsigned", "keyid": signed_by, "command": VERIFY_COMMAND}


# ----------------------------------------------------------------------------------------
def _context(report: Mapping[str, Any]) -> dict[str, Any]:
    cert = report.get("certificate") or {}
    realized = report.get("realized") or {}
    attacks = report.get("attacks") or None
    comparison = (attacks or {}).get("comparison") or {}
    attack_results = (attacks or {}).get("attacks") or {}
    utility = report.get("utility") or {}
    config = report.get("config") or {}
    method = report.get("method") or {}
    verdict, label, sentence, top, no_theorem = _banner(report, cert)
    certified = cert.get("epsilon") if cert.get("valid") and not no_theorem else None

    confidence = _get(attacks, ("trials", "confidence"))
    relearn = _relearn(attack_results)
    tradeoff = report.get("tradeoff")
    fdp = _fdp(cert, attack_results, comparison.get("best_attack"))
    charts = _charts(report, certified, confidence, relearn, fdp)
    attack_rows = _attack_rows(attack_results, comparison.get("best_attack"), certified)
    population = _population(attack_results)
    models, splits = _utility_layout(utility)

    defaults = _config_defaults()
    full = command_line(config)
    short = command_line(config, defaults) if defaults is not None else None
    env = report.get("environment") or {}
    findings = report.get("findings") or []
    severity_rank = {"error": 0, "warning": 1, "info": 2}
    findings = sorted(findings, key=lambda f: severity_rank.get(f.get("severity"), 3))

    return {
        "r": report,
        "verdict": verdict,
        "verdict_label": label,
        "verdict_sentence": sentence,
        "headline": top,
        "cert": cert,
        "realized": realized,
        "attacks": attacks,
        "comparison": comparison,
        "attack_rows": attack_rows,
        "population": population,
        "utility": utility,
        "models": models,
        "splits": splits,
        "config": config,
        "frontier": report.get("frontier"),
        "tradeoff": tradeoff,
        "tradeoff_rows": sorted((tradeoff or {}).get("rows") or [], key=lambda r: plots.num(r.get("value"))),
        "knob": (tradeoff or {}).get("knob") or {},
        "no_theorem": no_theorem,
        "certified": certified,
        "method": method,
        "dataset": report.get("dataset") or {},
        "seeds": report.get("seeds") or {},
        "model": report.get("model") or {},
        "environment": env,
        "packages": _packages(report, env),
        "tool": report.get("tool") or {},
        "timings": report.get("timings") or {},
        "parameters": report.get("parameters") or {},
        "deletion": report.get("deletion_request") or {},
        "request": _request(report),
        "model_box": _model(report),
        "checkpoint": report.get("checkpoint_recovery"),
        "findings": findings,
        "errors": [f for f in findings if f.get("severity") == "error"],
        "hashes": _report_hashes(report),
        "command": full,
        "command_short": short if short != full else None,
        "charts": charts,
        "csp": Markup(CSP),  # a constant, so its quotes stay literal
        "report_json": embedded_json(report),
        "confidence": confidence,
        "trials": (attacks or {}).get("trials") or {},
        "control": (attacks or {}).get("positive_control"),
        **_one_run_context(report, comparison),
        "relearn": relearn,
        "histograms": utility.get("loss_histograms"),
        "ledger": report.get("ledger"),
        "fdp": fdp,
        "competition": _competition(attack_results),
    }


# ----------------------------------------------------------------------------------------
# the parts of the page's context, one helper each so that _context stays a readable list


def _banner(report: Mapping[str, Any], cert: Mapping[str, Any]) -> tuple[str, str, str, Any, bool]:
    """The verdict, its banner label and sentence, the headline finding, and whether the method
    has no theorem (certificate kind ``none``)."""
    verdict = _verdict(report)
    label, sentence = VERDICTS.get(verdict, (verdict.upper(), "Unrecognised verdict."))
    no_theorem = cert.get("kind") == "none"
    if no_theorem:
        label, sentence = NO_THEOREM
    top = headline(verdict, report.get("findings") or [])
    if top.caution:  # the sentence must not read as a clean pass when the banner names a warning
        sentence = QUALIFIED[bool(top.vacuous)]
    return verdict, label, sentence, top, no_theorem


def _relearn(attack_results: Mapping[str, Any]) -> Any:
    """The details of the first attack that kept a relearning curve of the unlearned model."""
    return next(
        (
            r.get("details")
            for r in attack_results.values()
            if isinstance(_get(r, ("details", "unlearned")), Mapping)
            and _get(r, ("details", "unlearned", "curve_forget_loss"))
        ),
        None,
    )


def _charts(
    report: Mapping[str, Any], certified: Any, confidence: Any, relearn: Any, fdp: Mapping[str, Any]
) -> dict[str, Markup]:
    """The page's charts as inline SVG (the frontier only when the report has one)."""
    realized = report.get("realized") or {}
    attacks = report.get("attacks") or None
    comparison = (attacks or {}).get("comparison") or {}
    attack_results = (attacks or {}).get("attacks") or {}
    utility = report.get("utility") or {}
    charts = {
        "epsilon": plots.epsilon_chart(
            certified,
            realized.get("epsilon"),
            comparison.get("empirical_epsilon_lower") if attacks else None,
            {k: _get(v, ("bound", "ceiling")) for k, v in attack_results.items()},
            comparison.get("best_attack"),
            confidence,
        ),
        "roc": plots.roc_chart(
            {k: _get(v, ("bound", "roc")) for k, v in attack_results.items() if _get(v, ("bound", "roc"))}
        ),
        "losses": plots.loss_histogram_chart(utility.get("loss_histograms")),
        "relearn": plots.relearn_chart(relearn),
        "tradeoff": plots.tradeoff_chart(report.get("tradeoff"), certified),
        "fdp": plots.fdp_chart(fdp["roc"], fdp["direction"], fdp["attack"], fdp["mu"], fdp["chart_reason"]),
    }
    frontier = report.get("frontier")
    if frontier and frontier.get("applicable"):  # drawn only when the report has one (a seventh chart)
        charts["frontier"] = plots.frontier_chart(
            {(report.get("method") or {}).get("name") or "this method": frontier},
            epsilon=(report.get("config") or {}).get("epsilon"),
            retrained=_get(utility, ("retrained", "test", "accuracy")),
            chance=utility.get("test_chance_accuracy"),
        )
    # safe: SVG written by audit.report.plots, which escapes every string from the report
    # (tick, legend and title text) before it reaches the markup
    return {k: Markup(v) for k, v in charts.items()}


def _attack_rows(attack_results: Mapping[str, Any], best_attack: Any, certified: Any) -> list[dict[str, Any]]:
    """One row per attack, by name: its bound, ROC and GDP figures, and whether it exceeds the
    certified epsilon."""
    attack_rows = []
    for name in sorted(attack_results):
        r = attack_results[name] or {}
        b = r.get("bound") or {}
        roc = b.get("roc") or {}
        gdp = b.get("gdp_estimate") or {}
        attack_rows.append(
            {
                "name": name,
                "title": r.get("title"),
                "description": r.get("description"),
                "details": _row_details(r.get("details") or {}),
                "epsilon_lower": b.get("epsilon_lower"),
                "ceiling": b.get("ceiling"),
                "can_test": b.get("can_test"),
                "size_to_test": b.get("size_to_test"),
                "confidence": b.get("confidence"),
                "delta": b.get("delta"),
                "method": b.get("method"),
                "direction": b.get("direction"),
                "counts": b.get("counts"),
                "threshold": b.get("threshold"),
                "n_trials": b.get("n_trials"),
                "n_evaluated": b.get("n_evaluated"),
                "auroc": roc.get("auroc"),
                "tpr1": roc.get("tpr_at_1pct_fpr"),
                "tpr01": roc.get("tpr_at_0_1pct_fpr"),
                "gdp_epsilon": gdp.get("epsilon_estimate"),
                "gdp_mu": gdp.get("mu"),
                "gdp_note": gdp.get("note"),
                "gdp_method": gdp.get("method"),
                "gof": gdp.get("gof"),
                "gof_p": gdp.get("gof_p_value"),
                "gdp_lower": gdp.get("epsilon_lower"),
                "gdp_bound": b.get("gdp_bound"),
                "resolution_note": _resolution_note(b, certified),
                "per_record": _per_record(r.get("details") or {}),
                "estimates": r.get("estimates"),
                "exceeds": certified is not None
                and max(
                    plots.num(b.get("epsilon_lower")), plots.num((b.get("gdp_bound") or {}).get("epsilon_lower", 0))
                )
                > plots.num(certified) * (1 + 1e-9),
                "best": name == best_attack,
            }
        )
    return attack_rows


def _resolution_note(b: Mapping[str, Any], certified: Any) -> str | None:
    """What decided the attack's test-ability (:func:`audit.sizing.attack_resolution`) where the row
    must say it: below resolution, the size that could and by which bound; tested by the GDP bound alone."""
    gdp = b.get("gdp_bound") or {}
    valid = gdp.get("kind") == "bound"
    by = f" with {BOUND_WORDS[b.get('test_bound') or 'clopper-pearson']}" if valid else ""
    if b.get("can_test") is False:
        size = b.get("size_to_test")
        could = f"{size:,} trials per world could{by}" if size is not None else "no trial count could"
        return f"{'with either bound; ' if valid else ''}{could}"
    if b.get("can_test") is True and b.get("test_bound") == "gdp-bound" and valid:
        return tested_by_gdp(plots.num(b.get("ceiling")), plots.num(gdp.get("ceiling")), certified)
    return None


def _population(attack_results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The population AUROC rows (model, noiseless or released) of the first attack that kept them."""
    population = []
    populations = (
        next(
            (
                _get(r, ("details", "population_auroc"))
                for r in attack_results.values()
                if isinstance(_get(r, ("details", "population_auroc")), Mapping)
            ),
            None,
        )
        or {}
    )
    for model, entry in sorted(populations.items(), key=lambda kv_: _MODEL_ORDER.get(kv_[0], 9)):
        for kind in ("noiseless", "released"):
            p = (entry or {}).get(kind)
            if p:
                population.append({"model": model, "kind": kind, **p})
    return population


def _utility_layout(utility: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The utility table's models (columns) and splits (rows), in the page's order."""
    models = [m for m in ("original", "unlearned", "retrained") if isinstance(utility.get(m), Mapping)]
    splits: list[str] = []
    for m in models:
        for s in utility[m]:
            if isinstance(utility[m][s], Mapping) and s not in splits:
                splits.append(s)
    splits.sort(key=lambda s: _SPLIT_ORDER.get(s, 9))
    return models, splits


def _packages(report: Mapping[str, Any], env: Mapping[str, Any]) -> dict[str, Any]:
    """The environment's packages less the tool itself: the tool's version is the report's tool
    block; earlier reports also list the tool among the packages (from the installed metadata,
    which may lag the code), so it is shown once."""
    return {k: v for k, v in (env.get("packages") or {}).items() if k != (report.get("tool") or {}).get("name")}


def _report_hashes(report: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The hashes of the dataset, model, parameters and deletion request, in that order."""
    return (
        _hashes({"dataset": report.get("dataset") or {}})
        + _hashes({"model": report.get("model") or {}})
        + _hashes({"parameters": report.get("parameters") or {}})
        + _hashes({"deletion_request": report.get("deletion_request") or {}})
    )


def _one_run_context(report: Mapping[str, Any], comparison: Mapping[str, Any]) -> dict[str, Any]:
    """The one-run audits and what a bound below its own resolution cannot test (audit.sizing):
    the words of the finding."""
    return {
        "one_run": report.get("one_run"),
        "one_run_whitebox": report.get("one_run_whitebox"),
        "cannot_test": cannot_test(comparison.get("certified_epsilon")),
        "one_run_cannot_test": cannot_test((report.get("one_run") or {}).get("certified_epsilon")),
        "one_run_blind": one_run_blind(report.get("one_run") or {}),
        "one_run_cannot_catch": cannot_catch_no_op((report.get("one_run") or {}).get("m") or 0),
    }


_MODEL_ORDER = {"original": 0, "unlearned": 1, "retrained": 2}
_SPLIT_ORDER = {"forget": 0, "retain": 1, "test": 2, "unseen": 3}


def _get(d: Any, keys: tuple, default: Any = None) -> Any:
    for k in keys:
        if not isinstance(d, Mapping) or k not in d:
            return default
        d = d[k]
    return d


# ----------------------------------------------------------------------------------------
# the trade-off (f-DP) curve and the competition measurement

#: α of the rows of the trade-off table (the chart's text alternative).
FDP_ALPHAS = (0.001, 0.01, 0.05, 0.1, 0.25, 0.5)

_SIGMA_ZERO: dict[str | None, tuple[str, str]] = {  # keyed by certificate kind (None: absent)
    "exact": (
        "no Gaussian curve: σ = 0 (exact)",
        "No Gaussian curve: σ = 0. The release is the retrained model itself (an exact certificate), so "
        "the certificate promises identical worlds (every test on the diagonal), not a Gaussian curve.",
    ),
    "training-noise": (
        "no Gaussian curve: σ = 0 (training noise)",
        "No Gaussian curve: σ = 0. The privacy comes from noise inside training (a training-noise "
        "certificate), not from Gaussian noise on the released parameters, so the certificate "
        "promises no Gaussian trade-off curve for them.",
    ),
}


def _promised_mu(cert: Mapping[str, Any]) -> tuple[float | None, str | None, str | None]:
    """(μ, None, None) when the certificate promises μ-GDP (Gaussian noise σ on a sensitivity Δ:
    μ = Δ/σ), else (None, the chart's short reason, the page's sentence)."""
    if not cert:
        return None, "no certificate in this report", "No certificate in this report, so no Gaussian curve is promised."
    if cert.get("kind") == "none":
        return (
            None,
            "no Gaussian curve: no theorem",
            "No Gaussian curve: the method has no theorem, so the certificate promises nothing.",
        )
    if not cert.get("valid"):
        return (
            None,
            "no Gaussian curve: no certificate issued",
            "No Gaussian curve: no certificate was issued (a condition of the theorem failed), so nothing is promised.",
        )
    sigma, sensitivity = plots.num(cert.get("sigma")), plots.num(cert.get("sensitivity"))
    if sigma == 0:
        return (
            None,
            *_SIGMA_ZERO.get(
                cert.get("kind"),
                (
                    "no Gaussian curve: σ = 0",
                    "No Gaussian curve: σ = 0, no noise on the released parameters, so the certificate promises no "
                    "Gaussian trade-off curve.",
                ),
            ),
        )
    if not (math.isfinite(sigma) and sigma > 0):
        return (
            None,
            "no Gaussian curve: σ not finite",
            f"No Gaussian curve: σ = {fmt(cert.get('sigma'))}, so no finite Gaussian curve is promised.",
        )
    if not (math.isfinite(sensitivity) and sensitivity >= 0):
        return (
            None,
            "no Gaussian curve: no sensitivity Δ",
            "No Gaussian curve: the certificate states no finite sensitivity Δ, so μ = Δ/σ is undefined.",
        )
    return sensitivity / sigma, None, None


def _fdp(cert: Mapping[str, Any], attack_results: Mapping[str, Any], best: Any) -> dict[str, Any]:
    """What the trade-off section shows: the best attack's (FPR, FNR) curve, direction-aware, the
    certificate's G_μ, how many points lie below it, and a table at :data:`FDP_ALPHAS`."""
    mu, chart_reason, reason = _promised_mu(cert)
    result = attack_results.get(best) if isinstance(best, str) else None
    bound = (result or {}).get("bound") or {}
    roc = bound.get("roc") if isinstance(bound.get("roc"), Mapping) else None
    direction = bound.get("direction") or "U>R"
    alpha, beta = plots.empirical_tradeoff(roc, direction)
    below = plots.points_below(alpha, beta, mu) if mu is not None else 0
    rows = []
    for a in FDP_ALPHAS:
        reached = [b for x, b in zip(alpha, beta) if x <= a * (1 + 1e-12)]
        empirical = min(reached) if reached else None
        promised = plots.gaussian_tradeoff(a, mu) if mu is not None else None
        rows.append(
            {
                "alpha": a,
                "empirical": empirical,
                "promised": promised,
                "below": empirical is not None and promised is not None and empirical < promised - 1e-9,
            }
        )
    return {
        "attack": best if alpha else None,
        "direction": direction,
        "roc": roc if alpha else None,
        "n_points": len(alpha),
        "below": below,
        "mu": mu,
        "chart_reason": chart_reason,
        "reason": reason,
        "sigma": cert.get("sigma"),
        "sensitivity": cert.get("sensitivity"),
        "n_pos": (roc or {}).get("n_pos"),
        "n_neg": (roc or {}).get("n_neg"),
        "rows": rows,
    }


def _is_competition(details: Any) -> TypeGuard[Mapping[str, Any]]:
    return (
        isinstance(details, Mapping)
        and isinstance(details.get("epsilon_histogram"), list)
        and "forget_score" in details
    )


#: the keys of a competition attack's details shown in its row (its own section shows the rest)
_COMPETITION_ROW = ("forget_score", "mean_epsilon", "models_per_world")


def _row_details(details: Mapping[str, Any]) -> dict[str, Any]:
    if _is_competition(details):
        return {k: details[k] for k in _COMPETITION_ROW if k in details}
    return {k: v for k, v in details.items() if not isinstance(v, (Mapping, list))}


def _competition(attack_results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every attack that reports the NeurIPS 2023 competition measurement, with its CP bound."""
    out = []
    for name in sorted(attack_results):
        r = attack_results[name] or {}
        d = r.get("details")
        if _is_competition(d):
            out.append(
                {
                    "name": name,
                    "title": r.get("title"),
                    "d": d,
                    "bound": r.get("bound") or {},
                    "histogram": [h for h in d["epsilon_histogram"] if isinstance(h, Mapping)],
                }
            )
    return out


def render_html(
    report: Mapping[str, Any] | Any,
    *,
    signed_by: str | None = None,
    page: str = "written",
    envelope_beside: bool = False,
    salt: str = SALT_FILE,
) -> str:
    """The report as one self-contained HTML document (str). Same arguments, same bytes.

    ``signed_by``: the keyid (``sha256:...``) of the key the report directory is about to be
    signed with, None when it is written unsigned. ``page="rerendered"`` for a page rendered
    later from report.json (``audit report``), which no signature covers; ``envelope_beside``
    says that report.json has a signature envelope next to it. ``salt``: the commitment salt's path
    from the page's directory (a comparison keeps one salt at its top, two levels above a method's page).
    """
    if hasattr(report, "to_json_dict"):  # the report model, serialised by its own encoding
        report = report.to_json_dict()
    elif hasattr(report, "to_dict"):
        report = report.to_dict()
    report = json_safe(dict(report), safe_integers=False)  # plain data handed in: the one encoding
    context = _context(report)
    context["signature"] = _signature(signed_by, page, envelope_beside)
    if salt != SALT_FILE:
        context["request"] = _request(report, salt)
    return templates().get_template("report.html.j2").render(**context)


def write_html(report: Mapping[str, Any] | Any, path: str | os.PathLike, **page: Any) -> Path:
    """Render ``report`` (with :func:`render_html`'s ``page`` options) and write it to ``path``
    atomically (temp file + rename)."""
    return write_atomic(Path(path), render_html(report, **page))
