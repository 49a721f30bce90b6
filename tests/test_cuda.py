"""The CUDA paths: run wherever a GPU exists, skipped with the reason where there is none.

An audit on ``device = cuda`` keeps its trials on the GPU (the report says where they were), its
shards give the same scores whatever their size, and the Ray executor asks one GPU per shard."""

from __future__ import annotations

import json

import pytest
import torch

import audit
from audit.config import AuditConfig

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(
        not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda.is_available() is False on this machine)"
    ),
]
SMALL = dict(device="cuda", max_train=400, steps=20, trials=150, curve_points=2, noise_draws=2)


def _attacks(**config) -> tuple[dict, str]:
    section = audit.run(AuditConfig(**config), salt=b"c" * 32).to_json_dict()["attacks"]
    section.pop("execution")
    return section, json.dumps(section, sort_keys=True)


@pytest.mark.parametrize("mode", ["noise", "retrain"])
def test_trials_run_on_the_gpu_and_do_not_depend_on_the_shard_size(mode):
    whole, text = _attacks(**SMALL, trial_mode=mode)
    assert whole["trials"]["device"].startswith("cuda")
    assert _attacks(**SMALL, trial_mode=mode, shard_size=64)[1] == text
