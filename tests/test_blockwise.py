"""noisy-ft's block-wise schedule (Dolgova & Stich, arXiv:2601.05134): the accounting against the
authors' code, the orthogonal split, the schedule and the certificate.

``authors_calculate_parameters`` below re-derives, line for line, ``calculate_parameters`` of
mlolab/blockwise-noisy-fine-tuning (commit 3d08183, src/unlearning/compute_parameters.py) for M = 2:
the Rényi order by scipy's bounded scalar search as theirs (``find_optimal_budget_parameters``),
ε_R split evenly over the blocks, ``compute_sigma`` and ``compute_number_epochs``. The toolkit
solves the order in closed form, so the two are independent computations.

Their YAML configs are not in either repository. The configurations are the budgets their plotting
code names (src/utils/visualize_plots.py:470: MNIST 3, 1, 0.5; CIFAR-10 7, 5, 3; δ = 1e-5 at :579)
with the radii of its ``visualize_sigma_by_xk`` (:237: η = 1e-4, λ = 10, C0 = 0.01, C1 = 1; K up
to 12 blocks), and one with the plain method's radii (tests/test_noisyft.py's PABI_CONFIGS[0]).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize_scalar

from certify.bounds import blockwise as bw
from certify.bounds.noisyft import gradient_clip_sigma, rho_to_epsilon
from certify.errors import InvalidInput
from unlearners.blockwise import block_split, blockwise_phase, group_sizes
from unlearners.models import build_model
from unlearners.noisyft import NoisyFineTune, project
from unlearners.objective import Objective, default_init

from synthetic import synthetic

# (budget ε, δ, blocks k, γ, λ, C0, C1)
CONFIGS = [
    (0.5, 1e-5, 2, 1e-4, 10.0, 0.01, 1.0),
    (1.0, 1e-5, 4, 1e-4, 10.0, 0.01, 1.0),
    (3.0, 1e-5, 8, 1e-4, 10.0, 0.01, 1.0),
    (7.0, 1e-5, 12, 1e-4, 10.0, 0.01, 1.0),
    (5.0, 1e-5, 3, 1e-4, 750.0, 0.01, 10.0),
]


def authors_calculate_parameters(budget, delta, blocks, gamma, lam, C0, C1):
    a = np.log(1 / delta)

    def f(q):
        if q <= 1 + 1e-9:
            return np.inf
        eps = budget - a / (q - 1)
        return np.inf if eps <= 0 else q / eps

    q = minimize_scalar(f, bounds=(1 + 1e-6, 1e6), method="bounded").x
    epsilon = (budget - a / (q - 1)) / blocks
    t = lam * C0 / C1
    sigma = (2 * q / epsilon * gamma * (2 - gamma * lam) * C0 * C1 * (2 - t)) ** 0.5
    T_ft = int(np.log(1 - t) / np.log(1 - gamma * lam) + 2 - 2) // 1 * 1
    return q, epsilon, sigma, max(2, T_ft * 2) // 2


def independent_rho(C0, C1, gamma, lam, T, sigma):
    """The per-block PABI ρ as a loop over the steps (the plain method's ``pabi_renyi``)."""
    c = 1 - gamma * lam
    shift = 2 * C0 * c**T + 2 * gamma * C1 * sum(c ** (T - t - 1) for t in range(T))
    return 0.5 * shift**2 / (sigma**2 * sum(c ** (2 * (T - t - 1)) for t in range(T)))


@pytest.mark.parametrize(("budget", "delta", "k", "gamma", "lam", "C0", "C1"), CONFIGS)
def test_the_authors_block_parameters_match_an_independent_computation(budget, delta, k, gamma, lam, C0, C1):
    ours = bw.authors_block_parameters(budget, delta, k, C0, C1, gamma, lam)
    q, eps_block, sigma, T = authors_calculate_parameters(budget, delta, k, gamma, lam, C0, C1)
    assert ours.steps == T
    assert ours.q == pytest.approx(q, rel=1e-4)  # their search stops at xatol 1e-5; q/ε_R is flat there
    assert ours.renyi_epsilon == pytest.approx(eps_block, rel=1e-6)
    assert ours.sigma == pytest.approx(sigma, rel=1e-6)


@pytest.mark.parametrize(("budget", "delta", "k", "gamma", "lam", "C0", "C1"), CONFIGS)
def test_the_certificate_at_the_authors_sigma_is_their_renyi_budget(budget, delta, k, gamma, lam, C0, C1):
    """At their σ_b and T the composed ρ is k times the loop-computed per-block ρ; at their
    real-valued optimum (c^T = 1 − λC0/C1) the order-q divergence is exactly their ε_R; at the
    integer T their code takes it is above, by the floor of T only (ρ is smallest at c^T = 1 − λC0/C1); our conversion over
    every order certifies at most their budget."""
    p = bw.authors_block_parameters(budget, delta, k, C0, C1, gamma, lam)
    rho = bw.blockwise_rho(C0, C1, gamma, lam, p.steps, p.sigma, k)
    assert rho == pytest.approx(k * independent_rho(C0, C1, gamma, lam, p.steps, p.sigma), rel=1e-9)
    t, c = lam * C0 / C1, 1 - gamma * lam
    x = 1 - t  # c^T at their real-valued T
    rho_real = (2 * C0 * x + 2 * gamma * C1 * (1 - x) / (1 - c)) ** 2 * (1 - c**2) / (2 * p.sigma**2 * (1 - x**2))
    assert k * p.q * rho_real == pytest.approx(k * p.renyi_epsilon, rel=1e-9)
    assert -1e-12 <= p.q * rho / (k * p.renyi_epsilon) - 1 < 1e-3  # T = 105: 2e-6; T = 17: 3e-4
    eps = bw.blockwise_account(delta=delta, sigma=p.sigma, steps=p.steps, gamma=gamma, lam=lam, C0=C0, C1=C1, blocks=k)
    assert eps.epsilon <= budget and eps.epsilon == pytest.approx(rho_to_epsilon(rho, delta)[0])


def test_the_older_snapshots_sigma_is_half_and_gives_four_times_the_renyi_budget():
    """unlearn-blocks-2025/block-wise-noisy-fine-tuning @6bcb521 (compute_parameters.py:18-22, "WAS FIXED")."""
    budget, delta, k, gamma, lam, C0, C1 = CONFIGS[1]
    p = bw.authors_block_parameters(budget, delta, k, C0, C1, gamma, lam)
    older = (gamma * (2 - gamma * lam) * C0 * C1 * (2 - lam * C0 / C1)) ** 0.5 / (2 * p.renyi_epsilon / p.q) ** 0.5
    assert older == pytest.approx(p.sigma / 2, rel=1e-12)
    rho = bw.blockwise_rho(C0, C1, gamma, lam, p.steps, older, k)
    assert p.q * rho == pytest.approx(4 * k * p.renyi_epsilon, rel=1e-4)


@pytest.mark.parametrize("k", [1, 3, 10])
def test_sigma_solved_for_epsilon_certifies_it_and_is_sqrt_k_times_the_plain_one(k):
    args = (1.0, 1e-5, 0.5, 1.0, 0.1, 1.0, 20)
    sigma = bw.blockwise_sigma(*args, k)
    assert sigma == pytest.approx(math.sqrt(k) * gradient_clip_sigma(*args), rel=1e-12)
    acc = bw.blockwise_account(delta=1e-5, sigma=sigma, steps=20, gamma=0.1, lam=1.0, C0=0.5, C1=1.0, blocks=k)
    assert acc.epsilon == pytest.approx(1.0, rel=1e-6) and acc.epsilon <= 1.0


def test_bad_block_counts_and_radii_are_refused():
    with pytest.raises(InvalidInput, match="blocks"):
        bw.blockwise_rho(1.0, 1.0, 0.1, 1.0, 5, 1.0, 0)
    with pytest.raises(InvalidInput, match="lam"):
        bw.authors_block_parameters(1.0, 1e-5, 2, 1.0, 1.0, 0.1, 2.0)  # lam*C0/C1 >= 1


# -- the split and the schedule ----------------------------------------------------------------------
def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)).double()


