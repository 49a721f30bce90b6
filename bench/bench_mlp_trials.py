"""Benchmark: retrain-mode trials of the default MLP, before and after the closed-form batched
training (:mod:`unlearners.mlp_grads`), with glibc's allocator as it comes and as
:mod:`audit.allocator` sets it, in the same run; and proof that trials and reports are the same.

Three variants, each in a fresh interpreter (glibc reads its settings at start-up):

* ``baseline``: the reference source tree (default: commit :data:`BASE`, extracted with
  ``git archive``: vmapped autograd training) with ``AUDIT_MALLOC=default``: the issue's "today";
* ``allocator``: the reference tree with the allocator tuned (last session's state);
* ``fast``: this tree, allocator tuned.

The child is :mod:`bench.bench_allocator`'s: the audit's inputs with ``--model mlp`` (method
``retrain``, ε = 1, Adult cut to ``--max-train`` records, one thread as the audit picks for this
size), a warm-up, then ``audit.trials.make_trials("retrain", ...)`` for each trial count, timed by
``getrusage`` (user + system CPU of the trials alone) and hashed (SHA-256 of every released,
noiseless and initial parameter). Variants alternate, ``--repeats`` times; medians.

``--report`` also runs ``audit run --model mlp --method retrain --trial-mode retrain`` with both
trees (same seed, same commitment salt) and compares the report JSON key by key, leaving out only
``timings``, ``created_at`` and ``started_at``; keys only one tree writes (report features added
since the reference) are listed apart from values that differ. ``--report-base`` compares the
report against another commit than the timings' reference (e.g. the commit before a change).

The machine is shared: CPU time (not wall) is the measure, and ratios are between runs
interleaved in this one. Prints JSON and writes bench/results/mlp_trials.json.
Usage: python bench/bench_mlp_trials.py [--trials 8,64] [--max-train 1000] [--repeats 3] [--report]
[--report-base COMMIT] [--out FILE]
(``--max-train 40000 --trials 2 --out bench/results/mlp_trials_full.json``: all of Adult's 34,190
records, where a block is one model and a gradient is summed over 34 chunks of 1,024 records.)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_allocator import _CHILD  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "mlp_trials.json"
#: The reference: main before this change (vmapped autograd training, allocator tuned by default).
BASE = "a6b0c0b"
VARIANTS = {"baseline": ("base", "default"), "allocator": ("base", "tuned"), "fast": ("this", "tuned")}
#: Report keys that differ between any two runs (times and clock readings).
VOLATILE = ("timings", "created_at", "started_at")


def _extract(commit: str, into: Path) -> Path:
    """``src/`` of ``commit``, written under ``into`` (``git archive``: nothing in the repository changes)."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "src"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into / "src"


def _commit(ref: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", ref], capture_output=True, text=True
    ).stdout.strip()


def _env(src: Path, allocator: str) -> dict:
    env = dict(os.environ)
    env.pop("AUDIT_MALLOC", None)
    env["OMP_WAIT_POLICY"] = "PASSIVE"  # as the CLI sets it
    env["PYTHONPATH"] = str(src)
    if allocator == "default":
        env["AUDIT_MALLOC"] = "default"
    return env


