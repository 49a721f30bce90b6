"""The contract every registered attack keeps with the sharded audit (attacks.base, audit.shards).

In the spirit of scikit-learn's ``check_estimator``: one set of checks run on every built-in and
optional attack, on a small real model (softmax regression), with trials that are noise draws
and with trials that each retrain:

* features are **row-pure**: the features of a stack are the concatenation of those of any cut
  of it into blocks, and a block padded with copies of its last model gives the same rows once
  trimmed (the audit computes features in padded blocks, on other machines);
* ``score`` of the features of each world, computed block by block on the shared inputs alone,
  is ``run`` of the whole inputs, bit for bit;
* no built-in attack ships its models: each implements ``features`` and ``score``, and its
  features hold no parameter-sized array. The one declared exception is the white-box attack in
  retrain mode, whose direction is estimated from trials (attacks.whitebox).
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
import torch

from attacks.base import AttackInputs, ModelRows
from attacks.registry import BUILTIN, OPTIONAL, get_attack
from unlearners.models import build_model
from unlearners.objective import Objective, default_init
from unlearners.training import gradient_descent

from synthetic import synthetic

NAMES = tuple(BUILTIN) + tuple(OPTIONAL)
MODES = ("noise", "retrain")
#: Models per block, as the audit's granule but small, so that 9 trials make blocks of 4, 4, 1 + 3 copies.
GRANULE = 4


@functools.cache
def _trained() -> tuple:
    # 4 forgotten records: too few for the population MIA's 5 folds, which keeps its score cheap here
    X, y = synthetic(n=40, d=4, classes=3, seed=11)
    X_unseen, y_unseen = synthetic(n=30, d=4, classes=3, seed=12)
    forget = torch.arange(4)
    keep = torch.ones(40, dtype=torch.bool)
    keep[forget] = False
    objective = Objective(build_model("logreg", 4, 3).double())
    theta0 = default_init(objective, torch.Generator().manual_seed(0))
    theta_d = gradient_descent(objective, theta0, X, y, eta=2.0, steps=50)[0]
    theta_r = gradient_descent(objective, theta0, X[keep], y[keep], eta=2.0, steps=50)[0]
    return objective, X, y, forget, X_unseen, y_unseen, theta_d, theta_r


@functools.cache
def _inputs(mode: str) -> AttackInputs:
    """9 trials per world and 4 shadow models per side, released with noise σ = 0.3; in retrain
    mode every trial has its own noiseless model (a perturbation standing in for a training)."""
    objective, X, y, forget, X_unseen, y_unseen, theta_d, theta_r = _trained()
    gen = torch.Generator().manual_seed(3)
    sigma = 0.3

    def draws(theta: torch.Tensor, k: int, scale: float) -> torch.Tensor:
        return theta + scale * torch.randn(k, theta.numel(), generator=gen, dtype=theta.dtype)

    if mode == "noise":
        nu, nr = theta_d, theta_r
        ru, rr = draws(theta_d, 9, sigma), draws(theta_r, 9, sigma)
    else:
        nu, nr = draws(theta_d, 9, 0.1), draws(theta_r, 9, 0.1)
        ru, rr = (
            nu + sigma * torch.randn(nu.shape, generator=gen, dtype=nu.dtype),
            nr + sigma * torch.randn(nr.shape, generator=gen, dtype=nr.dtype),
        )
    return AttackInputs(
        objective=objective,
        X=X,
        y=y,
        forget=forget,
        X_unseen=X_unseen,
        y_unseen=y_unseen,
        theta_original=theta_d,
        theta_unlearned=theta_d,
        theta_retrained=theta_r,
        released_unlearned=ru,
        released_retrained=rr,
        noiseless_unlearned=nu,
        noiseless_retrained=nr,
        sigma=sigma,
        delta=1e-5,
        seed=7,
        settings={"relearn_max_steps": 20, "rmia_population": 16},
        shadows_in=draws(theta_d, 4, sigma),
        shadows_out=draws(theta_r, 4, sigma),
        smoothness=2.0,
    )


def _rows(rows: ModelRows, a: int, b: int, pad_to: int | None = None) -> ModelRows:
    """Models a .. b - 1 of ``rows``, padded with copies of the last to ``pad_to`` models."""

    def cut(t: torch.Tensor | None) -> torch.Tensor | None:
        if t is None:
            return None
        t = t[a:b]
        extra = 0 if pad_to is None else pad_to - t.shape[0]
        return torch.cat([t, t[-1:].expand(extra, -1)]) if extra > 0 else t

    return ModelRows(cut(rows.released), cut(rows.noiseless))


def _worlds(cls: type, inputs: AttackInputs) -> dict[str, ModelRows]:
    """The models of each world the audit would hand ``cls``: shadow models only to an attack
    that needs them."""
    return {
        world: rows
        for world, rows in inputs.worlds().items()
        if "shadows" in cls.needs or not world.startswith("shadows")
    }


def _blocked(attack: Any, shared: AttackInputs, rows: ModelRows) -> dict[str, np.ndarray]:
    """Features as the audit computes them: blocks of GRANULE models, the last padded, trimmed."""
    parts = []
    for a in range(0, len(rows), GRANULE):
        real = min(GRANULE, len(rows) - a)
        got = attack.features(shared, _rows(rows, a, a + real, pad_to=GRANULE))
        parts.append({name: np.asarray(value)[:real] for name, value in got.items()})
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}


def _equal(a: Any, b: Any) -> bool:
    """Exactly equal JSON-like data (NaN equals NaN; arrays compared element for element)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b, equal_nan=True)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", NAMES)
