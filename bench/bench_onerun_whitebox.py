"""Benchmark: the white-box one-run audit (issue 28 item 5) catches the planted violation in one run,
stays quiet on honest runs, and its bounds are valid.

Three parts, one JSON object on stdout (``bench/results/onerun_whitebox.json``):

``adult_2000``, ``adult_full``
    The default Adult data (``--max-train 2000`` as in tests/test_cli.py, and the full training
    set for ``--full-reps`` games) with the CLI test's planted violation (``--G 1e-7 --forget-count 20``)
    and the honest run (the same without ``--G``), r2d at ε = 1, δ = 1e-5. One library audit per
    setting fits the method; the white-box game (:func:`audit.onerun_whitebox.pipeline_section`)
    is then played ``--reps`` times (honest) and ``--planted-reps`` times (planted) on that fitted
    method with game seeds 0, 1, …: each game draws its own canaries, secrets, pairing, θ₀ and
    noise, the randomness the guarantee is over. Per setting and canary count m: the violation
    rate with its Clopper–Pearson 95 % interval, the bounds' quantiles, which analysis carried
    the bound, the ceiling printed before the run, and the CPU seconds per game.
``validity``
    The guess bound (:func:`attacks.fdp_onerun.gdp_canary_lower_bounds`: m canaries exactly μ-GDP
    each, the optimal score, k top guesses) and the reference test (a release exactly μ-GDP from
    the reference along a random direction, scored on 2m random unit canary directions):
    exceedance of the true μ over ``--sim-reps`` repetitions (must be ≤ 5 %), and the median
    bound (power).
``ceilings``
    The per-canary ceiling (all guesses right, α/2, chained) of the f-DP bound next to Steinke et
    al.'s, at the default guesses, for several m.

Usage: python bench/bench_onerun_whitebox.py [--reps 200] [--planted-reps 20] [--m 100,1000] [--sim-reps 400]
       [--full-reps 10]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import sys
import time

import numpy as np
from scipy.stats import beta

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))


def _cp(k: int, n: int) -> list[float]:
    lo = 0.0 if k == 0 else float(beta.ppf(0.025, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(0.975, k + 1, n - k))
    return [lo, hi]


def _games(planted: bool, ms: list[int], reps: int, max_train: int | None) -> dict:
    """One audit fits the method; the game is replayed with seeds 0..reps-1 for each m."""
    import audit
    import audit.onerun_whitebox as wb
    from audit.config import AuditConfig

    captured: dict = {}
    real = wb.pipeline_section

    def capture(config, method, inputs, init, seed):
        captured.update(config=config, method=method, inputs=inputs, init=init)
        return real(config, method, inputs, init, seed)

    wb.pipeline_section = capture
    try:
        constants = {"constants": {"G": 1e-7}} if planted else {}
        audit.run(
            AuditConfig(
                forget_count=20,
                max_train=max_train,
                attacks=(),
                curve_points=2,
                noise_draws=2,
                one_run_whitebox_canaries=10,
                **constants,
            )
        )
    finally:
        wb.pipeline_section = real
    out = {}
    for m in ms:
        config = dataclasses.replace(captured["config"], one_run_whitebox_canaries=m)
        rows, t0 = [], time.process_time()
        for seed in range(reps):
            s = real(config, captured["method"], captured["inputs"], captured["init"], seed)
            a = s["analysis"]
            rows.append((s["violation"], s["epsilon_lower"], a["epsilon_guesses"], a["epsilon_reference"], a["v"]))
        cpu = (time.process_time() - t0) / reps
        viol = sum(r[0] for r in rows)
        eps = np.array([r[1] for r in rows])
        out[str(m)] = {
            "repetitions": reps,
            "violations": viol,
            "violation_rate": viol / reps,
            "violation_rate_ci95": _cp(viol, reps),
            "epsilon_lower_quantiles": dict(zip(("min", "median", "max"), np.quantile(eps, [0, 0.5, 1]).tolist())),
            "carried_by_reference_test": sum(r[3] >= r[2] and r[1] > 0 for r in rows),
            "carried_by_guesses": sum(r[2] > r[3] for r in rows),
            "right_guesses_mean_fraction": float(np.mean([r[4] for r in rows]) / s["analysis"]["r"]),
            "sigma": s["sigma"],
            "certified_epsilon": s["certified_epsilon"],
            "ceiling": s["ceiling"],
            "cpu_s_per_game": cpu,
        }
    n = int(captured["inputs"].X.shape[0])
    return {"training_records": n, "by_m": out}


def _validity(sim_reps: int) -> dict:
    from attacks.fdp_onerun import fdp_one_run_ceiling, gdp_canary_lower_bounds, max_alignment_log_p, reference_test_mu

    guesses = []
    for m, k in ((1000, 100), (10_000, 1000)):
        for mu in (0.5, 1.0, 2.0, 4.0):
            b = gdp_canary_lower_bounds(m, mu, k, repetitions=sim_reps, seed=17)
            over = int(np.count_nonzero(b > mu))
            guesses.append(
                {
                    "m": m,
                    "k": k,
                    "mu": mu,
                    "repetitions": sim_reps,
                    "exceedances": over,
                    "exceedance_ci95": _cp(over, sim_reps),
                    "median_bound": float(np.median(b)),
                    "ceiling": fdp_one_run_ceiling(m, k),
                }
            )
    reference = []
    rng = np.random.default_rng(23)
    for d, count in ((3, 200), (100, 2000)):
        u = rng.standard_normal((count, d))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        for mu in (0.5, 2.0, 8.0):
            b = []
            for _ in range(sim_reps):
                shift = rng.standard_normal(d)
                diff = mu * shift / np.linalg.norm(shift) + rng.standard_normal(d)
                b.append(reference_test_mu(max_alignment_log_p(u @ diff)))
            over = int(np.count_nonzero(np.array(b) > mu))
            reference.append(
                {
                    "dimension": d,
                    "canary_directions": count,
                    "mu": mu,
                    "repetitions": sim_reps,
                    "exceedances": over,
                    "exceedance_ci95": _cp(over, sim_reps),
                    "median_bound": float(np.median(b)),
                }
            )
    return {"guesses": guesses, "reference_test": reference}


def _ceilings() -> list[dict]:
    from audit.onerun_whitebox import whitebox_ceiling

    return [whitebox_ceiling(m, 1e-5, 0.95) for m in (100, 251, 1000, 3600, 10_000)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--planted-reps", type=int, default=20)
    parser.add_argument("--m", default="100,1000")
    parser.add_argument("--sim-reps", type=int, default=400)
    parser.add_argument("--full-reps", type=int, default=10)
    args = parser.parse_args()
    ms = [int(x) for x in args.m.split(",")]
    t0, c0 = time.perf_counter(), time.process_time()
    result = {
        # max_train 2000 as the CLI test plants it (tests/test_cli.py), cheap enough for many games;
        # the full training set (34,190 records, about 2 CPU s a game) for a few
        "adult_2000": {
            "honest": _games(False, ms, args.reps, 2000),
            "planted": _games(True, ms, args.planted_reps, 2000),
        },
        "adult_full": {
            "honest": _games(False, ms[:1], args.full_reps, None),
            "planted": _games(True, ms[:1], args.full_reps, None),
        },
        "validity": _validity(args.sim_reps),
        "ceilings": _ceilings(),
        "settings": {
            "method": "r2d (defaults), epsilon 1, delta 1e-5, forget_count 20, default Adult data",
            "planted": "constants G = 1e-7 (tests/test_cli.py)",
            "wall_s": time.perf_counter() - t0,
            "cpu_s": time.process_time() - c0,
            "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "load": os.getloadavg(),
        },
    }
    json.dump(result, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
