"""Benchmark: does the audit have power where it matters, and does it stay valid where it must?

Four parts, one JSON object on stdout (``bench/results/power.json``):

``methods``
    Full audits (the library call, default attacks, ``trial_mode`` auto = retrain mode for these
    σ = 0 methods) of an MLP on 500 digits records with 10 % forgotten, for ``retrain`` (must never
    be flagged), ``noop`` (the original model released as unlearned: must be flagged),
    ``finetune`` and ``neggrad`` (somewhere between), over several seeds. Per run: every attack's
    Clopper–Pearson bound and AUROC, the positive control, the trials' spread (no identical
    copies), the population MIA's AUROCs; per method: the detection rate (best bound > 0 at 95 %
    jointly over the attacks).
``null_whitebox``
    The retrain-mode white-box attack on a null: both worlds i.i.d. N(0, I_d), d ≥ 1,000, 500
    trials per world: how often the bound is positive (must be ≤ 5 %; the direction is built
    from trials that are never scored).
``planted``
    White-box scores of a planted release whose realized ε is 3 (μ-GDP scores N(0,1) against
    N(μ,1), δ = 1e-5) at 1,000 trials per world: the hypothesis-free bound and the GDP lower bound
    (valid under the Gaussian hypothesis), against a certificate of ε = 1.
``estimates``
    Issue 28's ranking check (``--parts estimates``): noop, finetune at three strengths
    (``finetune_steps``; more steps on D \\ Z from A(D) = closer to retraining), neggrad and retrain
    on each of ``--datasets``, one audit each in retrain mode. Per method and attack: the bound, and
    the estimates with intervals (AUROC, ε, direction); per dataset: whether the ε and AUROC
    estimates order the finetunes by strength, whether neggrad is named over-unlearning, whether
    retrain's intervals contain "no leak", and the comparison's ranking sentence.
``settings``
    What was run, and the wall time of each part.

Usage: python bench/bench_power.py [--seeds 3] [--trials 100] [--reps 200] [--parts planted,null_whitebox,methods]
       python bench/bench_power.py --parts estimates [--datasets digits,adult] [--estimate-steps 300]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
from scipy.optimize import brentq

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from attacks.epsilon import clopper_pearson_epsilon  # noqa: E402
from attacks.gdp import gdp_epsilon_estimate  # noqa: E402
from attacks.whitebox import held_out_split, whitebox_direction, whitebox_scores  # noqa: E402
from audit import AuditConfig, run  # noqa: E402
from certify.mechanisms import epsilon_for  # noqa: E402

METHODS = ("retrain", "noop", "finetune", "neggrad")
#: A small MLP that learns (and memorises) 500 digits records: 300 full-batch steps, η·L·T = 60.
SETTING = dict(
    dataset="digits",
    model="mlp",
    max_train=500,
    forget_fraction=0.1,
    steps=300,
    horizon=60.0,
    curve_points=2,
    noise_draws=2,
)


def audit_methods(seeds: int, trials: int) -> dict:
    runs = {m: [] for m in METHODS}
    for method in METHODS:
        for seed in range(seeds):
            t0 = time.perf_counter()
            report = run(AuditConfig(method=method, seed=seed, trials=trials, **SETTING))
            runs[method].append(_summary(report, time.perf_counter() - t0))
    return {
        m: {
            "detection_rate": float(np.mean([r["best_epsilon_lower"] > 0 for r in rs])),
            "mean_best_epsilon_lower": float(np.mean([r["best_epsilon_lower"] for r in rs])),
            "mean_ulira_auroc": float(np.mean([r["attacks"]["ulira"]["auroc"] for r in rs])),
            "runs": rs,
        }
        for m, rs in runs.items()
    }


def _summary(report, seconds: float) -> dict:
    a = report.attacks
    population = a.attacks["mia"].details.get("population_auroc", {})
    return {
        "seconds": round(seconds, 1),
        "verdict": report.verdict,
        "findings": [f.code for f in report.findings],
        "mode": a.trials.mode,
        "trials_per_world": a.trials.n_per_world,
        "ceiling": a.trials.ceiling,
        "spread_unlearned": a.trials.spread_unlearned,
        "spread_retrained": a.trials.spread_retrained,
        "test_accuracy": {
            "original": report.utility.original.test.accuracy,
            "unlearned": report.utility.unlearned.test.accuracy,
            "retrained": report.utility.retrained.test.accuracy,
        },
        "attacks": {
            k: {"epsilon_lower": v.bound.epsilon_lower, "auroc": v.bound.roc.auroc} for k, v in a.attacks.items()
        },
        "best_attack": a.comparison.best_attack,
        "best_epsilon_lower": a.comparison.best_empirical_epsilon,
        "positive_control": {
            "best_epsilon_lower": a.positive_control.best_epsilon_lower,
            "has_power": a.positive_control.has_power,
            "auroc": a.positive_control.auroc,
        },
        "population_mia_auroc": {name: entry["noiseless"].get("auroc_mean") for name, entry in population.items()},
    }


def null_whitebox(reps: int, dims=(100, 1000, 1409), n: int = 500) -> dict:
    out = {}
    for d in dims:
        positive = 0
        for rep in range(reps):
            g = torch.Generator().manual_seed(rep)
            u, r = torch.randn(n, d, generator=g), torch.randn(n, d, generator=g)
            build, score = held_out_split(n)
            direction, midpoint, _ = whitebox_direction(u[build], r[build])
            su, sr = whitebox_scores(u[score], direction, midpoint), whitebox_scores(r[score], direction, midpoint)
            bound = clopper_pearson_epsilon(su.numpy(), sr.numpy(), delta=1e-5, seed=rep)
            positive += bound.epsilon_lower > 0
        out[str(d)] = {"positive_rate": positive / reps, "reps": reps, "trials_per_world": n}
    return out


def planted(reps: int, n: int = 1000, realized: float = 3.0, certified: float = 1.0, delta: float = 1e-5) -> dict:
    mu = brentq(lambda m: epsilon_for(1.0 / m, delta, 1.0) - realized, 0.05, 10.0)
    cp, gdp, refused = [], [], 0
    for rep in range(reps):
        rng = np.random.default_rng(rep)
        su, sr = rng.normal(mu, 1.0, n), rng.normal(0.0, 1.0, n)
        cp.append(clopper_pearson_epsilon(su, sr, delta=delta, seed=rep).epsilon_lower)
        g = gdp_epsilon_estimate(su, sr, delta, seed=rep)
        if g.gof == "accepted" and math.isfinite(g.epsilon_lower):
            gdp.append(g.epsilon_lower)
        else:
            refused += 1
    return {
        "mu": mu,
        "realized_epsilon": realized,
        "certified_epsilon": certified,
        "trials_per_world": n,
        "reps": reps,
        "cp_mean": float(np.mean(cp)),
        "cp_above_certified": float(np.mean(np.array(cp) > certified)),
        "gdp_lower_mean": float(np.mean(gdp)) if gdp else None,
        "gdp_lower_above_certified": float(np.mean(np.array(gdp) > certified)) if gdp else None,
        "gdp_refused": refused,
    }


#: finetune's strengths for the estimates part: U's gradient steps on D \ Z (1 %, 10 %, 100 % of A's).
FINETUNE_FRACTIONS = (0.01, 0.1, 1.0)


def estimates(datasets: tuple[str, ...], trials: int, steps: int) -> dict:
    """Issue 28: do the estimates rank what the bound cannot (see the module docstring)?"""
    from audit.comparing import estimated_ranking, row_of

    out = {}
    for dataset in datasets:
        base = dict(SETTING, dataset=dataset, steps=steps, trials=trials, seed=0)
        if dataset != "digits":
            base.pop("model")  # the dataset's default model
        runs = {
            f"finetune-{100 * f:g}pct": dict(
                method="finetune", method_options={"finetune_steps": max(1, round(f * steps))}
            )
            for f in FINETUNE_FRACTIONS
        }
        runs = {
            "noop": dict(method="noop"),
            **runs,
            "neggrad": dict(method="neggrad"),
            "retrain": dict(method="retrain"),
        }
        reports, summary = {}, {}
        for name, extra in runs.items():
            t0 = time.perf_counter()
            reports[name] = run(AuditConfig(**base, **extra))
            summary[name] = _estimate_summary(reports[name], time.perf_counter() - t0)
        finetunes = [f"finetune-{100 * f:g}pct" for f in FINETUNE_FRACTIONS]
        ranking = estimated_ranking([row_of(n, r) for n, r in reports.items()])

        def best(name: str, key: str) -> float:
            # AUROC as distance from 0.5: a leak either way
            return max(
                abs(a[key]["point"] - 0.5) if key == "auroc" else float(a[key]["point"])
                for a in summary[name]["attacks"].values()
                if a[key] is not None
            )

        def ordered(key: str) -> bool:
            """Strictly less leakage with more steps (a tie, e.g. every finetune at the ceiling, is no order)."""
            return all(best(a, key) > best(b, key) for a, b in zip(finetunes, finetunes[1:]))

        out[dataset] = {
            "methods": summary,
            "finetunes_ordered_by_epsilon": ordered("epsilon"),
            "finetunes_ordered_by_auroc": ordered("auroc"),
            "finetunes_separated_at_ceiling": [
                n
                for n in finetunes
                if any(
                    a["epsilon"] is not None and math.isinf(float(a["epsilon"]["upper"]))
                    for a in summary[n]["attacks"].values()
                )
            ],
            "neggrad_over_unlearning": "over-unlearning" in summary["neggrad"]["findings"],
            "retrain_contains_no_leak": all(
                a["auroc"]["lower"] <= 0.5 <= a["auroc"]["upper"]
                and (a["epsilon"] is None or float(a["epsilon"]["lower"]) == 0.0)
                for a in summary["retrain"]["attacks"].values()
            ),
            "ranking": None if ranking is None else ranking.sentence,
        }
    return out


def _estimate_summary(report, seconds: float) -> dict:
    a = report.attacks
    return {
        "seconds": round(seconds, 1),
        "findings": [f.code for f in report.findings],
        "best_epsilon_lower": a.comparison.best_empirical_epsilon,
        "attacks": {
            k: {
                "epsilon_lower": v.bound.epsilon_lower,
                # JSON form: an infinite upper end is "inf", as in the reports
                **{key: v.estimates.model_dump(mode="json")[key] for key in ("auroc", "epsilon", "direction")},
            }
            for k, v in a.attacks.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--parts", default="planted,null_whitebox,methods")
    parser.add_argument("--datasets", default="digits,adult")
    parser.add_argument("--estimate-steps", type=int, default=300)
    args = parser.parse_args()
    torch.set_num_threads(2)
    timings, result = {}, {}
    parts = {
        "planted": lambda: planted(args.reps),
        "null_whitebox": lambda: null_whitebox(args.reps),
        "methods": lambda: audit_methods(args.seeds, args.trials),
        "estimates": lambda: estimates(tuple(args.datasets.split(",")), args.trials, args.estimate_steps),
    }
    for name in args.parts.split(","):
        part = parts[name]
        t0 = time.perf_counter()
        result[name] = part()
        timings[name] = round(time.perf_counter() - t0, 1)
    result["settings"] = {
        "audit": SETTING,
        "seeds": args.seeds,
        "trials_per_world": args.trials,
        "reps": args.reps,
        "parts": args.parts,
        "datasets": args.datasets,
        "estimate_steps": args.estimate_steps,
        "seconds": timings,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