def _child(src: Path, allocator: str, trials: int, max_train: int) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(trials), "retrain", str(max_train)],
        capture_output=True,
        text=True,
        env=_env(src, allocator),
        cwd=src.parent,
    )
    if proc.returncode != 0:
        sys.exit(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _summary(runs: list[dict], trials: int) -> dict:
    cpu = [r["user_s"] + r["sys_s"] for r in runs]
    return {
        "allocator": runs[0]["allocator"],
        "cpu_s": statistics.median(cpu),
        "user_s": statistics.median(r["user_s"] for r in runs),
        "sys_s": statistics.median(r["sys_s"] for r in runs),
        "trials_per_cpu_s": trials / statistics.median(cpu),
        "cpu_s_all": cpu,
    }


def _timings(trees: dict[str, Path], counts: list[int], max_train: int, repeats: int) -> dict:
    out = {}
    for trials in counts:
        runs: dict[str, list[dict]] = {name: [] for name in VARIANTS}
        for _ in range(repeats):
            for name, (tree, allocator) in VARIANTS.items():
                runs[name].append(_child(trees[tree], allocator, trials, max_train))
        rows = {name: _summary(rs, trials) for name, rs in runs.items()}
        rate = {name: row["trials_per_cpu_s"] for name, row in rows.items()}
        out[str(trials)] = {
            **rows,
            "fast_vs_baseline": rate["fast"] / rate["baseline"],
            "fast_vs_allocator": rate["fast"] / rate["allocator"],
            "allocator_vs_baseline": rate["allocator"] / rate["baseline"],
            "identical_trials": len({r["sha256"] for rs in runs.values() for r in rs}) == 1,
            "sha256": sorted({r["sha256"] for rs in runs.values() for r in rs}),
            "path": runs["fast"][0]["path"],
            "dim": runs["fast"][0]["dim"],
            "n_train": runs["fast"][0]["n_train"],
            "steps": runs["fast"][0]["steps"],
            "threads": runs["fast"][0]["threads"],
        }
    return out


def _differences(a, b, path: str = "") -> dict[str, list[str]]:
    """Report keys whose values differ, and keys only one of the two reports has (a newer tree
    writes keys an older one did not: new report features, not changed results)."""
    out: dict[str, list[str]] = {"values": [], "only_base": [], "only_this": []}
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in b:
                out["only_base"].append(f"{path}/{k}")
            elif k not in a:
                out["only_this"].append(f"{path}/{k}")
            else:
                for kind, paths in _differences(a[k], b[k], f"{path}/{k}").items():
                    out[kind] += paths
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (u, v) in enumerate(zip(a, b)):
            for kind, paths in _differences(u, v, f"{path}[{i}]").items():
                out[kind] += paths
    elif a != b:
        out["values"].append(path)
    return out


def _reports(trees: dict[str, Path], trials: int, max_train: int, work: Path) -> dict:
    """The same audit with both trees: which report keys differ, apart from :data:`VOLATILE`."""
    salt = work / "salt"
    salt.write_text("00" * 32)
    reports, cpu = {}, {}
    for tree in ("base", "this"):
        args = ["--model", "mlp", "--method", "retrain", "--trial-mode", "retrain", "--max-train", str(max_train)]
        args += ["--trials", str(trials), "--seed", "0", "--commitment-salt", str(salt), "--json", "-q"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run(
            [sys.executable, "-m", "audit", "run", *args],
            capture_output=True,
            text=True,
            env=_env(trees[tree], "tuned"),
            cwd=work,
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if not proc.stdout.strip():
            sys.exit(proc.stderr[-3000:])
        reports[tree] = {k: v for k, v in json.loads(proc.stdout).items() if k not in VOLATILE}
        cpu[tree] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    differ = _differences(reports["base"], reports["this"])
    return {
        "command": "audit run --model mlp --method retrain --trial-mode retrain "
        f"--max-train {max_train} --trials {trials} --seed 0 --commitment-salt FILE",
        "left_out": list(VOLATILE),
        "identical_reports": not any(differ.values()),
        "same_values_on_shared_keys": differ["values"] in ([], ["/schema_version"]),
        "schema_version": {tree: reports[tree].get("schema_version") for tree in reports},
        "differing_values": differ["values"],
        "keys_only_in_base": differ["only_base"],
        "keys_only_in_this": differ["only_this"],
        "audit_cpu_s": cpu,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", default="8,64", help="trial counts, comma-separated")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-train", type=int, default=1000)
    parser.add_argument("--base", default=BASE, help="reference commit")
    parser.add_argument("--this", default="worktree", help="the tree measured: the working tree, or a commit")
    parser.add_argument("--report", action="store_true", help="also compare a whole audit's report")
    parser.add_argument("--report-trials", type=int, default=64)
    parser.add_argument("--report-base", default=None, help="the report's reference commit (default: --base)")
    parser.add_argument("--out", default=str(RESULTS), help="the JSON file written")
    args = parser.parse_args()
    counts = [int(x) for x in args.trials.split(",") if x.strip()]
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        trees = {"base": _extract(args.base, work / "base"), "this": ROOT / "src"}
        if args.this != "worktree":
            trees["this"] = _extract(args.this, work / "this")
        result = {
            "benchmark": "mlp_trials",
            "what": "retrain-mode trials of the built-in MLP (method retrain, eps 1, Adult, "
            f"max_train {args.max_train}): reference {args.base} (vmapped autograd training) "
            "with glibc's allocator as it comes and tuned, against this tree's closed-form training",
            "base_commit": args.base,
            "this": args.this if args.this == "worktree" else _commit(args.this),
            "repeats": args.repeats,
            "cpu_count": os.cpu_count(),
            "note": "shared, loaded machine: CPU time (user + sys) of the trials alone, variants interleaved",
            "trials": _timings(trees, counts, args.max_train, args.repeats),
        }
        _write(result, load_before, Path(args.out))  # kept if the report's audits fail
        if args.report:
            report_trees = dict(trees)
            if args.report_base not in (None, args.base):
                report_trees["base"] = _extract(args.report_base, work / "report_base")
            result["report"] = {
                "base_commit": args.report_base or args.base,
                **_reports(report_trees, args.report_trials, args.max_train, work),
            }
    print(_write(result, load_before, Path(args.out)))


def _write(result: dict, load_before: float, out: Path) -> str:
    result["load_average_before"], result["load_average_after"] = load_before, os.getloadavg()[0]
    text = json.dumps(result, indent=2)
    out.parent.mkdir(exist_ok=True)
    out.write_text(text + "\n")
    return text


if __name__ == "__main__":
    main()
