"""The caller's own training and unlearning code, audited on the model it trains (issue 25)."""

from __future__ import annotations

import dataclasses
import os
import random
import re
import time

import numpy as np
import pytest
import torch
from rich.console import Console
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import audit
from audit.attacking import gradient_attacks
from audit.audited_model import prepare
from audit.cli.show import summary
from audit.config import AuditConfig
from audit.findings import CODES
from audit.measurements import tensor_sha
from audit.trials import retrain_trials
from certify.errors import InvalidInput
from unlearners.caller import CallerMethod, call_seed, challenge, load_original
from unlearners.objective import Objective, init_parameters


class TinyNet(nn.Module):
    """ReLU, BatchNorm and dropout: nothing a theorem would accept, everything a pipeline uses."""

    def __init__(self, d=6, width=16, classes=2):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(d, width), nn.BatchNorm1d(width), nn.ReLU(), nn.Dropout(0.1), nn.Linear(width, classes)
        )

    def forward(self, x):
        return self.body(x)


class DigitsCNN(nn.Module):
    """A ReLU + BatchNorm CNN for the 8x8 digits."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Linear(8 * 3 * 3, 10)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def adam(model, dataset, generator, epochs=8, lr=0.03, batch=16):
    """The pipeline's training: Adam on shuffled mini-batches (the loader takes the generator)."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loader = DataLoader(
        dataset, batch_size=batch, shuffle=True, generator=generator, drop_last=len(dataset) % batch == 1
    )  # BatchNorm refuses a batch of one record
    for _ in range(epochs):
        for xb, yb in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
    return model


def keep(model, forget, retain, generator):
    """No unlearning at all."""
    return model


def from_scratch(model, forget, retain, generator):
    """Exact unlearning: the same training on the retain set from fresh weights."""
    for m in model.modules():
        if hasattr(m, "reset_parameters"):
            m.reset_parameters()
    return adam(model.train(), retain, generator)


def finetune(model, forget, retain, generator):
    """A few epochs of fine-tuning on the retain set: in between."""
    return adam(model, retain, generator, epochs=2, lr=0.005)


def blobs(n=32, d=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n + 100, d, generator=g)
    y = (X[:, 0] > 0).long()
    return {"train": (X[:n], y[:n]), "test": (X[n:], y[n:])}


def _config(**kw):
    return AuditConfig(
        **{
            "attacks": ("mia",),
            "trials": 10,
            "curve_points": 2,
            "noise_draws": 2,
            "frontier": [],
            "forget_strategy": "mislabelled",
            "forget_count": 2,
            **kw,
        }
    )


# -- the method ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fitted():
    torch.manual_seed(0)
    objective = Objective(TinyNet().double(), with_buffers=True)
    data = blobs()
    X, y = data["train"][0].double(), data["train"][1]
    theta0 = init_parameters(objective, torch.Generator().manual_seed(1))
    method = CallerMethod(objective, train=adam, unlearn=finetune, seed=7)
    return method, method.fit(X, y, theta0), theta0, (X, y)


def test_theta_holds_the_trained_batchnorm_statistics(fitted):
    method, theta, theta0, _ = fitted
    params = sum(p.numel() for p in method.objective.model.parameters())
    assert method.objective.buffer_names == ["body.1.running_mean", "body.1.running_var"]
    assert theta.shape == (params + 32,)
    stats0, stats = theta0[params:], theta[params:]
    assert torch.equal(stats0, torch.cat([torch.zeros(16), torch.ones(16)]).double())  # fresh statistics
    assert not torch.allclose(stats, stats0)  # the caller's training moved them; theta carries them


def test_each_call_is_a_pure_function_of_seed_trial_and_call(fitted):
    method, theta, theta0, (X, y) = fitted
    torch.manual_seed(123), np.random.seed(4), random.seed(5)
    before = (torch.rand(1), np.random.rand(), random.random())
    torch.manual_seed(123), np.random.seed(4), random.seed(5)
    twin = method.replica()
    again = twin.fit(X, y, theta0)
    assert (torch.rand(1), np.random.rand(), random.random()) == before  # global generators restored
    assert torch.equal(again, theta)  # dropout and shuffling drew from the seeded generators
    twin.seed_trial(7, 1)
    assert not torch.equal(twin.fit(X, y, theta0), theta)
    assert call_seed(7, 0, "train") != call_seed(7, 0, "retrain") != call_seed(7, 1, "train")