def test_features_are_row_pure(name, mode):
    cls, inputs = get_attack(name), _inputs(mode)
    attack, shared = cls(), inputs.without_models()
    for world, rows in _worlds(cls, inputs).items():
        n = len(rows)
        whole = attack.features(shared, rows)
        blocked = _blocked(attack, shared, rows)
        assert whole and all(np.asarray(v).shape[0] == n for v in whole.values()), (world, whole.keys())
        cut = n // 3
        halves = [attack.features(shared, _rows(rows, 0, cut)), attack.features(shared, _rows(rows, cut, n))]
        padded = attack.features(shared, _rows(rows, cut, n, pad_to=n))  # n - cut models and `cut` copies
        for key, value in whole.items():
            value = np.asarray(value)
            assert np.array_equal(value, np.concatenate([np.asarray(h[key]) for h in halves])), (world, key)
            assert np.array_equal(value[cut:], np.asarray(padded[key])[: n - cut]), (world, key)
            assert np.array_equal(value, blocked[key]), (world, key)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", NAMES)
def test_score_of_gathered_features_is_run(name, mode):
    cls, inputs = get_attack(name), _inputs(mode)
    if "shadows" not in cls.needs:  # the audit makes shadow models only for the attacks that need them
        inputs = replace(inputs, shadows_in=None, shadows_out=None)
    shared = inputs.without_models()
    scored = cls().score(shared, {world: _blocked(cls(), shared, rows) for world, rows in _worlds(cls, inputs).items()})
    ran = cls().run(inputs)
    assert np.array_equal(scored.scores_unlearned, ran.scores_unlearned)
    assert np.array_equal(scored.scores_retrained, ran.scores_retrained)
    assert scored.scores_unlearned.shape == (9,) or (name == "whitebox" and mode == "retrain")
    assert _equal(scored.details, ran.details)


@pytest.mark.parametrize("name", NAMES)
def test_built_in_attacks_ship_features_not_models(name):
    cls = get_attack(name)
    assert not cls.ships_models()
    d = _inputs("noise").theta_original.numel()
    for mode in MODES:
        inputs = _inputs(mode)
        shared = inputs.without_models()
        for world, rows in _worlds(cls, inputs).items():
            feats = cls().features(shared, rows)
            parameter_sized = sorted(k for k, v in feats.items() if np.asarray(v).shape[1:] == (d,))
            if name == "whitebox" and mode == "retrain":
                # the declared exception: the direction is estimated from (half of) the trials
                assert parameter_sized == ["noiseless", "released"], world
            else:
                assert parameter_sized == [], (mode, world, parameter_sized)


def test_an_attack_that_scores_nothing_is_refused_when_defined():
    from attacks.base import Attack

    with pytest.raises(TypeError, match="implements neither run nor features and score"):
        type("Empty", (Attack,), {"name": "empty", "title": "Empty", "description": "nothing"})
    with pytest.raises(TypeError, match="implements features without score"):
        type(
            "Half",
            (Attack,),
            {"name": "half", "title": "Half", "description": "x", "features": lambda self, inputs, models: {}},
        )
