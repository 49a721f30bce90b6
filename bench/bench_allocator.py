"""Benchmark: retrain-mode trials of the default MLP with glibc's allocator as it comes and as
:mod:`audit.allocator` sets it, in the same run, and proof that the trials are the same bytes.

Each variant runs in a fresh interpreter (glibc reads its settings at start-up, and
:func:`audit.allocator.tune` runs on ``import audit``): ``default`` with ``AUDIT_MALLOC=default``
(glibc's own dynamic thresholds), ``tuned`` without it (both thresholds 1 GiB). The child builds
the audit's inputs with ``--model mlp`` (method :data:`METHOD`, ε = 1, Adult cut to
``--max-train`` records, one thread as the audit picks for this size), fits the method, then
times ``audit.trials.make_trials("retrain", ...)`` for ``--trials`` trials: CPU time (user and system,
``getrusage`` of the process) around the trials alone, and a SHA-256 of the three worlds' released
parameters, the noiseless parameters and the initial points. The variants alternate,
``--repeats`` times each; medians. ``trials_per_cpu_s`` = trials ÷ (user + system).

The machine is shared with other jobs: CPU time (not wall) is the measure, and the ratio is
between runs interleaved in the same run of this script.

Prints JSON and writes bench/results/allocator.json.
Usage: python bench/bench_allocator.py [--trials 8] [--max-train 1000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

from _child import write_results  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "allocator.json"
#: Retrain-mode trials of retraining itself: each trial trains the MLP from a fresh initial point (learn
#: and retrain); r2d's fit of the MLP first estimates its constants, minutes of CPU outside the trials.
METHOD = "retrain"

_CHILD = textwrap.dedent("""
    import hashlib, json, resource, sys
    import audit
    from audit import allocator
    import torch
    from audit.config import AuditConfig
    from audit.inputs import load_inputs
    from audit.methods import build_method
    from audit.trials import make_trials
    from unlearners.objective import init_parameters
    torch.set_num_threads(1)  # as the audit chooses for this size (audit.threads); no spin-waiting counted
    n = int(sys.argv[1])
    config = AuditConfig(method=sys.argv[2], epsilon=1.0, model="mlp", max_train=int(sys.argv[3]))
    seeds = config.seeds()
    data, forget, X, y, _, objective = load_inputs(config, None, None, None, seeds, torch.float64,
                                                   torch.device("cpu"))
    forget = torch.as_tensor(forget)
    theta0 = init_parameters(objective, torch.Generator().manual_seed(seeds["init"]), torch.float64)
    method = build_method(config, objective, seeds)
    method.fit(X, y, theta0)
    init = lambda g: init_parameters(objective, g, torch.float64)
    make_trials("retrain", method, forget, 0.0, 2, 1, init=init)  # first-call costs, not timed
    before = resource.getrusage(resource.RUSAGE_SELF)
    trials = make_trials("retrain", method, forget, 0.0, n, seeds["attacks"], init=init)
    after = resource.getrusage(resource.RUSAGE_SELF)
    h = hashlib.sha256()
    for t in (trials.unlearned, trials.retrained, trials.original, trials.theta_unlearned,
              trials.theta_retrained, trials.theta_original, trials.initial):
        h.update(t.contiguous().numpy().tobytes())
    print(json.dumps({"user_s": after.ru_utime - before.ru_utime, "sys_s": after.ru_stime - before.ru_stime,
                      "minor_faults": after.ru_minflt - before.ru_minflt, "sha256": h.hexdigest(),
                      "allocator": allocator.state, "path": trials.path, "dim": objective.dim,
                      "n_train": int(len(X)), "steps": int(config.steps), "threads": torch.get_num_threads()}))
""")


def _child(trials: int, variant: str, max_train: int) -> dict:
    env = dict(os.environ)
    env.pop("AUDIT_MALLOC", None)
    env["OMP_WAIT_POLICY"] = "PASSIVE"  # as the CLI sets it
    if variant == "default":
        env["AUDIT_MALLOC"] = "default"
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(trials), METHOD, str(max_train)], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _summary(runs: list[dict], trials: int) -> dict:
    user = statistics.median(r["user_s"] for r in runs)
    system = statistics.median(r["sys_s"] for r in runs)
    cpu = statistics.median(r["user_s"] + r["sys_s"] for r in runs)
    return {"allocator": runs[0]["allocator"], "cpu_s": cpu, "user_s": user, "sys_s": system,
            "minor_faults": statistics.median(r["minor_faults"] for r in runs),
            "trials_per_cpu_s": trials / cpu, "cpu_s_all": [r["user_s"] + r["sys_s"] for r in runs]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-train", type=int, default=1000)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    runs: dict[str, list[dict]] = {"default": [], "tuned": []}
    for _ in range(args.repeats):
        for variant in runs:
            runs[variant].append(_child(args.trials, variant, args.max_train))
    digests = {r["sha256"] for rs in runs.values() for r in rs}
    rows = {variant: _summary(rs, args.trials) for variant, rs in runs.items()}
    first = runs["tuned"][0]
    result = {"benchmark": "allocator", "what": f"retrain-mode trials of the built-in MLP (method {METHOD}, eps 1, Adult, max_train {args.max_train})",
              "trials": args.trials, "max_train": args.max_train, "repeats": args.repeats, "cpu_count": os.cpu_count(),
              "load_average_before": load_before, "load_average_after": os.getloadavg()[0],
              "note": "shared, loaded machine: CPU time (user + sys) of the trials alone, variants interleaved",
              "path": first["path"], "dim": first["dim"], "n_train": first["n_train"], "steps": first["steps"],
              "threads": first["threads"], **rows,
              "speedup_trials_per_cpu_s": rows["tuned"]["trials_per_cpu_s"] / rows["default"]["trials_per_cpu_s"],
              "identical_trials": len(digests) == 1, "sha256": sorted(digests)}
    print(write_results(RESULTS, result))


if __name__ == "__main__":
    main()
