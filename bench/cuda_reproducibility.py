"""Is the caller's CNN training bit-reproducible on this GPU? Run on a lent GPU machine (bench/device_check.sh).

The same audit of tests/test_caller.py's BatchNorm CNN (Adam, mini-batches, fine-tuning as the
unlearning) twice in one process on ``--device cuda``, then once with ``torch.use_deterministic_algorithms``:
prints the audit's own determinism check (``report.reproducibility``), its findings, and whether the two
runs' attack sections are identical. Prints one JSON object.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests"), str(ROOT / "bench")]
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # what deterministic cuBLAS requires

import torch  # noqa: E402
from bench_caller import digits  # noqa: E402

import audit  # noqa: E402
from audit.config import AuditConfig  # noqa: E402
from test_caller import DigitsCNN, cnn_finetune, cnn_train  # noqa: E402


def once(config: AuditConfig, data) -> dict:
    report = audit.run(config, model=DigitsCNN(), data=data, train=cnn_train, unlearn=cnn_finetune,
                       salt=b"s" * 32).to_json_dict()
    section = report["attacks"]
    section.pop("execution")
    return {"reproducibility": report.get("reproducibility"), "findings": [f["code"] for f in report["findings"]],
            "original_sha256": report["parameters"]["sha256_original"],
            "section": json.dumps(section, sort_keys=True)}


def main() -> None:
    data = digits()
    config = AuditConfig(attacks=("mia",), trials=10, curve_points=2, noise_draws=2, frontier=[],
                         forget_strategy="mislabelled", forget_count=3, max_train=120, timing_repeats=1,
                         device="cuda")
    a, b = once(config, data), once(config, data)
    torch.use_deterministic_algorithms(True)
    c, d = once(config, data), once(config, data)
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "default": {"check": a["reproducibility"], "findings": a["findings"],
                       "two_runs_identical": a["section"] == b["section"] and a["original_sha256"] == b["original_sha256"]},
           "deterministic_algorithms": {"check": c["reproducibility"], "findings": c["findings"],
                                        "two_runs_identical": c["section"] == d["section"]
                                        and c["original_sha256"] == d["original_sha256"]}}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
