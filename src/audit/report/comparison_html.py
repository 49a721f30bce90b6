"""The comparison (``audit compare``) as one self-contained HTML page.

Rendered like the single report (:mod:`audit.report.html`: its Jinja2 environment, its CSS, its
Content-Security-Policy, no script, nothing loaded): a recommendation banner stating the rule,
one table row per method with every number copied from the document, the methods that were not
run with their reasons, the caller's candidates by measured leakage (measured, not certified),
the privacy-utility frontier of every method on one chart, each method's own knob, and links to
each method's own page (``methods/<name>/report.html``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from audit.report import plots
from audit.report.encoding import json_safe
from audit.report.html import CSP, embedded_json, templates


def render_comparison_html(document: Mapping[str, Any]) -> str:
    """The comparison as one self-contained HTML document (str). Same document, same bytes."""
    doc = json_safe(dict(document), safe_integers=False)
    rows = doc.get("methods") or []
    reference = next((r for r in rows if r.get("name") == doc.get("reference")), None)
    attack_columns = [
        a for a in ("ulira", "rmia") if any(a in ((r.get("leakage") or {}).get("auroc") or {}) for r in rows)
    ]
    retrained = (reference or (rows[0] if rows else {})).get("test_accuracy_retrained")
    chance = None
    balance = ((doc.get("dataset") or {}).get("class_balance") or {}).get("test")
    if isinstance(balance, list) and balance:
        chance = max(balance)
    frontier = plots.frontier_chart(
        {r["name"]: r.get("frontier") or {} for r in rows},
        epsilon=doc.get("epsilon"),
        retrained=retrained,
        chance=chance,
    )
    by_name = {r.get("name"): r for r in rows if isinstance(r, dict)}
    order = (doc.get("measured_ranking") or {}).get("order") if isinstance(doc.get("measured_ranking"), dict) else None
    ranked = [by_name.get(n) or {"name": n} for n in order if isinstance(n, str)] if isinstance(order, list) else []
    return (
        templates()
        .get_template("comparison.html.j2")
        .render(
            d=doc,
            rows=rows,
            reference=reference,
            ranked=ranked,
            attack_columns=attack_columns,
            frontier_svg=frontier,
            recommendation=doc.get("recommendation") or {},
            csp=CSP,
            report_json=embedded_json(doc),
            knobs=[r for r in rows if r.get("knob")],
            no_frontier=[r for r in rows if (r.get("frontier") or {}).get("applicable") is False],
        )
    )