def test_unlearning_works_on_a_copy_and_retraining_restarts_from_theta0(fitted):
    method, theta, theta0, _ = fitted
    forget = torch.tensor([0, 3])
    unlearned = method.unlearn(forget)
    assert torch.equal(method._theta(method.module_), theta)  # the trained model was not touched
    assert not torch.equal(unlearned, theta)
    assert torch.equal(method.retrain(forget), method.retrain(forget))  # the same seed: the same retraining
    assert method.certify(forget, 1.0, 1e-5).kind == "none"


def test_trials_reach_train_with_the_seed_of_their_index(fitted):
    method, *_ = fitted
    seen = []

    def recording(model, dataset, generator):
        seen.append((len(dataset), generator.initial_seed()))
        return model

    probe = CallerMethod(method.objective, train=recording, unlearn=keep)
    probe.fit(method.X_, method.y_, fitted[2])
    seen.clear()
    init = lambda g: init_parameters(method.objective, g)  # noqa: E731
    trials = retrain_trials(probe, torch.tensor([0, 3]), 2, 11, init=init, sigma=0.0, first=5)
    assert trials.path == "loop"
    n = int(method.X_.shape[0])
    assert seen == [
        (n, call_seed(11, 5, "train")),
        (n - 2, call_seed(11, 5, "retrain")),
        (n, call_seed(11, 6, "train")),
        (n - 2, call_seed(11, 6, "retrain")),
    ]


def test_a_function_that_returns_no_model_is_refused(fitted):
    method, _, theta0, (X, y) = fitted
    with pytest.raises(InvalidInput, match="^train must be a function that returns the model"):
        CallerMethod(method.objective, train=lambda m, d, g: None, unlearn=keep).fit(X, y, theta0)


def test_a_challenge_submission_becomes_an_unlearn_function():
    seen = {}

    def unlearning(net, retain_loader, forget_loader, val_loader):  # the challenge's signature
        seen.update(
            retain=len(retain_loader.dataset),
            forget=len(forget_loader.dataset),
            val=len(val_loader.dataset),
            batch=retain_loader.batch_size,
        )
        with torch.no_grad():
            net.weight.zero_()  # in place, returns nothing: as submissions do
        return "ignored"

    retain, forget = TensorDataset(torch.zeros(9, 2), torch.zeros(9)), TensorDataset(torch.ones(2, 2), torch.ones(2))
    model = nn.Linear(2, 2)
    unlearn = challenge(unlearning, batch_size=4)
    assert unlearn(model, forget, retain, torch.Generator().manual_seed(0)) is model
    assert seen == {"retain": 9, "forget": 2, "val": 9, "batch": 4} and not model.weight.any()
    assert unlearn.__qualname__ == f"challenge({__name__}.{unlearning.__qualname__})"


class Branching(nn.Module):
    """Data-dependent control flow: torch.func cannot take per-record gradients through it."""

    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(6, 2)

    def forward(self, x):
        return self.layer(x) if bool(x.sum() > 0) else -self.layer(x)


def test_a_model_without_per_record_gradients_keeps_the_black_box_attacks():
    X, y = blobs()["train"][0].double(), blobs()["train"][1]
    with pytest.raises(InvalidInput, match="^model must be a module that torch.func can differentiate"):
        prepare(Branching(), X, y, 2, torch.float64, torch.device("cpu"))
    objective = prepare(Branching(), X, y, 2, torch.float64, torch.device("cpu"), own_training=True)
    assert objective.gradient_failure is not None
    gradient_attacks(("mia", "ulira", "whitebox"), objective)  # outputs and parameters only: they run
    with pytest.raises(InvalidInput, match="^attacks must be attacks that only read .* \\(relearn need its gradients"):
        gradient_attacks(("mia", "relearn"), objective)


# -- the audit -------------------------------------------------------------------------------
@pytest.mark.parametrize("unlearn, leaks", [(keep, True), (from_scratch, False)])
def test_the_audit_measures_the_callers_code(unlearn, leaks):
    """Fast twin of the CNN test below: a tiny BatchNorm MLP, ten trials, one attack."""
    report = audit.run(_config(), model=TinyNet(), data=blobs(), train=adam, unlearn=unlearn)
    assert report.method.name == "caller" and report.config.method == "caller"
    assert report.method.hyperparameters == {"train": f"{__name__}.adam", "unlearn": f"{__name__}.{unlearn.__name__}"}
    assert report.certificate.kind == "none" and report.attacks.trials.mode == "retrain"
    assert report.attacks.trials.path == "loop"
    execution, timings = report.attacks.execution, report.timings
    assert (execution.shard_size, execution.shards) == (1, 10)  # one trial per task: progress per trial
    cost = execution.cost  # the cost model: the audit's own timings times the trainings the trials need
    assert (cost.trainings, cost.unlearnings, cost.workers, cost.time_budget_s) == (20, 10, 1, None)
    assert cost.seconds_per_training == max(timings.learn_s, timings.retrain_s)
    assert cost.estimated_s == pytest.approx(20 * cost.seconds_per_training + 10 * timings.unlearn_s)
    codes = {f.code for f in report.findings}
    assert ("leak-measured" in codes) == leaks
    bound = report.attacks.attacks["mia"].bound
    assert (bound.epsilon_lower == bound.ceiling) if leaks else bound.epsilon_lower == 0