def test_the_split_is_an_orthogonal_partition_cut_along_the_authors_axes():
    obj = Objective(_net())
    split = block_split(obj, obj.names, 3, seed=0, like=torch.zeros(1, dtype=torch.float64))
    x = torch.randn(obj.dim, dtype=torch.float64)
    assert torch.allclose(split.unrotate(split.rotate(x)), x, atol=1e-12)
    assert split.rotate(x).norm() == pytest.approx(float(x.norm()))  # an isometry
    # Linear weights along the input axis (3 -> 1 each, 8 -> 3, 3, 2), vectors along their only axis
    assert torch.bincount(split.block).tolist() == [8 + 3 + 6 + 1, 8 + 3 + 6 + 1, 8 + 2 + 4]
    assert group_sizes(8, 3) == [3, 3, 2]
    # the blocks span orthogonal subspaces: pieces of x in different blocks are orthogonal
    u = split.rotate(x)
    parts = [split.unrotate(torch.where(split.block == i, u, 0.0)) for i in range(3)]
    assert abs(float(parts[0] @ parts[1])) < 1e-12 and torch.allclose(sum(parts), x, atol=1e-12)


def test_each_block_runs_its_steps_while_the_others_stay_frozen():
    obj = Objective(_net())
    split = block_split(obj, obj.names, 3, seed=0, like=torch.zeros(1, dtype=torch.float64))
    seen: list[torch.Tensor] = []

    def grad(x, batch):
        seen.append(split.rotate(x))
        return torch.ones_like(x)

    x = torch.randn(obj.dim, dtype=torch.float64)
    out = blockwise_phase(
        split,
        x,
        grad,
        [None] * 6,
        sigma=0.1,
        gamma=0.1,
        lam=1.0,
        clip=lambda g: project(g, 1.0),
        gen=torch.Generator().manual_seed(0),
    )
    seen.append(split.rotate(out))
    for step in range(6):
        moved = (seen[step + 1] - seen[step]).abs() > 1e-12  # above the rotations' rounding
        assert torch.equal(moved, split.block == step // 2)  # block 0, 0, 1, 1, 2, 2


@pytest.fixture(scope="module")
def block_method():
    X, y = synthetic(n=40, d=3, seed=6)
    obj = Objective(build_model("logreg", 3, 2).double())
    method = NoisyFineTune(
        obj,
        variant="gradient-clip",
        steps=5,
        eta=0.5,
        C0=1.0,
        C1=1.0,
        gamma=0.1,
        lam=0.5,
        noisy_steps=4,
        schedule="blockwise",
        blocks=2,
        post_steps=0,
        restart="none",
    )
    method.fit(X, y, default_init(obj, torch.Generator().manual_seed(0)))
    return method


def test_the_blockwise_certificate_states_the_blocks_and_is_not_conditional(block_method):
    cert = block_method.certify([0, 5, 9], 1.0, 1e-5)
    constants = {c.name: c for c in cert.constants}
    assert constants["blocks"].value == 2.0 and constants["blocks"].provenance == "enforced"
    assert not cert.conditional and cert.valid and cert.epsilon == pytest.approx(1.0, rel=1e-6)
    frozen = next(c for c in cert.conditions if c.name == "blocks frozen while another runs")
    assert frozen.met and "derived here" in frozen.detail
    assert "Dolgova & Stich" in cert.theorem and "Mironov 2017 Prop. 1" in cert.theorem
    assert block_method.sigma_ == pytest.approx(
        math.sqrt(2) * block_method.replica(schedule="joint", blocks=1).sigma_, rel=1e-9
    )


def test_rerun_trials_rerun_the_blockwise_phase(block_method):
    from audit.trials import rerun_trials

    assert block_method.replica(target_epsilon=0.5).sigma_ > block_method.sigma_  # each epsilon its own sigma

    trials = rerun_trials(block_method, [0, 5, 9], 3, seed=1)
    assert trials.path == "loop" and len({tuple(r.tolist()) for r in trials.unlearned}) == 3


@pytest.mark.slow  # 2 s: 60 re-runs per world; the fast lane keeps test_rerun_trials_rerun_the_blockwise_phase
def test_a_planted_violation_of_the_blockwise_run_is_caught(block_method):
    from test_noisyft import _game

    eps, planted = _game(100.0, seed=2, n_trials=60, fitted_method=block_method)
    assert planted > eps
    eps, honest = _game(1.0, seed=2, n_trials=60, fitted_method=block_method)
    assert honest <= eps


@pytest.mark.slow  # 0.9 s: the frontier's runs take the loop path; the fast lane checks sigma's solve below
def test_the_frontier_resolves_the_blockwise_sigma_at_each_epsilon(block_method):
    from audit.measurements import frontier

    forget = torch.tensor([0, 5, 9])
    sigma = block_method.sigma_
    front = frontier(
        block_method,
        block_method.certify(forget, 1.0, 1e-5),
        forget,
        block_method.unlearn(forget),
        epsilons=(0.5, 2.0),
        delta=1e-5,
        mechanism="analytic",
        objective=block_method.objective,
        test=(block_method.X_, block_method.y_),
        draws=2,
        gen=torch.Generator().manual_seed(0),
    )
    assert front.applicable and front.points[0].sigma > sigma > front.points[1].sigma
    assert block_method.sigma_ == sigma
