"""noisy-ft: the accounting against the authors' own code, and the method's certificate.

The ``authors_*`` functions below re-derive, line for line, the accounting of
stair-lab/certified-unlearning-neural-networks-icml-2025 (commit 9fdf670): ``theta_epsilon``
(src/utils/dp.py), ``pabi_renyi`` (visualisation/viz_accountants.py), ``Trainer.unlearn_sigma_t``
(constant noise schedule, λ > 0), the PABI step count and the model-clipping recursion of
``Trainer.dp_accountant`` (src/training/trainer.py). They use scipy's erf, not the toolkit's
log-space Gaussian curve, so the comparison is between two independent computations.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special as scsp
import torch
from scipy.optimize import minimize_scalar

from certify.bounds import noisyft as nft
from certify.errors import InvalidInput
from certify.rdp import rdp_to_epsilon
from unlearners.models import build_model
from unlearners.noisyft import RESTARTS, NoisyFineTune, project
from unlearners.objective import Objective, default_init

from synthetic import synthetic

# (lr γ, weight_decay λ, init_model_clip C0, grad_clip C1) of the authors' budget-curve PABI configs
PABI_CONFIGS = [(1e-4, 750, 0.01, 10.0), (1e-4, 10, 0.01, 100.0), (1e-3, 50, 0.1, 100.0), (1e-2, 50, 1.0, 10.0)]
# (sigma, model_clip C2) of their contractive-coefficients (model clipping) configs, δ = 1e-5, ε = 1
CC_CONFIGS = [(0.01, 0.001), (0.5, 0.625), (0.5, 0.975), (0.2, 0.2), (0.01, 0.01)]


def authors_theta_epsilon(epsilon, r):
    def Q(x):
        return (1 - scsp.erf(x / np.sqrt(2))) / 2

    return Q(epsilon / r - r / 2) - np.exp(epsilon) * Q(epsilon / r + r / 2)


def authors_pabi_steps(C0, C1, lr, wd):
    steps = np.ceil(C0 / (C1 * lr))
    smaller = np.ceil(np.log(wd * 2 * C0 / C1) / (lr * wd))
    return int(smaller) if 0 < smaller < steps else int(steps)


def authors_sigma(C0, C1, lr, wd, T, eps_renyi=1.0):
    common = (1 - lr * wd) ** T
    var = (2 * C0 * common + (2 * C1 / wd) * (1 - common)) ** 2
    var *= lr * wd * (2 - lr * wd) / (2 * eps_renyi * (1 - common**2))
    return math.sqrt(var)


def authors_pabi_renyi(T, sigma, C, lr, C_0, l2_reg):
    factor = 1 - lr * l2_reg
    sum_1 = np.sum([factor ** (T - t - 1) for t in range(T)])
    sum_2 = np.sum([factor ** (2 * (T - t - 1)) for t in range(T)])
    return 0.5 * ((2 * C_0 * factor**T + 2 * lr * C * sum_1) ** 2) / (sigma**2 * sum_2)


def authors_deltas(epsilon, sigma, C2, T):
    current, out = 1.0, [1.0]  # init_sigma = 0 in every config: delta starts at 1
    for _ in range(T):
        if current == 0.0:  # underflowed: their loop has stopped long before
            out.append(0.0)
            continue
        tilde = np.log(1 + (np.exp(epsilon) - 1) / current)
        current *= authors_theta_epsilon(tilde, 2 * C2 / sigma)
        out.append(current)
    return out


def continuous_epsilon(rho, delta):
    """min over real α > 1 of αρ − (log δ + log α)/(α − 1) + log((α − 1)/α), by scipy."""

    def h(la):  # α = 1 + e^la
        return (
            (math.exp(la) + 1) * rho
            - (math.log(delta) + math.log1p(math.exp(la))) / math.exp(la)
            + math.log(math.exp(la) / (math.exp(la) + 1))
        )

    res = minimize_scalar(h, bounds=(-10, 15), method="bounded", options={"xatol": 1e-12})
    return float(res.fun)


@pytest.mark.parametrize("lr,wd,C0,C1", PABI_CONFIGS)
def test_gradient_clip_rho_is_the_authors_pabi_renyi_at_their_sigma(lr, wd, C0, C1):
    T = authors_pabi_steps(C0, C1, lr, wd)
    sigma = authors_sigma(C0, C1, lr, wd, T)
    ours = nft.gradient_clip_rho(C0, C1, lr, wd, T, sigma)
    assert ours == pytest.approx(authors_pabi_renyi(T, sigma, C1, lr, C0, wd), rel=1e-9)
    assert ours == pytest.approx(1.0, rel=1e-9)  # their sigma targets Renyi epsilon 1


@pytest.mark.parametrize("lr,wd,C0,C1", PABI_CONFIGS)
def test_the_certificate_epsilon_matches_an_independent_computation_on_the_authors_configs(lr, wd, C0, C1):
    T = authors_pabi_steps(C0, C1, lr, wd)
    X, y = synthetic(n=40, d=3, seed=1)
    obj = Objective(build_model("logreg", 3, 2).double())
    method = NoisyFineTune(
        obj, variant="gradient-clip", steps=2, eta=0.1, C0=C0, C1=C1, gamma=lr, lam=wd, noisy_steps=T
    )
    method.fit(X, y, default_init(obj, torch.Generator().manual_seed(0)))
    cert = method.certify([1, 2], 1.0, 1e-5)
    rho = authors_pabi_renyi(T, method.sigma_, C1, lr, C0, wd)
    assert cert.valid and cert.kind == "training-noise"
    assert cert.epsilon == pytest.approx(continuous_epsilon(rho, 1e-5), rel=1e-6)
    assert cert.epsilon == pytest.approx(1.0, rel=1e-6)  # sigma was solved for epsilon = 1
    # the deliberate deviation: the authors' conversion drops the order from alpha*rho
    assert nft.authors_renyi2dp(rho, 1e-5) < cert.epsilon


@pytest.mark.parametrize("sigma,C2", CC_CONFIGS)
def test_model_clip_recursion_and_stopping_step_match_the_authors(sigma, C2):
    ours = nft.model_clip_deltas(1.0, sigma, C2, 60)
    theirs = authors_deltas(1.0, sigma, C2, 60)
    stop = next(t for t, d in enumerate(theirs) if d <= 1e-5)
    assert stop >= 1
    assert next(t for t, d in enumerate(ours) if d <= 1e-5) == stop
    for a, b in zip(ours[: stop + 1], theirs[: stop + 1]):
        assert a == pytest.approx(b, rel=1e-6, abs=1e-300)
    # the certificate's epsilon at their stopping step: the smallest epsilon their recursion accepts
    cert_eps = nft.account(
        "model-clip", delta=1e-5, sigma=sigma, steps=stop, gamma=0.01, lam=0.0, C0=7.0, C1=1.0, C2=C2
    ).epsilon
    lo, hi = 1e-12, 1.0
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if authors_deltas(mid, sigma, C2, stop)[-1] <= 1e-5 else (mid, hi)
    assert cert_eps == pytest.approx(hi, rel=1e-6)


@pytest.mark.parametrize("rho", [1e-4, 0.03, 2.0])
def test_rho_to_epsilon_is_the_continuous_minimum(rho):
    assert nft.rho_to_epsilon(rho, 1e-5)[0] == pytest.approx(continuous_epsilon(rho, 1e-5), rel=1e-9)


@pytest.mark.slow  # Opacus's import alone takes seconds
def test_rho_to_epsilon_is_never_above_the_toolkit_rdp_conversion_on_its_grid():
    grid = np.asarray(nft.ORDERS)
    for rho in (1e-4, 0.03, 2.0):
        theirs = rdp_to_epsilon(grid * rho, grid, 1e-5)[0]
        assert nft.rho_to_epsilon(rho, 1e-5)[0] <= theirs + 1e-12
        assert nft.rho_to_epsilon(rho, 1e-5)[0] == pytest.approx(theirs, rel=1e-4)


@pytest.mark.parametrize("variant", nft.VARIANTS)
def test_sigma_solved_for_epsilon_certifies_that_epsilon(variant):
    kw = dict(gamma=0.05, lam=1.0, C0=5.0, C1=1.0, C2=5.0)
    if variant == "gradient-clip":
        sigma = nft.gradient_clip_sigma(0.5, 1e-5, kw["C0"], kw["C1"], kw["gamma"], kw["lam"], 30)
    else:
        sigma = nft.model_clip_sigma(0.5, 1e-5, kw["C2"], 30)
    eps = nft.account(variant, delta=1e-5, sigma=sigma, steps=30, **kw).epsilon
    assert eps <= 0.5 * (1 + 1e-6) and eps == pytest.approx(0.5, rel=1e-6)
    smaller = nft.account(variant, delta=1e-5, sigma=sigma * 0.99, steps=30, **kw).epsilon
    assert smaller > 0.5  # less noise certifies less


def test_lambda_and_step_size_that_do_not_shrink_are_refused():
    with pytest.raises(InvalidInput, match="lam"):
        nft.gradient_clip_rho(1.0, 1.0, 0.5, 2.0, 10, 1.0)


@pytest.fixture(scope="module")
def fitted():
    X, y = synthetic(n=60, d=3, seed=2)
    obj = Objective(build_model("logreg", 3, 2).double())
    method = NoisyFineTune(
        obj,
        variant="gradient-clip",
        steps=10,
        eta=0.5,
        C0=0.5,
        C1=1.0,
        gamma=0.1,
        noisy_steps=8,
        batch_size=16,
        post_steps=3,
    )
    method.fit(X, y, default_init(obj, torch.Generator().manual_seed(0)))
    return method


def test_unlearning_is_reproducible_and_the_reference_draws_other_noise(fitted):
    forget = [0, 5, 9]
    a, b = fitted.unlearn(forget), fitted.unlearn(forget)
    assert torch.equal(a, b)
    assert not torch.equal(a, fitted.retrain(forget))


def test_the_noisy_phase_reads_only_the_retain_set(fitted):
    """Changing the forgotten records changes nothing U computes (the start is fixed)."""
    X_r, y_r = fitted.retained(torch.tensor([0, 5, 9]))
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    one = fitted.noisy_finetune(fitted.theta_, X_r, y_r, role="x", generator=g1)
    fitted_X = fitted.X_.clone()
    fitted.X_[[0, 5, 9]] += 100.0  # other forgotten records
    try:
        X_r2, y_r2 = fitted.retained(torch.tensor([0, 5, 9]))
        two = fitted.noisy_finetune(fitted.theta_, X_r2, y_r2, role="x", generator=g2)
    finally:
        fitted.X_ = fitted_X
    assert torch.equal(one, two)


def test_the_certificate_shows_the_radii_sigma_and_the_conversion(fitted):
    cert = fitted.certify([0, 5, 9], 1.0, 1e-5)
    names = {c.name for c in cert.constants}
    assert {"sigma", "T", "gamma", "lambda", "C0", "C1", "rho", "epsilon"} <= names
    assert all(c.provenance in ("enforced", "analytic") for c in cert.constants)
    assert not cert.conditional and cert.valid and cert.sigma == 0.0
    assert any("assumption on the loss" == c.name for c in cert.conditions)
    assert "Balle et al. 2020" in cert.theorem and cert.epsilon == pytest.approx(1.0, rel=1e-6)
    assert fitted.certify([0, 5, 9], 1.0, 1e-7).epsilon > 1.0  # sigma was solved at delta = 1e-5
    # the post-processing it names is what ran: no normalisation layer in a logistic regression
    assert "rescaled to their norms at theta0" in cert.theorem and "normalisation" not in cert.theorem


def test_projection_is_onto_the_ball():
    v = torch.tensor([3.0, 4.0])
    assert torch.allclose(project(v, 1.0), torch.tensor([0.6, 0.8]))
    assert torch.equal(project(v, 10.0), v)


def _bn_net():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(3, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 2)
    ).double()


def _adam(model, dataset, generator):
    """A user training: Adam (written out: torch.optim's first step imports torch._dynamo, seconds),
    shuffled mini-batches, BatchNorm in train mode."""
    X, y = dataset.tensors
    params = list(model.parameters())
    m1, m2 = [torch.zeros_like(p) for p in params], [torch.zeros_like(p) for p in params]
    for t, batch in enumerate(torch.randperm(len(y), generator=generator).split(16), start=1):
        model.zero_grad()
        torch.nn.functional.cross_entropy(model(X[batch]), y[batch]).backward()
        with torch.no_grad():
            for p, a, b in zip(params, m1, m2):
                a.mul_(0.9).add_(0.1 * p.grad)
                b.mul_(0.999).add_(0.001 * p.grad**2)
                p -= 0.05 * (a / (1 - 0.9**t)) / ((b / (1 - 0.999**t)).sqrt() + 1e-8)
    return model


@pytest.fixture(scope="module")
def bn_fitted():
    X, y = synthetic(n=64, d=3, seed=4)
    obj = Objective(_bn_net(), with_buffers=True)
    method = NoisyFineTune.from_training(
        obj, train=_adam, variant="gradient-clip", C0=2.0, C1=1.0, gamma=0.1, noisy_steps=4, batch_size=16, post_steps=3
    )
    method.fit(
        X,
        y,
        torch.cat(
            [p.detach().reshape(-1) for p in obj.model.parameters()]
            + [obj.model.get_buffer(n).reshape(-1) for n in obj.buffer_names]
        ),
    )
    return method


def test_a_caller_trained_batchnorm_model_gets_a_certificate(bn_fitted):
    forget = [1, 2, 3]
    released = bn_fitted.unlearn(forget)
    cert = bn_fitted.certify(forget, 1.0, 1e-5)
    assert cert.valid and cert.epsilon == pytest.approx(1.0, rel=1e-6)
    assert any(c.name == "buffers" and "recomputed" in c.detail for c in cert.conditions)
    assert released.shape == bn_fitted.theta_.shape and not torch.equal(released, bn_fitted.retrain(forget))


def test_the_released_buffers_never_depend_on_the_forgotten_records(bn_fitted):
    """The start's buffers (which A(D) computed with Z) and the forgotten records themselves can be
    anything: the released parameters and buffers do not change."""
    forget = torch.tensor([1, 2, 3])
    obj = bn_fitted.objective
    P = obj.dim - sum(n for name, n in zip(obj.names, obj.numels) if name in obj.buffer_names)
    X_r, y_r = bn_fitted.retained(forget)
    start = bn_fitted.theta_
    other = start.clone()
    other[P:] = torch.linspace(-5, 5, obj.dim - P, dtype=other.dtype)  # buffers computed on another D
    one = bn_fitted.noisy_finetune(start, X_r, y_r, role="x", generator=torch.Generator().manual_seed(5))
    two = bn_fitted.noisy_finetune(other, X_r, y_r, role="x", generator=torch.Generator().manual_seed(5))
    assert torch.equal(one, two)
    assert not torch.equal(one[P:], start[P:])  # recomputed, not the start's


def test_production_weights_are_adopted_as_the_start(bn_fitted):
    X, y = bn_fitted.X_, bn_fitted.y_
    twin = bn_fitted.replica()
    theta = twin.adopt(
        _adam(_bn_net().train(), torch.utils.data.TensorDataset(X, y), torch.Generator()), X, y, bn_fitted.theta0_
    )
    assert theta.shape == bn_fitted.theta_.shape
    assert twin.certify([0], 1.0, 1e-5).valid and twin.unlearn([0]).shape == theta.shape


# -- the measurement game: re-run the noisy phase from the fixed starts ------------------------------
def _game(sigma_divisor: float, seed: int, n_trials: int, fitted_method) -> tuple[float, float]:
    """(certified ε, attack's lower bound) of one game: the two starts at opposite ends of the
    C0-ball (the worst case the theorem covers), ``n_trials`` re-runs per world, a white-box
    direction from the first half of the runs, Clopper–Pearson on the second half."""
    from attacks.epsilon import clopper_pearson_epsilon
    from audit.trials import rerun_trials

    method = fitted_method
    forget = torch.tensor([0, 5, 9])
    cert = method.certify(forget, 1.0, 1e-5)
    honest = method.sigma_
    edge = torch.zeros_like(method.theta_)
    edge[0] = method.C0
    try:
        method.sigma_ = honest / sigma_divisor  # a planted bug: the run uses less noise than certified
        trials = rerun_trials(method, forget, n_trials, seed, starts=(edge, -edge), batched=False)
    finally:
        method.sigma_ = honest
    half = n_trials // 2
    direction = trials.unlearned[:half].mean(0) - trials.retrained[:half].mean(0)
    direction = direction / direction.norm()
    su = (trials.unlearned[half:] @ direction).numpy()
    sr = (trials.retrained[half:] @ direction).numpy()
    return cert.epsilon, clopper_pearson_epsilon(su, sr, delta=1e-5, seed=seed).epsilon_lower


@pytest.fixture(scope="module")
def game_method():
    X, y = synthetic(n=40, d=3, seed=6)
    obj = Objective(build_model("logreg", 3, 2).double())
    method = NoisyFineTune(obj, variant="gradient-clip", steps=5, eta=0.5, C0=1.0, C1=1.0, gamma=0.1, noisy_steps=5)
    method.fit(X, y, default_init(obj, torch.Generator().manual_seed(0)))
    return method


def test_rerun_trials_redraw_the_noisy_run_from_fixed_starts(game_method):
    from audit.trials import rerun_trials

    trials = rerun_trials(game_method, [0, 5, 9], 4, seed=1, batched=False)
    assert trials.mode == "rerun" and trials.sigma == 0.0 and trials.unlearned.shape == (4, game_method.objective.dim)
    assert len({tuple(r.tolist()) for r in trials.unlearned}) == 4  # every trial a fresh noisy run
    assert torch.equal(trials.unlearned, rerun_trials(game_method, [0, 5, 9], 4, seed=1, batched=False).unlearned)
    assert torch.equal(trials.initial[1], game_method.start_reference([0, 5, 9]))


@pytest.mark.slow  # torch.func's first vmap imports torch._dynamo: seconds in a fresh process
@pytest.mark.parametrize("variant", nft.VARIANTS)
def test_batched_reruns_are_the_loop_runs(game_method, variant):
    from audit.trials import rerun_trials

    method = game_method.replica(variant=variant)
    method.fit(game_method.X_, game_method.y_, game_method.theta0_)
    loop = rerun_trials(method, [0, 5, 9], 5, seed=3, batched=False)
    batch = rerun_trials(method, [0, 5, 9], 5, seed=3)
    assert batch.path == "vmap" and loop.path == "loop"
    assert torch.allclose(batch.unlearned, loop.unlearned, atol=1e-10)
    assert torch.allclose(batch.retrained, loop.retrained, atol=1e-10)


def test_a_planted_violation_is_caught_and_the_honest_run_is_not_refuted(game_method):
    eps, planted = _game(100.0, seed=2, n_trials=60, fitted_method=game_method)
    assert planted > eps  # sigma / 100: the attack's lower bound exceeds the certified epsilon
    eps, honest = _game(1.0, seed=2, n_trials=60, fitted_method=game_method)
    assert honest <= eps


def test_compare_runs_noisy_ft_by_default_on_networks_only():
    from types import SimpleNamespace

    from audit.comparing import DEFAULT_METHODS, default_methods

    assert default_methods(SimpleNamespace(model="mlp")) == (*DEFAULT_METHODS, "noisy-ft")
    assert default_methods(SimpleNamespace(model="logreg")) == DEFAULT_METHODS  # the linear methods' suffice


def test_auto_trial_mode_is_rerun_for_a_method_that_reruns_and_rerun_is_refused_elsewhere():
    from audit.trials import choose_mode

    assert choose_mode("auto", 0.0, "training-noise", reruns=True)[0] == "rerun"
    assert choose_mode("auto", 0.0, "training-noise")[0] == "retrain"
    with pytest.raises(InvalidInput, match="trial_mode"):
        choose_mode("rerun", 0.0, "training-noise")


def test_the_frontier_reruns_the_noisy_run_at_each_epsilon(fitted):
    from audit.measurements import frontier

    forget = torch.tensor([0, 5, 9])
    cert = fitted.certify(forget, 1.0, 1e-5)
    sigma = fitted.sigma_
    front = frontier(
        fitted,
        cert,
        forget,
        fitted.unlearn(forget),
        epsilons=(0.5, 2.0),
        delta=1e-5,
        mechanism="analytic",
        objective=fitted.objective,
        test=(fitted.X_, fitted.y_),
        draws=2,
        gen=torch.Generator().manual_seed(0),
    )
    assert front.applicable and [p.epsilon for p in front.points] == [0.5, 2.0]
    assert front.points[0].sigma > sigma > front.points[1].sigma  # each epsilon its own sigma
    assert fitted.sigma_ == sigma and fitted.target_epsilon == 1.0  # the run's own option is restored


def test_a_public_backbone_is_not_noised_and_the_certificate_says_it_is_assumed():
    X, y = synthetic(n=40, d=3, seed=7)
    obj = Objective(build_model("logreg", 3, 2).double())
    public, private = obj.names[0], obj.names[1]  # the weights declared public: a frozen "backbone"
    method = NoisyFineTune(
        obj, variant="gradient-clip", steps=3, eta=0.5, C0=1.0, gamma=0.1, noisy_steps=3, public=[public]
    )
    method.fit(X, y, default_init(obj, torch.Generator().manual_seed(0)))
    released = obj.unflatten(method.unlearn([0, 1]))
    start = obj.unflatten(method.theta_)
    assert torch.equal(released[public], start[public]) and not torch.equal(released[private], start[private])
    cert = method.certify([0, 1], 1.0, 1e-5)
    assert cert.conditional and any(c.name == "public parameters" for c in cert.conditions)
    assert any("never trained on the private data" in a for a in cert.assumptions)
    with pytest.raises(InvalidInput, match="public"):
        method.set_option("public", ("nonexistent",))
    with pytest.raises(InvalidInput, match="public"):
        method.set_option("public", tuple(obj.names))  # nothing left to fine-tune


def test_the_configuration_takes_the_callers_training_only_for_a_method_that_takes_any_training():
    from audit import AuditConfig

    config = AuditConfig(method="noisy-ft", train="module:mymod:train", original="weights.pt")
    assert config.train == "module:mymod:train" and config.method == "noisy-ft"
    with pytest.raises(InvalidInput, match="unlearn"):
        AuditConfig(method="r2d", train="module:mymod:train")
    with pytest.raises(InvalidInput, match="original"):
        AuditConfig(method="noisy-ft", original="weights.pt")  # the reference needs the training too


@pytest.mark.slow
def test_an_audit_of_noisy_ft_on_the_callers_relu_batchnorm_adam_training():
    import audit
    from audit import AuditConfig

    def net():
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Flatten(), torch.nn.Linear(2, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 2)
        )

    report = audit.run(
        AuditConfig(
            method="noisy-ft",
            max_train=300,
            trials=20,
            attacks=("mia",),
            curve_points=2,
            noise_draws=2,
            frontier=(1.0,),
            method_options={"variant": "gradient-clip", "noisy_steps": 3, "post_steps": 5},
        ),
        model=net(),
        train=_adam,
    )
    assert report.certificate.kind == "training-noise" and report.certificate.valid
    assert report.certificate.epsilon == pytest.approx(1.0, rel=1e-6)
    assert report.attacks.trials.mode == "rerun" and report.verdict == "consistent"
    assert any(c.name == "buffers" and "recomputed" in c.detail for c in report.certificate.conditions)


def test_the_noise_free_phase_can_be_the_callers_own_training(bn_fitted):
    forget = torch.tensor([1, 2, 3])
    twin = bn_fitted.replica(post_train=True)
    twin.fit(bn_fitted.X_, bn_fitted.y_, bn_fitted.theta0_)
    X_r, y_r = twin.retained(forget)
    one = twin.noisy_finetune(twin.theta_, X_r, y_r, role="x", generator=torch.Generator().manual_seed(1))
    other = twin.theta_.clone()
    P = bn_fitted.objective.dim - sum(
        n
        for name, n in zip(bn_fitted.objective.names, bn_fitted.objective.numels)
        if name in bn_fitted.objective.buffer_names
    )
    other[P:] = 3.0  # the start's buffers do not reach the release
    two = twin.noisy_finetune(other, X_r, y_r, role="x", generator=torch.Generator().manual_seed(1))
    assert torch.equal(one, two) and twin.certify(forget, 1.0, 1e-5).valid


# -- the noise-free phase's start (restart): post-processing -----------------------------------------
def test_the_restart_of_the_noise_free_phase_does_not_change_the_certificate(bn_fitted):
    """restart only post-processes the noisy model: every number and condition of the certificate is
    the same, and its theorem line names the post-processing."""
    forget = [1, 2, 3]
    certs = {r: bn_fitted.replica(restart=r) for r in RESTARTS}
    for method in certs.values():
        method.fit(bn_fitted.X_, bn_fitted.y_, bn_fitted.theta0_)
    certs = {r: m.certify(forget, 1.0, 1e-5) for r, m in certs.items()}
    plain = certs["none"]
    for cert in certs.values():
        assert cert.epsilon == plain.epsilon and cert.delta == plain.delta and cert.valid
        assert [(c.name, c.value, c.provenance) for c in cert.constants] == [
            (c.name, c.value, c.provenance) for c in plain.constants
        ]
        assert [(c.name, c.met, c.detail) for c in cert.conditions] == [
            (c.name, c.met, c.detail) for c in plain.conditions
        ]
    assert certs["none"].theorem.endswith("; then 3 noise-free steps on D \\ Z (post-processing)")
    assert certs["normalisation"].theorem == plain.theorem.replace(
        "; then ", "; then the normalisation layers' scales and shifts set to 1 and 0, then "
    )
    assert certs["init-scale"].theorem == plain.theorem.replace(
        "; then ",
        "; then the parameter tensors rescaled to their norms at theta0 and the normalisation layers' "
        "scales and shifts set to 1 and 0, then ",
    )


def test_the_number_of_noise_free_steps_does_not_change_the_certificate(game_method):
    """post_steps (A's steps by default, half of them, none) only post-processes the noisy model:
    sigma, epsilon, every constant and condition are the same; the theorem line names the count."""
    forget = [0, 5, 9]
    certs = {}
    for post in (None, math.ceil(game_method.steps / 2), 0):
        method = game_method.replica(post_steps=post)
        method.fit(game_method.X_, game_method.y_, game_method.theta0_)
        certs[post] = (method.sigma_, method.certify(forget, 1.0, 1e-5))
    sigma, plain = certs[None]
    for s, cert in certs.values():
        assert s == sigma and cert.epsilon == plain.epsilon and cert.delta == plain.delta and cert.valid
        assert [(c.name, c.value) for c in cert.constants] == [(c.name, c.value) for c in plain.constants]
        assert [(c.name, c.met, c.detail) for c in cert.conditions] == [
            (c.name, c.met, c.detail) for c in plain.conditions
        ]
    assert plain.theorem.endswith(f"then {game_method.steps} noise-free steps on D \\ Z (post-processing)")
    assert certs[3][1].theorem == plain.theorem.replace(f"then {game_method.steps} noise-free", "then 3 noise-free")


def test_init_scale_restores_the_initial_scales_and_keeps_the_noisy_directions(bn_fitted):
    """Without noise-free steps the release is the restarted noisy model: BatchNorm's scale 1 and
    shift 0, every other tensor the noisy one rescaled to its norm in theta0."""
    obj = bn_fitted.objective
    X_r, y_r = bn_fitted.retained(torch.tensor([1, 2, 3]))
    runs = {}
    for restart in ("none", "init-scale"):
        method = bn_fitted.replica(restart=restart, post_steps=0)
        method.fit(bn_fitted.X_, bn_fitted.y_, bn_fitted.theta0_)
        runs[restart] = obj.unflatten(
            method.noisy_finetune(method.theta_, X_r, y_r, role="x", generator=torch.Generator().manual_seed(7))
        )
    init = obj.unflatten(bn_fitted.theta0_)
    assert torch.equal(runs["init-scale"]["1.weight"], torch.ones(8, dtype=torch.float64))
    assert torch.equal(runs["init-scale"]["1.bias"], torch.zeros(8, dtype=torch.float64))
    assert (runs["none"]["1.weight"] - 1).abs().min() > 0.5  # the noisy phase leaves BatchNorm's scale far from 1
    for name in ("0.weight", "0.bias", "3.weight", "3.bias"):
        noisy, scaled = runs["none"][name], runs["init-scale"][name]
        assert float(scaled.norm()) == pytest.approx(float(init[name].norm()), rel=1e-12)
        assert torch.allclose(scaled / scaled.norm(), noisy / noisy.norm(), atol=1e-12)


# -- the noise-free phase's length with the caller's training (post_fraction): post-processing ---------
def test_post_fraction_is_the_share_of_the_retain_set_the_callers_training_reads(bn_fitted):
    """With post_train the caller's training reads a random ceil(post_fraction * |D \\ Z|) records of
    D \\ Z, never a forgotten one; post_fraction = 1 hands it all of D \\ Z in order."""
    forget = torch.tensor([1, 2, 3])
    X_r, y_r = bn_fitted.retained(forget)
    seen: list[torch.Tensor] = []

    def train(model, dataset, generator):
        seen.append(dataset.tensors[0])
        return _adam(model, dataset, generator)

    for fraction in (0.5, 1.0):
        method = NoisyFineTune.from_training(
            bn_fitted.objective, train=train, **{**bn_fitted.options, "post_train": True, "post_fraction": fraction}
        )
        method.theta0_ = bn_fitted.theta0_
        method.noisy_finetune(bn_fitted.theta_, X_r, y_r, role="x", generator=torch.Generator().manual_seed(3))
    half, whole = seen
    assert len(half) == math.ceil(0.5 * len(X_r)) and torch.equal(whole, X_r)
    read = {tuple(r.tolist()) for r in half}
    assert read <= {tuple(r.tolist()) for r in X_r} and len(read) == len(half)  # distinct records of D \ Z
    assert not read & {tuple(r.tolist()) for r in bn_fitted.X_[forget]}


def test_post_fraction_does_not_change_the_certificate(bn_fitted):
    """The share the noise-free phase reads is post-processing: every number and condition is the
    same; the theorem line names the share."""
    forget = [1, 2, 3]
    certs = {}
    for fraction in (1.0, 0.25):
        method = bn_fitted.replica(post_train=True, post_fraction=fraction)
        method.fit(bn_fitted.X_, bn_fitted.y_, bn_fitted.theta0_)
        certs[fraction] = method.certify(forget, 1.0, 1e-5)
    whole, quarter = certs[1.0], certs[0.25]
    assert quarter.epsilon == whole.epsilon and quarter.valid and whole.valid
    assert [(c.name, c.value) for c in quarter.constants] == [(c.name, c.value) for c in whole.constants]
    assert [(c.name, c.met, c.detail) for c in quarter.conditions] == [
        (c.name, c.met, c.detail) for c in whole.conditions
    ]
    assert quarter.theorem == whole.theorem.replace(
        "your own training on D \\ Z", "your own training on D \\ Z (a random 25% of its records)"
    )