def test_train_and_unlearn_come_together_and_replace_the_method():
    with pytest.raises(InvalidInput, match="^train must be"):
        audit.run(_config(), model=TinyNet(), data=blobs(), unlearn=keep)
    with pytest.raises(InvalidInput, match="^method must be left unset with unlearn"):
        audit.run(_config(method="finetune"), model=TinyNet(), data=blobs(), train=adam, unlearn=keep)


# -- scale: one trial per task, resumable, within a time budget -------------------------------
def test_the_callers_trials_run_one_per_task_and_built_in_sharding_is_unchanged(fitted):
    from audit.attacking import NOISE_GRANULE, ExecutionSettings, shard_granule, shard_size_for
    from unlearners.registry import BUILTIN, get_method

    method, *_ = fitted
    X = method.X_
    assert shard_granule(method, "retrain", method.objective, X) == 1
    assert shard_granule(method, "noise", method.objective, X) == NOISE_GRANULE
    assert not any(get_method(name).trials_one_per_task for name in BUILTIN)  # every built-in keeps its granule
    assert shard_size_for(20, 1, ExecutionSettings(), 1) == 1  # local, no run directory: still per trial
    assert shard_size_for(20, 1, ExecutionSettings("processes", shard_size=5), 2) == 5
    assert shard_size_for(20, 64, ExecutionSettings(), 1) == 64  # a built-in: the whole role in one shard
    assert shard_size_for(1000, 64, ExecutionSettings("processes"), 2) == 128


def test_a_run_over_its_time_budget_is_refused_before_its_trials_with_the_numbers(tmp_path):
    seen = set()

    def slow(model, dataset, generator):  # the model arrives on the audit's device, in its dtype
        seen.add((next(model.parameters()).device.type, next(model.parameters()).dtype, dataset.tensors[0].device.type))
        time.sleep(0.02)
        return adam(model, dataset, generator, epochs=1)

    config = _config(time_budget=0.1, timing_repeats=1, dtype="float32", device="cpu", resume=str(tmp_path / "run"))
    with pytest.raises(InvalidInput) as refused:
        audit.run(config, model=TinyNet(), data=blobs(), train=slow, unlearn=keep)
    message = str(refused.value)
    assert re.match(
        r"time_budget must be at least what the trials would take: about [\d.]+ s \(20 trainings x "
        r"[\d.]+ s \+ 10 unlearnings x [\d.e-]+ s, from this audit's own run\), over the budget; got "
        r"0\.1\. Lower trials \(--trials\) or raise time_budget \(--time-budget\)\.$",
        message,
    ), message
    training = float(re.search(r"20 trainings x ([\d.]+) s", message).group(1))
    assert training >= 0.02 and float(re.search(r"about ([\d.]+) s", message).group(1)) >= 20 * 0.02
    assert not (tmp_path / "run").exists()  # refused before the run directory was made
    assert seen == {("cpu", torch.float32, "cpu")}


def test_the_run_key_changes_when_the_callers_code_is_edited(fitted, tmp_path):
    from audit.attacking import AttackSetup
    from audit.audited_model import load_factory
    from audit.shards import ShardContext

    method, theta, theta0, (X, y) = fitted
    source = tmp_path / "pipeline.py"
    source.write_text("def unlearn(model, forget, retain, generator):\n    return model\n")
    caller = CallerMethod(method.objective, train=adam, unlearn=load_factory(f"module:{source}:unlearn", "unlearn"))
    wrapped = CallerMethod(
        method.objective, train=adam, unlearn=challenge(load_factory(f"module:{source}:unlearn", "unlearn"))
    )
    forget = torch.tensor([0, 3])

    def key(m):
        setup = AttackSetup(
            objective=m.objective,
            method=m,
            init=None,
            X=X,
            y=y,
            forget=forget,
            X_unseen=X,
            y_unseen=y,
            theta_original=theta,
            theta_unlearned=theta,
            theta_retrained=theta,
            sigma=0.0,
            delta=1e-5,
            certified_epsilon=None,
            realized_epsilon=0.0,
            smoothness=None,
        )
        return ShardContext(
            setup=setup, attacks=(), mode="retrain", seed=0, settings={}, sizes={"trials": 10}, granule=1
        ).key()

    before = key(caller), wrapped.code_identity()
    assert key(caller) == before[0]  # the same code, the same key: a rerun resumes
    source.write_text("def unlearn(model, forget, retain, generator):\n    return model  # edited\n")
    assert key(caller) != before[0]  # same names, edited file: another run, old shards never reused
    assert wrapped.code_identity() != before[1]  # a challenge submission is followed through its adapter


