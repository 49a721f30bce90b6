"""One contract for every registered method (after scikit-learn's ``check_estimator``).

Every built-in method (and any plug-in installed next to them) must: declare options whose
defaults meet their constraints and refuse the values their constraints refuse, naming the
option; refuse unknown options; validate forget sets once (distinct in-range integers, masks
refused); issue certificates whose kind matches whether the method has a theorem; certify a
forget set the same way whatever ran before; and honour the capabilities it declares.
"""

from __future__ import annotations

import math

import pytest
import torch

from certify.errors import InvalidInput
from unlearners.models import build_model
from unlearners.objective import Objective, default_init
from unlearners.registry import available_methods

from synthetic import synthetic

#: Options that keep each method fast on a 160-record problem (the contract, not the paper).
FAST = {
    "r2d": {"steps": 20, "rewind": 10},
    "retrain": {"steps": 20},
    "finetune": {"steps": 20},
    "neggrad": {"steps": 20},
    "noop": {"steps": 20},
    "cns": {"steps": 40, "depth": 40, "solver": "dense"},
    "curenewton": {"steps": 20},
    "newton": {},
    "ngd": {},
    "ngd-minmax": {},
    "dpsgd": {"epochs": 1, "batch_size": 40},
    "hf": {"epochs": 2},
    "noisy-ft": {"steps": 20, "noisy_steps": 5},
}
METHODS = sorted(available_methods())
#: The same, with the methods whose every fit costs seconds (DP-SGD: Opacus and its accountant) marked
#: slow, for the tests that fit afresh; the tests on the shared fitted instance keep every method fast.
REFITTED = [pytest.param(name, marks=pytest.mark.slow) if name == "dpsgd" else name for name in METHODS]
FORGET = torch.tensor([3, 17, 40])


def _fitted(name: str):
    X, y = synthetic(n=160, d=4, seed=11)
    obj = Objective(build_model("logreg", 4, 2).double())
    method = available_methods()[name](obj, **FAST.get(name, {}))
    if type(method).capabilities.deletable_before_training:
        method.declare_deletable(torch.arange(160))
    method.fit(X, y, default_init(obj, torch.Generator().manual_seed(0)))
    return method


@pytest.fixture(scope="module")
def fitted():
    cache: dict = {}

    def get(name):
        if name not in cache:
            cache[name] = _fitted(name)
        return cache[name]

    return get


def test_every_builtin_method_is_registered():
    assert set(FAST) <= set(METHODS)


@pytest.mark.parametrize("name", METHODS)
def test_declared_options_defaults_meet_their_constraints_and_bad_values_are_refused(name):
    cls = available_methods()[name]
    obj = Objective(build_model("logreg", 4, 2).double())
    names = [p.name for p in cls.hyperparameters]
    assert len(names) == len(set(names)), "an option declared twice"
    for p in cls.hyperparameters:
        assert p.help and p.constraint.words
        assert p.check(p.default) == p.default or p.default is None or isinstance(p.default, tuple), p.name
        for bad in p.constraint.invalid():
            with pytest.raises(InvalidInput) as exc:
                cls(obj, **{**FAST.get(name, {}), p.name: bad})
            assert exc.value.field.split(".")[0] in (p.name, "method_options"), (p.name, bad, exc.value.field)
    with pytest.raises(InvalidInput) as exc:
        cls(obj, not_an_option_xyz=1)
    assert exc.value.field == "method_options" and "not_an_option_xyz" in str(exc.value)


@pytest.mark.parametrize("name", METHODS)
def test_forget_sets_are_validated_once_for_every_method(name, fitted):
    method = fitted(name)
    mask = torch.zeros(160, dtype=torch.bool)
    mask[:3] = True
    for call in (method.unlearn, method.retrain, lambda f: method.certify(f, 1.0, 1e-5)):
        for bad in (
            mask,
            torch.tensor([1, 1]),
            torch.tensor([160]),
            torch.tensor([-1]),
            torch.tensor([]),
            torch.tensor([0.5]),
        ):
            with pytest.raises(InvalidInput) as exc:
                call(bad)
            assert exc.value.field == "forget"


