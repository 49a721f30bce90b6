"""--dtype: the precision audit each method declares, ``auto``'s choice, and float32 runs that repeat."""

import copy
import dataclasses

import pytest
import torch

from audit import AuditConfig
from audit.attacking import precheck_run
from audit.methods import run_dtype
from audit.pipeline import run
from audit.report.html import render_html
from unlearners.base import Unlearner
from unlearners.models import build_model
from unlearners.objective import Objective, default_init
from unlearners.registry import BUILTIN, get_method

from synthetic import synthetic

#: The methods whose certificate reads no trained quantity: ``auto`` trains them in float32.
FLOAT32 = {"dpsgd", "retrain", "finetune", "neggrad", "noop"}
#: Cheap options for the certificate comparison (DP-SGD: full batches, q = 1, whose RDP is in closed form:
#: subsampled batches cost seconds of accounting per fit, none of it touched by the dtype).
OPTIONS = {"dpsgd": {"epochs": 2, "batch_size": 80, "accountant": "rdp"}, "newton": {}}


def test_every_builtin_method_declares_its_precision_audit():
    """The table of the docs page: which methods auto trains in float32, each with what its
    certificate reads (the base class's default means 'not audited')."""
    for name in BUILTIN:
        precision = get_method(name).precision
        assert precision is not Unlearner.precision and precision.reads, name
        assert precision.auto == ("float32" if name in FLOAT32 else "float64"), name
    assert {name for name in BUILTIN if get_method(name).precision.float32} == FLOAT32


@pytest.fixture(scope="module")
def logistic():
    X, y = synthetic(n=80, d=4, seed=2)
    X = X.float().double()  # data that float32 holds exactly, as the loaders store it
    objective = Objective(build_model("logreg", 4, 2).double())
    return objective, X, y, default_init(objective, torch.Generator().manual_seed(0)), torch.arange(1)


def _certificate(name, objective, X, y, theta0, forget, dtype):
    model = Objective(copy.deepcopy(objective.model).to(dtype))  # the run's module, in the run's dtype
    method = get_method(name)(model, **OPTIONS.get(name, {"steps": 20}))
    method.fit(X.to(dtype), y, theta0.to(dtype))
    return method.certify(forget, 1.0, 1e-5)


@pytest.mark.parametrize("name", sorted(FLOAT32))
def test_float32_training_leaves_the_certificate_unchanged(name, logistic):
    """What auto relies on: the certificate of a float32 fit is the float64 fit's, bit for bit
    (ε, σ and every constant: η from L computed in float64, the accountant's z, q and T)."""
    c32, c64 = (_certificate(name, *logistic, dtype) for dtype in (torch.float32, torch.float64))
    assert (c32.kind, c32.epsilon, c32.sigma) == (c64.kind, c64.epsilon, c64.sigma)
    assert [(k.name, k.value) for k in c32.constants] == [(k.name, k.value) for k in c64.constants]


def test_a_residual_certificate_changes_at_float32(logistic):
    """Why Newton removal stays float64: its data-dependent β is a gradient residual at the
    unlearned model, and float32 moves it by far more than float64's rounding."""
    c32, c64 = (_certificate("newton", *logistic, dtype) for dtype in (torch.float32, torch.float64))
    assert c32.sigma != pytest.approx(c64.sigma, rel=1e-6)  # measured: 1e-5 relative; float64's error: about 1e-16


def test_auto_reads_the_precision_audit():
    config = AuditConfig(dtype="auto")
    assert run_dtype(dataclasses.replace(config, method="retrain"))[0] == "float32"
    dtype, reason = run_dtype(dataclasses.replace(config, method="r2d"))
    assert dtype == "float64" and reason.startswith("auto: float64, because the certificate of r2d reads")
    assert run_dtype(AuditConfig())[0] == "float64"  # the default stays float64
    dtype, reason = run_dtype(dataclasses.replace(config, dtype="float32", method="newton"))
    assert dtype == "float32" and "its precision audit does not cover" in reason


def test_the_memory_precheck_sizes_trials_in_the_dtype_auto_resolves_to(monkeypatch):
    """Float32 trials take half the memory: the check before training sizes them in the run's dtype."""
    import audit.attacking

    checked = []
    monkeypatch.setattr(audit.attacking, "check_trial_memory", lambda **kw: checked.append(str(kw["dtype"])))
    for method in ("retrain", "r2d"):
        precheck_run(AuditConfig(dtype="auto", method=method, attacks=("whitebox",)), n_params=3)
    assert checked == ["float32", "float64"]


def _comparable(report):
    out = report.to_json_dict()
    for volatile in ("created_at", "started_at", "timings"):
        out.pop(volatile)
    return out


@pytest.fixture(scope="module")
def float32_reports():
    """Two runs of one seed under dtype = auto, which trains retrain in float32."""
    config = AuditConfig(
        method="retrain", dtype="auto", steps=5, attacks=(), curve_points=2, noise_draws=1, frontier=()
    )
    X, y = synthetic(n=300, d=4, seed=1)
    return [run(config, data=(X.numpy(), y.numpy()), salt=b"s" * 32) for _ in range(2)]


def test_same_seed_and_dtype_give_the_same_report(float32_reports):
    """The environment records the dtype auto chose; two float32 runs of one seed are identical."""
    first, second = float32_reports
    assert first.environment.dtype == "float32" and first.environment.dtype_reason.startswith("auto: float32")
    assert first.config.dtype == "auto"
    assert _comparable(first) == _comparable(second)


def test_the_page_shows_the_dtype_and_why(float32_reports):
    page = render_html(float32_reports[0])
    assert "float32</span>: auto: float32, because the certificate of retrain reads no trained quantity" in page