def test_functions_loaded_from_a_file_travel_to_worker_processes_by_value(tmp_path):
    """A spawned worker cannot import a file loaded by path (--train module:pipeline.py:train)."""
    import pickle
    import sys

    import cloudpickle

    from audit.audited_model import load_factory

    (tmp_path / "pipeline.py").write_text("SCALE = 3\n\ndef train(model, dataset, generator):\n    return SCALE\n")
    train = load_factory(f"module:{tmp_path / 'pipeline.py'}:train", "train")
    blob = cloudpickle.dumps(train)
    loaded = sys.modules.pop(train.__module__)  # as in a fresh worker: the module is not importable
    try:
        assert pickle.loads(blob)(None, None, None) == 3
    finally:
        sys.modules[train.__module__] = loaded


# -- what issue 25 must show -----------------------------------------------------------------
@pytest.fixture(scope="module")
def digits():
    d = load_digits()
    images = torch.as_tensor(d.images[:, None] / 16.0, dtype=torch.float32)
    return images, torch.as_tensor(d.target)


def cnn_train(model, dataset, generator):
    return adam(model, dataset, generator, epochs=25, lr=0.01, batch=32)


def cnn_from_scratch(model, forget, retain, generator):
    for m in model.modules():
        if hasattr(m, "reset_parameters"):
            m.reset_parameters()
    return cnn_train(model.train(), retain, generator)


def cnn_finetune(model, forget, retain, generator):
    return adam(model, retain, generator, epochs=6, lr=0.02, batch=32)


@pytest.mark.slow
def test_a_batchnorm_cnn_trained_with_adam(digits):
    """No unlearning leaks at the ceiling, retraining from scratch shows nothing, fine-tuning sits
    in between (ranked by the attacks' AUROC)."""
    config = _config(attacks=("mia", "ulira"), trials=20, shadow_models=4, max_train=120, forget_count=3)
    reports = {
        fn.__name__: audit.run(config, model=DigitsCNN(), data=digits, train=cnn_train, unlearn=fn)
        for fn in (keep, cnn_finetune, cnn_from_scratch)
    }
    auroc = {
        name: max(float(r.attacks.attacks[a].bound.roc.auroc) for a in ("mia", "ulira")) for name, r in reports.items()
    }
    kept, scratch = reports["keep"], reports["cnn_from_scratch"]
    assert "leak-measured" in {f.code for f in kept.findings}
    ulira = kept.attacks.attacks["ulira"].bound
    assert ulira.epsilon_lower == ulira.ceiling and auroc["keep"] > 0.95
    assert all(r.bound.epsilon_lower == 0 for r in scratch.attacks.attacks.values())
    assert "leak-measured" not in {f.code for f in scratch.findings}
    assert auroc["keep"] > auroc["cnn_finetune"] > auroc["cnn_from_scratch"], auroc


@pytest.mark.slow
def test_local_and_worker_processes_give_the_same_report():
    """cloudpickle ships the caller's functions to spawned workers; each trial is a pure function of
    (seed, role, index), so everything but the execution block (and the clock) is identical."""
    config = _config(attacks=("mia", "ulira"), shadow_models=2)
    reports = [
        audit.run(
            dataclasses.replace(config, **kw),
            model=TinyNet(),
            data=blobs(),
            train=adam,
            unlearn=finetune,
            salt=b"s" * 32,
        ).to_json_dict()
        for kw in ({}, {"executor": "processes", "workers": 2})
    ]
    for report in reports:
        assert report["attacks"].pop("execution")["executor"] in ("local", "processes")
        for volatile in ("created_at", "started_at", "timings", "config", "environment"):
            report.pop(volatile)
    assert reports[0] == reports[1]


# -- the production model and the determinism check (issue 25 items 2 and 4) ---------------------
RAW = {"forget_strategy": "random", "feature_map": {"standardize": False, "row_norm": "none"}}  # D as given