@pytest.mark.parametrize("name", METHODS)
def test_certificates_say_what_kind_of_guarantee_they_are(name, fitted):
    method = fitted(name)
    cert = method.certify(FORGET, 1.0, 1e-5)
    assert cert.method == name
    if not type(method).certified:
        assert cert.kind == "none" and cert.epsilon is None and cert.sensitivity is None and not cert.valid
    else:
        assert cert.kind in ("exact", "output-noise", "training-noise")
        assert cert.epsilon is not None and (cert.epsilon > 0 or cert.kind == "exact")
        if cert.kind == "output-noise" and cert.valid:
            assert math.isfinite(cert.sigma) and cert.sensitivity is not None
            if cert.sensitivity > 0:
                assert cert.sigma > 0
        if cert.kind == "exact":  # identical releases: epsilon 0, not the epsilon requested
            assert cert.sigma == 0 and cert.sensitivity == 0 and cert.epsilon == 0
    for c in cert.conditions:
        assert c.detail and isinstance(c.met, bool)
        if not c.met:
            assert not cert.valid and c.detail in cert.warnings
    if cert.conditional and cert.kind != "none":
        assert any("conditional" in w for w in cert.warnings)
    with pytest.raises(InvalidInput):
        method.certify(FORGET, 0.0, 1e-5)
    with pytest.raises(InvalidInput):
        method.certify(FORGET, 1.0, 1.5)


@pytest.mark.parametrize("name", REFITTED)
def test_a_certificate_does_not_depend_on_what_ran_before(name):
    fresh = _fitted(name)
    first = fresh.certify(FORGET, 1.0, 1e-5).to_dict()
    busy = _fitted(name)
    busy.unlearn(torch.tensor([5, 6, 7, 8, 9]))
    busy.retrain(torch.tensor([5, 6]))
    busy.certify(torch.tensor([1]), 1.0, 1e-5)
    busy.unlearn(FORGET)
    assert busy.certify(FORGET, 1.0, 1e-5).to_dict() == first


@pytest.mark.parametrize("name", METHODS)
def test_declared_capabilities_are_honoured(name, fitted):
    method = fitted(name)
    caps = type(method).capabilities
    replica = method.replica()
    assert type(replica) is type(method) and replica.options.keys() == method.options.keys()
    if caps.knob is not None:
        option = next(p for p in type(method).hyperparameters if p.name == caps.knob.option)
        grid = method.knob_grid(3)
        assert len(grid) >= 2
        for value in grid:
            option.check(value)
        if not caps.knob.refits:
            value = grid[0]
            assert torch.equal(
                method.unlearn(FORGET, **{caps.knob.option: method.options[caps.knob.option]}), method.unlearn(FORGET)
            )
            method.certify(FORGET, 1.0, 1e-5, **{caps.knob.option: value})
    else:
        with pytest.raises(InvalidInput):
            method.unlearn(FORGET, rewind=1)
    if caps.batched_training:
        thetas0 = torch.stack([default_init(method.objective, torch.Generator().manual_seed(s)) for s in (1, 2)])
        original, unlearned, retrained = method.train_many(thetas0, FORGET)
        for i in range(2):
            one = method.replica()
            torch.testing.assert_close(original[i], one.fit(method.X_, method.y_, thetas0[i]), rtol=0, atol=1e-9)
            torch.testing.assert_close(unlearned[i], one.unlearn(FORGET), rtol=0, atol=1e-9)
            torch.testing.assert_close(retrained[i], one.retrain(FORGET), rtol=0, atol=1e-9)
    if caps.reruns:  # re-runs from the fixed starts: the same runs as unlearn and retrain draw, given their noise
        start_u, start_r = method.rerun_starts(FORGET)
        rows, path = method.rerun(start_u, FORGET, [torch.Generator().manual_seed(s) for s in (1, 2)], batched=False)
        assert path == "loop" and rows.shape == (2, method.objective.dim) and not torch.equal(rows[0], rows[1])
        assert torch.equal(start_r, method.rerun_starts(FORGET)[1])
    if caps.checkpoint_recovery:
        assert "applicable" in method.checkpoint_recovery(
            method.unlearn(torch.tensor([0]), **({caps.knob.option: 0} if caps.knob and not caps.knob.refits else {}))
        )


@pytest.mark.parametrize("name", REFITTED)
def test_sequential_requests_are_served_and_certified(name):
    method = _fitted(name)
    releases = method.serve_requests([torch.tensor([3]), torch.tensor([17, 40])], 1.0, 1e-5)
    assert len(releases) == 2
    for theta, cert in releases:
        assert theta.shape == (method.objective.dim,) and cert.method == name
    with pytest.raises(InvalidInput):
        _fitted(name).serve_requests([torch.tensor([3]), torch.tensor([3])], 1.0, 1e-5)
