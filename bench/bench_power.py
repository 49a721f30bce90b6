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
    Issue 28's ranking check (``--parts estimates``): noop, finetune at three step counts
    (``finetune_steps``: 1 %, 10 % and 100 % of A's), neggrad and retrain on each of
    ``--datasets``, one audit each in retrain mode. The strength a fine-tune is ordered by is
    *measured*, not its step count: the fraction of the parameter distance from A(D) to A(D \\ Z)
    it closed, per trial (the trials' stacks are observed, not changed). Per method and attack:
    the bound, the estimates with intervals (AUROC, ε, TPR at low FPR, direction, and the product's
    effect size: the score gap in units of the trials' spread, bootstrap interval, not a privacy estimate).
    Per dataset: for noop and the fine-tunes in order of the fraction closed, whether each
    estimate falls with it, pair by pair ("ordered, separable", "not separable at this trial
    count", "both at the trial ceiling", "reversed, separable"); whether neggrad is named
    over-unlearning; whether retrain's intervals contain "no leak"; the comparison's ranking
    sentence and order (methods at the trial ceiling ordered among themselves by effect size) with
    the trial counts that would separate its overlapping pairs, and whether that order follows the
    fraction closed.
``tpr_coverage``
    Coverage of the TPR-at-low-FPR intervals over ``--reps`` samples of Gaussian and Laplace
    scores (truth known), at the fewest retrained trials an FPR accepts and above.
``settings``
    What was run, and the wall time of each part.

Usage: python bench/bench_power.py [--seeds 3] [--trials 100] [--reps 200] [--parts planted,null_whitebox,methods]
       python bench/bench_power.py --parts estimates [--datasets digits,adult] [--estimate-steps 40]
       python bench/bench_power.py --parts tpr_coverage [--reps 1000]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
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


#: finetune's knob for the estimates part: U's gradient steps on D \\ Z (1 %, 10 %, 100 % of A's). The strength
#: the part orders by is not the knob but what it *measures*: the fraction of the distance to retraining closed.
FINETUNE_FRACTIONS = (0.01, 0.1, 1.0)


class _Observed:
    """What an audit computed and its report does not keep: the retrain-mode trial stacks (for the distance to
    retraining). Wraps one function, changes nothing."""

    def __enter__(self):
        import audit.trials as trials

        self.stacks = []
        self._saved = trials.make_trials

        def make_trials(*args, **kwargs):
            out = self._saved(*args, **kwargs)
            self.stacks.append(out)
            return out

        trials.make_trials = make_trials
        return self

    def __exit__(self, *exc):
        import audit.trials as trials

        trials.make_trials = self._saved

    def distance(self, n_trials: int) -> dict:
        """Per trial, 1 − |U − R| / |A − R| (parameters; A, U and R of a trial share θ_0): the fraction of the
        distance from the original to retraining that U closed (1: retraining; below 0: farther than A)."""
        ts = [t for t in self.stacks if t.mode == "retrain" and t.n_trials == n_trials][0]
        u, r, a = (getattr(ts, "theta_" + w).double() for w in ("unlearned", "retrained", "original"))
        closed = (1.0 - (u - r).norm(dim=1) / (a - r).norm(dim=1)).numpy()
        spread = float((r - r.mean(0)).norm(dim=1).pow(2).mean().sqrt())  # the retrained world's own spread
        return {"closed_mean": float(closed.mean()), "closed_2_5_97_5": np.quantile(closed, [0.025, 0.975]).tolist(),
                "gap_over_spread": float((u - r).norm(dim=1).mean()) / spread if spread > 0 else math.inf,
                "original_gap_over_spread": float((a - r).norm(dim=1).mean()) / spread if spread > 0 else math.inf}


def estimates(datasets: tuple[str, ...], trials: int, steps: int) -> dict:
    """Issue 28: do the estimates rank what the bound cannot (see the module docstring)?"""
    from audit.comparing import row_of
    from audit.ranking import estimated_ranking

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
            t0, c0 = time.perf_counter(), time.process_time()
            with _Observed() as seen:
                reports[name] = run(AuditConfig(**base, **extra))
            summary[name] = _estimate_summary(reports[name], seen, time.perf_counter() - t0, time.process_time() - c0)
        ranking = estimated_ranking([row_of(n, r) for n, r in reports.items()])
        out[dataset] = {"methods": summary, **_verdicts(summary),
                        "ranking": None if ranking is None else ranking.sentence,
                        "ranking_order": None if ranking is None else ranking.order,
                        "not_separable": None if ranking is None else ranking.not_separable,
                        "trials_to_separate": None if ranking is None else ranking.trials_to_separate,
                        "effect_size_not_separable": None if ranking is None else ranking.effect_size_not_separable,
                        "ranking_follows_closed": _follows_closed(ranking, summary)}
    return out


#: How a leakier neighbour compares (:func:`_verdicts`).
PAIR_WORDS = ("ordered, separable", "not separable at this trial count", "both at the trial ceiling",
              "reversed, separable")


def _verdicts(summary: dict) -> dict:
    """Order noop and the fine-tunes by the measured fraction closed (least first = leakiest expected) and say,
    for each neighbour pair and estimate, whether the estimate falls with it (:data:`PAIR_WORDS`)."""
    by_closed = sorted(["noop"] + [n for n in summary if n.startswith("finetune")],
                       key=lambda n: summary[n]["distance"]["closed_mean"])

    def best(name: str, key: str) -> dict:
        """The attack whose estimate is farthest from "no leak" (ε 0, AUROC ½, effect 0), as a leak size with
        its interval on the same side; at the ceiling when the worlds are separated at every trial."""
        origin = 0.5 if key == "auroc" else 0.0

        def leak(x):
            p, lo, hi = (float(x[k]) - origin for k in ("point", "lower", "upper"))
            return {"point": p, "lower": lo, "upper": hi} if p >= 0 else {"point": -p, "lower": -hi, "upper": -lo}

        x = max((leak(a[key]) for a in summary[name]["attacks"].values() if a.get(key) is not None),
                key=lambda v: v["point"])
        x["ceiling"] = math.isinf(x["upper"]) or (key == "auroc" and x["lower"] == 0.5)
        return x

    def pair(a: str, b: str, key: str) -> str:
        x, y = best(a, key), best(b, key)  # a closed less: expected to leak more
        if x["ceiling"] and y["ceiling"]:
            return PAIR_WORDS[2]
        if x["lower"] > y["upper"]:
            return PAIR_WORDS[0]
        return PAIR_WORDS[3] if y["lower"] > x["upper"] else PAIR_WORDS[1]

    keys = ("epsilon", "auroc", "effect_size")
    pairs = {f"{a} > {b}": {k: pair(a, b, k) for k in keys} for a, b in zip(by_closed, by_closed[1:])}
    return {"order_by_closed": by_closed,
            "separated_by": {k: all(p[k] == PAIR_WORDS[0] for p in pairs.values()) for k in keys},
            "reversed_by": {k: any(p[k] == PAIR_WORDS[3] for p in pairs.values()) for k in keys},
            "pairs": pairs,
            "neggrad_over_unlearning": "over-unlearning" in summary["neggrad"]["findings"],
            "retrain_contains_no_leak": all(a["auroc"]["lower"] <= 0.5 <= a["auroc"]["upper"]
                                            and (a["epsilon"] is None or float(a["epsilon"]["lower"]) == 0.0)
                                            for a in summary["retrain"]["attacks"].values())}


def _follows_closed(ranking, summary: dict) -> bool | None:
    """Whether the comparison's order puts noop and the fine-tunes in order of the fraction closed, most closed
    (least leaky) first; None without a ranking."""
    if ranking is None:
        return None
    tuned = [n for n in ranking.order if n == "noop" or n.startswith("finetune")]
    return tuned == sorted(tuned, key=lambda n: -summary[n]["distance"]["closed_mean"])


def _estimate_summary(report, seen: _Observed, seconds: float, cpu: float) -> dict:
    a = report.attacks
    return {"seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1), "findings": [f.code for f in report.findings],
            "best_epsilon_lower": a.comparison.best_empirical_epsilon,
            "distance": seen.distance(a.trials.n_trials),
            "attacks": {k: {"epsilon_lower": v.bound.epsilon_lower,
                            # JSON form: an infinite upper end is "inf", as in the reports
                            **{key: v.estimates.model_dump(mode="json")[key]
                               for key in ("auroc", "epsilon", "direction", "tpr_at_fpr", "effect_size")}}
                        for k, v in a.attacks.items()}}


def tpr_coverage(reps: int, n: int = 500, mu: float = 2.0) -> dict:
    """Coverage of the TPR-at-FPR intervals where the truth is known (Gaussian and Laplace shifts), at the fewest
    retrained trials each FPR accepts (5 false positives) and at 4x that."""
    from scipy.stats import laplace, norm

    from attacks.estimates import ScorePair

    out = {}
    for shape, dist in (("gaussian", norm), ("laplace", laplace)):
        for fpr, size in ((0.01, n), (0.01, 4 * n), (0.001, 10 * n)):
            truth = float(dist.sf(dist.isf(fpr) - mu))
            below = above = 0
            widths = []
            for rep in range(reps):
                rng = np.random.default_rng(rep)
                draw = rng.normal if shape == "gaussian" else rng.laplace
                x = ScorePair(draw(mu, 1.0, size), draw(0.0, 1.0, size)).tpr_at_fpr(fpr)
                below += truth < x.lower
                above += truth > x.upper
                widths.append(x.upper - x.lower)
            out[f"{shape} fpr={fpr:g} n={size}"] = {"truth": truth, "coverage": 1 - (below + above) / reps,
                                                   "truth_below": below / reps, "truth_above": above / reps,
                                                   "mean_width": float(np.mean(widths)), "reps": reps}
    return out


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
    timings, cpu, load, result = {}, {}, {}, {}
    parts = {"planted": lambda: planted(args.reps), "null_whitebox": lambda: null_whitebox(args.reps),
             "methods": lambda: audit_methods(args.seeds, args.trials),
             "estimates": lambda: estimates(tuple(args.datasets.split(",")), args.trials, args.estimate_steps),
             "tpr_coverage": lambda: tpr_coverage(args.reps)}
    for name in args.parts.split(","):
        part = parts[name]
        t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
        result[name] = part()
        c1 = resource.getrusage(resource.RUSAGE_SELF)
        timings[name] = round(time.perf_counter() - t0, 1)
        cpu[name] = round(c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime, 1)
        load[name] = os.getloadavg()[0]  # 1-minute load average at the part's end (2 cores shared)
    result["settings"] = {"audit": SETTING, "seeds": args.seeds, "trials_per_world": args.trials,
                          "reps": args.reps, "parts": args.parts, "datasets": args.datasets,
                          "estimate_steps": args.estimate_steps, "seconds": timings,
                          "cpu_seconds": cpu, "load_1min_at_end": load, "torch": torch.__version__,
                          "threads": torch.get_num_threads()}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