def production(epochs=8, seed=3):
    """The model the pipeline trained on D itself: the same code, its own seed."""
    torch.manual_seed(seed)
    return adam(TinyNet().train(), TensorDataset(*blobs()["train"]), torch.Generator().manual_seed(seed), epochs=epochs)


def clock_seeded(model, dataset, generator):
    """Ignores the generator it is given: a loader seeded from the machine's entropy."""
    return adam(model, dataset, torch.Generator().manual_seed(int.from_bytes(os.urandom(7), "little")))


@pytest.fixture(scope="module")
def from_production():
    """The audit of the same code's production model; unlearn records what it received."""
    received = []

    def recording(model, forget, retain, generator):
        received.append({k: v.clone() for k, v in model.state_dict().items()})
        return finetune(model, forget, retain, generator)

    prod = production()
    report = audit.run(_config(**RAW), model=TinyNet(), data=blobs(), train=adam, unlearn=recording, original=prod)
    return report, prod, received


def test_the_unlearned_model_is_unlearn_on_a_copy_of_the_production_model(from_production):
    report, prod, received = from_production
    assert all(torch.equal(received[0][k].float(), v) for k, v in prod.state_dict().items())  # its weights
    objective = Objective(TinyNet().double(), with_buffers=True)
    state = {**dict(prod.named_parameters()), **dict(prod.named_buffers())}
    theta = torch.cat([state[n].detach().double().reshape(-1) for n in objective.names])
    assert report.parameters.sha256_original == tensor_sha(theta)  # the release is the production model
    assert report.parameters.sha256_unlearned != report.parameters.sha256_original
    assert report.config.original == "caller"


def test_a_production_model_of_the_same_code_sits_among_the_trials(from_production):
    report, *_ = from_production
    placed = report.attacks.production
    assert placed.trials_min < placed.loss < placed.trials_max and abs(placed.z) < 1 and not placed.outlier
    assert "original-outlier" not in {f.code for f in report.findings}
    assert report.reproducibility.equal and report.reproducibility.max_abs_difference == 0
    assert report.reproducibility.records == 32  # min(64, n)
    err = Console(record=True, width=200)
    summary(err, report)
    text = err.export_text()
    assert f"{placed.loss:.4g} ([{placed.trials_min:.4g}, {placed.trials_max:.4g}], z = {placed.z:+.2f})" in text
    assert "train twice with one seed (32 records)" in text and "identical" in text


def test_a_production_model_trained_otherwise_is_an_outlier():
    scaled = production()
    with torch.no_grad():
        scaled.body[4].weight.mul_(10)  # e.g. a much longer training: confident far beyond the trials
    report = audit.run(_config(**RAW), model=TinyNet(), data=blobs(), train=adam, unlearn=keep, original=scaled)
    placed = report.attacks.production
    assert placed.outlier and placed.z < -placed.z_limit and placed.percentile == 0
    assert "original-outlier" in {f.code for f in report.findings}
    assert CODES["original-outlier"].vacuous


def test_the_production_model_must_hold_every_parameter_and_buffer_in_its_shape(fitted, tmp_path):
    method = fitted[0]
    state = production().state_dict()
    with pytest.raises(InvalidInput, match=r"^original must be .* got \"missing \['body.1.running_mean'\]\""):
        load_original({k: v for k, v in state.items() if k != "body.1.running_mean"}, method.objective)
    with pytest.raises(InvalidInput, match=r"^original must be .*body.0.weight \(16, 7\) \(expected \(16, 6\)\)"):
        load_original({**state, "body.0.weight": torch.zeros(16, 7)}, method.objective)
    torch.save(state, tmp_path / "prod.pt")
    loaded = load_original(tmp_path / "prod.pt", method.objective)
    assert torch.equal(loaded.body[1].running_var, state["body.1.running_var"].double())
    assert int(loaded.body[1].num_batches_tracked) == int(state["body.1.num_batches_tracked"]) > 0
    with pytest.raises(InvalidInput, match="^original must be used with train and unlearn"):
        audit.run(_config(), model=TinyNet(), data=blobs(), original=production())


def test_a_training_that_ignores_its_seed_is_not_reproducible(fitted):
    method, _, theta0, (X, y) = fitted
    assert method.reproducibility(X, y, theta0, records=16) == {
        "records": 16,
        "seed": call_seed(7, 0, "train"),
        "equal": True,
        "max_abs_difference": 0.0,
    }
    report = audit.run(_config(attacks=()), model=TinyNet(), data=blobs(), train=clock_seeded, unlearn=keep)
    assert not report.reproducibility.equal and report.reproducibility.max_abs_difference > 0
    assert "not-reproducible" in {f.code for f in report.findings} and CODES["not-reproducible"].vacuous
