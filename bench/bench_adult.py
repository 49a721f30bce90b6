"""Benchmark: the vectorised Adult parser against the former line-by-line one.

Both turn the two decompressed, SHA-256-checked Adult files into the loader's arrays (float64
features: 6 continuous columns and the one-hot columns of the 8 categorical ones, int64 labels,
vocabularies): the former one split every line in Python, built a list per record and then
columns of Python strings; the new one (:func:`audit.datasets.loaders.adult.adult_arrays`) works
on the bytes with numpy. The former implementation is kept below, verbatim, as the baseline.

Measured in the same run, for each implementation:

* ``seconds``: median wall time of ``--repeats`` runs (``time.perf_counter``, after a warm-up),
  without tracemalloc (which slows Python-level allocation and would favour the numpy path);
* ``peak_transient_mb``: the tracemalloc peak of one run (numpy registers its buffers with
  tracemalloc), less the bytes of the arrays it returns, i.e. what the parse holds on top of its
  result;
* ``result_mb``: the bytes of the returned arrays (X is most of it).

Also the whole ``load_dataset("adult")`` (read, SHA-256, parse, split, feature map) with the new
parser, and a check that both implementations give identical arrays. Prints one JSON object and
writes it to bench/results/adult.json.

Usage: python bench/bench_adult.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from audit.datasets import load_dataset  # noqa: E402
from audit.datasets.loaders import adult as adult_loader  # noqa: E402
from audit.datasets.loaders.adult import (  # noqa: E402
    ADULT_CATEGORICAL,
    ADULT_COLUMNS,
    ADULT_CONTINUOUS,
    ADULT_SHA256,
    adult_arrays,
)


def former_arrays(data: dict[str, bytes]) -> dict:
    """The former parser and column building (parse_adult_lines + load), without groups."""
    rows: list[list[str]] = []
    for filename, raw in data.items():
        for line in raw.decode("ascii").splitlines():
            s = line.strip()
            if not s or s.startswith("|"):
                continue
            parts = s.split(", ")
            if len(parts) != len(ADULT_COLUMNS) or any(p != p.strip() for p in parts):
                parts = [p.strip() for p in s.split(",")]
            if len(parts) != len(ADULT_COLUMNS):
                raise ValueError(f"{filename}: {len(parts)} fields")
            income = parts[-1].rstrip(".")
            if income not in ("<=50K", ">50K"):
                raise ValueError(f"{filename}: {parts[-1]!r}")
            parts[-1] = income
            rows.append(parts)
    n = len(rows)
    cols = {c: [r[i] for r in rows] for i, c in enumerate(ADULT_COLUMNS)}
    y = np.fromiter((v == ">50K" for v in cols["income"]), dtype=np.int64, count=n)
    blocks = [np.array([cols[c] for c in ADULT_CONTINUOUS], dtype=np.float64).T]
    vocab = {}
    for c in ADULT_CATEGORICAL:
        values = sorted(set(cols[c]))
        vocab[c] = values
        index = {v: i for i, v in enumerate(values)}
        codes = np.fromiter((index[v] for v in cols[c]), dtype=np.int64, count=n)
        onehot = np.zeros((n, len(values)), dtype=np.float64)
        onehot[np.arange(n), codes] = 1.0
        blocks.append(onehot)
    return {"X": np.hstack(blocks), "y": y, "vocabulary": vocab}


def new_arrays(data: dict[str, bytes]) -> dict:
    return adult_arrays(data)


def _result_bytes(out: dict) -> int:
    return int(out["X"].nbytes + out["y"].nbytes)


def _measure(fn, data: dict[str, bytes], repeats: int) -> dict:
    fn(data)  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(data)
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    out = fn(data)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"seconds": statistics.median(times), "times_s": times,
            "peak_transient_mb": (peak - _result_bytes(out)) / 1e6, "peak_mb": peak / 1e6,
            "result_mb": _result_bytes(out) / 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    folder = Path(str(adult_loader.adult_dir()))
    data = {name: gzip.decompress((folder / f"{name}.gz").read_bytes()) for name in ADULT_SHA256}
    before = _measure(former_arrays, data, args.repeats)
    after = _measure(new_arrays, data, args.repeats)
    a, b = former_arrays(data), new_arrays(data)
    identical = bool(np.array_equal(a["X"], b["X"]) and np.array_equal(a["y"], b["y"])
                     and a["vocabulary"] == b["vocabulary"])

    load_dataset("adult", seed=0)  # warm-up (imports, caches)
    load_times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        load_dataset("adult", seed=0)
        load_times.append(time.perf_counter() - start)
    tracemalloc.start()
    load_dataset("adult", seed=0)
    _, load_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    result = {
        "benchmark": "adult parser: bytes of adult.data + adult.test -> X, y, vocabularies",
        "input_mb": sum(len(v) for v in data.values()) / 1e6,
        "records": int(b["y"].size),
        "features": int(b["X"].shape[1]),
        "identical_arrays": identical,
        "former_line_parser": before,
        "vectorised_parser": after,
        "speedup": before["seconds"] / after["seconds"],
        "transient_peak_ratio": before["peak_transient_mb"] / max(after["peak_transient_mb"], 1e-9),
        "load_dataset_adult": {"seconds": statistics.median(load_times), "times_s": load_times,
                               "tracemalloc_peak_mb": load_peak / 1e6},
        "repeats": args.repeats,
        "numpy": np.__version__,
    }
    text = json.dumps(result, indent=2)
    print(text)
    out = Path(__file__).resolve().parent / "results" / "adult.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(text + "\n")


if __name__ == "__main__":
    main()
