"""Benchmark: the CPU cost of the HTML report, old charts (matplotlib) against new (own SVG).

The report of the default audit (``audit run --method r2d --epsilon 1``) is built once, or
taken from ``--report``. Each chart implementation is then measured in its own fresh
interpreter, because an audit renders its report once per process and the first render is
the one it pays for:

* ``import_cpu_s``: importing the chart module (the old one imports matplotlib);
* ``first_render_cpu_s``: the first ``render_html`` after that import (matplotlib also loads
  its fonts and backend here);
* ``warm_render_cpu_s``: the median of further renders, and ``charts_cpu_s`` the part of it
  spent in the six chart functions.

Everything that ``render_html`` needs besides the charts (jinja2, the config defaults, which
import torch) is warmed up first in both, with the chart functions stubbed out, so the
numbers are the charts' cost, as inside an audit where all of that is loaded already. CPU time
(``time.process_time``), not wall time: the machine is shared.

The old module is read from git (``--old-rev``, default: the last commit whose charts were drawn
by matplotlib) and imported from a temporary file; ``html.render_html`` is pointed at it.

Usage: python bench/bench_report.py [--report report.json] [--repeats 5] [--old-rev REV]
       [--out bench/results/report.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the last commit whose report charts were drawn with matplotlib
OLD_REV = "df1201fddce77cbaaa923d5dd9181f46beb94bd8"
CHARTS = ("epsilon_chart", "roc_chart", "loss_histogram_chart", "relearn_chart", "tradeoff_chart", "fdp_chart")
BUDGET_S = 0.3  # issue 14: the report should cost a few hundred milliseconds of the audit's 3 s


def child(variant: str, report_path: str, repeats: int, old_source: str | None) -> dict:
    """Runs in a fresh interpreter: measures one chart implementation."""
    import numpy  # noqa: F401  (loaded in every audit before the report; not the charts' cost)

    report = json.loads(Path(report_path).read_text())
    from audit.report import html
    from audit.report import plots as new_plots

    # warm up everything but the charts: a stand-in module whose charts draw nothing
    stub = types.SimpleNamespace(**{k: getattr(new_plots, k) for k in dir(new_plots) if not k.startswith("__")})
    for name in CHARTS:
        setattr(stub, name, lambda *a, **k: "<svg></svg>")
    html.plots = stub
    html.render_html(report)
    html.render_html(report)

    start = time.process_time()
    if variant == "old":
        spec = importlib.util.spec_from_file_location("old_plots", old_source)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:  # imported with audit.report.html already: executing it again is what it costs
        module = importlib.reload(new_plots)
    import_s = time.process_time() - start

    spent = {name: 0.0 for name in CHARTS}
    timed = types.SimpleNamespace(**{k: getattr(module, k) for k in dir(module) if not k.startswith("__")})
    for name in CHARTS:
        def wrapper(*a, _f=getattr(module, name), _n=name, **k):
            t = time.process_time()
            try:
                return _f(*a, **k)
            finally:
                spent[_n] += time.process_time() - t
        setattr(timed, name, wrapper)
    html.plots = timed

    start = time.process_time()
    page = html.render_html(report)
    first_s = time.process_time() - start
    warm, charts, per_chart = [], [], {name: [] for name in CHARTS}
    for _ in range(repeats):
        for name in CHARTS:
            spent[name] = 0.0
        start = time.process_time()
        html.render_html(report)
        warm.append(time.process_time() - start)
        charts.append(sum(spent.values()))
        for name in CHARTS:
            per_chart[name].append(spent[name])
    svgs = re.findall(r'<svg class="plot".*?</svg>', page, re.S)
    return {
        "import_cpu_s": import_s,
        "first_render_cpu_s": first_s,
        "import_plus_first_render_cpu_s": import_s + first_s,
        "warm_render_cpu_s": statistics.median(warm),
        "charts_cpu_s": statistics.median(charts),
        "per_chart_cpu_s": {name: statistics.median(v) for name, v in per_chart.items()},
        "matplotlib_loaded": any(m.split(".")[0] == "matplotlib" for m in sys.modules),
        "page_bytes": len(page.encode()),
        "chart_bytes": [len(s.encode()) for s in svgs],
        "n_charts": len(svgs),
    }


def build_report(directory: Path) -> Path:
    cmd = [sys.executable, "-m", "audit", "run", "--method", "r2d", "--epsilon", "1",
           "--out", str(directory), "--quiet"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"audit run failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return directory / "report.json"


def run_child(variant: str, report: Path, repeats: int, old_source: str | None) -> dict:
    cmd = [sys.executable, __file__, "--child", variant, "--report", str(report), "--repeats", str(repeats)]
    if old_source:
        cmd += ["--old-source", old_source]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"{variant}: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", type=Path, help="a report.json (default: build one with the default audit)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--old-rev", default=OLD_REV)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "report.json")
    parser.add_argument("--child", choices=("old", "new"), help=argparse.SUPPRESS)
    parser.add_argument("--old-source", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, str(args.report), args.repeats, args.old_source)))
        return

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        source = "given"
        if args.report is None:
            args.report = build_report(tmp / "audit")
            source = "audit run --method r2d --epsilon 1"
        old_source = tmp / "old_plots.py"
        shown = subprocess.run(["git", "show", f"{args.old_rev}:src/audit/report/plots.py"],
                               capture_output=True, text=True, cwd=ROOT)
        result: dict = {"benchmark": "report", "report": source if source != "given" else str(args.report),
                        "cpu_count": os.cpu_count(), "repeats": args.repeats, "budget_cpu_s": BUDGET_S}
        result["new"] = run_child("new", args.report, args.repeats, None)
        if shown.returncode == 0:
            old_source.write_text(shown.stdout)
            result["old_rev"] = args.old_rev
            result["old"] = run_child("old", args.report, args.repeats, str(old_source))
        else:
            result["old"] = None
            result["old_error"] = shown.stderr.strip()
    new, old = result["new"], result["old"]
    result["new_within_budget"] = new["import_plus_first_render_cpu_s"] < BUDGET_S
    if old:
        result["speedup"] = {
            key: old[key] / new[key] if new[key] > 0 else None
            for key in ("import_plus_first_render_cpu_s", "warm_render_cpu_s", "charts_cpu_s")
        }
        result["page_bytes_ratio"] = old["page_bytes"] / new["page_bytes"]
    text = json.dumps(result, indent=2)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
