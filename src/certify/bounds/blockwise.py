"""Accounting of block-wise noisy fine-tuning (Dolgova & Stich, "Sequential Subspace Noise
Injection Prevents Accuracy Collapse in Certified Unlearning", arXiv:2601.05134; code:
mlolab/blockwise-noisy-fine-tuning, commit 3d08183682d7a9ba97a7c97bbacaea1d0f68df0d, cited below
as ``file:line``). The paper's text is not reachable here, so its theorem numbers are not cited;
the statement below is derived here and checked against the authors' code (tests/test_blockwise.py).

**The schedule** (``src/training/training_block_unlearning.py``). The parameters are split into k
mutually orthogonal subspaces S_1, …, S_k (a random orthonormal basis per layer, cut into k
groups: ``src/unlearning/decompose_matrix_on_blocks.py:70-87``, ``model_with_blocks.py:12-35``).
The blocks are processed one after another (``training_block_unlearning.py:123-137``); while
block i runs, every other block is frozen (``model_with_blocks.py:519-533``) and block i takes T
gradient-clipping noisy steps on the retain set, each a clipped step with weight decay followed
by a noise step (M = 2, the default when the config names no M: ``compute_parameters.py:138``;
``training_block_unlearning.py:53-63``, ``training_unlearning.py:29-42``):

    x_i ← (1 − γλ) x_i − γ Π_{C1}(P_i ∇L(x)) + P_i ξ,   ξ ~ N(0, σ_b² I),

with P_i the orthogonal projection onto S_i. Noise-free fine-tuning follows (post-processing).

**Per block.** Condition on the released values y_1, …, y_{i−1} of the blocks already processed
(the same in both worlds). Block i's phase is then a Markov chain in S_i from P_i x_0, with
‖P_i x_0‖ ≤ ‖x_0‖ ≤ C0 after the start's projection, whose update map in world w is
φ_w(x) = c·x − γ Π_{C1}(P_i ∇L(y_{<i}, x, P_{>i} x_0^{(w)})), c = 1 − γλ. The blocks not yet
processed still hold the start of world w, so the two worlds' maps differ; but the privacy
amplification by iteration argument (Feldman, Mironov, Talwar & Thakurta 2018, Theorem 22, with
the bounded non-contractive part carried as a shift) needs only ‖φ_1(x) − φ_2(x')‖ ≤ c‖x − x'‖
+ 2γC1 for all x, x', which holds for any two maps whose clipped parts are bounded by C1: the
plain method's bound already uses this worst case and never that the maps are equal (the
contraction-reduction step couples φ_1(X) with φ_2(X̃) and applies φ_2 alone to X̃ and X' for the
post-processing inequality). So, conditionally on y_{<i}, block i's output is
(α, α·ρ_b)-Rényi close at every order, ρ_b the plain method's ρ
(:func:`certify.bounds.noisyft.gradient_clip_rho`) at (C0, C1, γ, λ, T, σ_b).

**Over the blocks.** The release (y_1, …, y_k) is an adaptive composition, so the Rényi bounds
add (Mironov 2017, Proposition 1): α·Σ_i ρ_b = α·k·ρ_b. Converted at δ over every order by the
toolkit's conversion (:func:`certify.bounds.noisyft.rho_to_epsilon`, Balle et al. 2020 Theorem 21).

**The authors' accounting** (``calculate_parameters``, ``compute_parameters.py:97-178``), M = 2:
the (ε, δ) budget is converted at one Rényi order q by ε_R = budget − log(1/δ)/(q − 1) (Mironov
2017, Prop. 3), q minimising q/ε_R (``compute_parameters.py:25-40``; the minimiser has the closed
form q = 1 + (a + √(a² + a·budget))/budget with a = log(1/δ)); ε_R is split evenly over the blocks
(``:127``); per block σ_b² = (2q/(ε_R/k))·γ(2 − γλ)·C0·C1·(2 − λC0/C1) (``compute_sigma``,
``:18-22``) and T = max(1, ⌊log(1 − λC0/C1)/log(1 − γλ)⌋) clipped steps, each followed by a
noise step (``compute_number_epochs``, ``:79-84``: 2T schedule steps). Here x = c^T = 1 − λC0/C1
is the minimiser of ρ_b over T, where ρ_b = 2γ(2 − γλ)C0C1(2 − λC0/C1)/σ_b², so their σ_b makes
the order-q Rényi divergence of the composition exactly ε_R: the same bound as derived above.
Two notes from reading the code:

* the earlier snapshot (unlearn-blocks-2025/block-wise-noisy-fine-tuning @6bcb521,
  ``compute_parameters.py:18-22``, marked "WAS FIXED") has σ_b² = (q/(2ε_R/k))·K, a quarter of
  the variance: at that σ the order-q divergence is 4ε_R. The newer code above is the one used.
* for M ≥ 3 the code adds one noise step of σ_b·√((1 − c^M)/(1 − c²)) after M − 1 clipped steps
  (``calculate_noise_coefficient``, ``:90-94``); grouping the M − 1 steps into one map of
  contraction c^{M−1} gives the same ρ_b only with (1 − c^{2(M−1)}) in place of (1 − c^M), which is
  larger for M ≥ 3. Only M = 2 is offered here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from certify.bounds.noisyft import NoisyFTAccount, gradient_clip_rho, gradient_clip_sigma, rho_to_epsilon
from certify.errors import InvalidInput, require_positive, require_probability


def _blocks(blocks: object) -> int:
    if isinstance(blocks, bool) or not isinstance(blocks, int) or blocks < 1:
        raise InvalidInput("blocks", "an integer >= 1", blocks)
    return blocks


def blockwise_rho(C0: float, C1: float, gamma: float, lam: float, steps: int, sigma: float, blocks: int) -> float:
    """ρ of the whole block-wise run (α·ρ at every order α > 1): k blocks of ``steps`` noisy steps
    at σ each, composed (module docstring)."""
    return _blocks(blocks) * gradient_clip_rho(C0, C1, gamma, lam, steps, sigma)


def blockwise_sigma(
    epsilon: float, delta: float, C0: float, C1: float, gamma: float, lam: float, steps: int, blocks: int
) -> float:
    """σ_b that makes the block-wise run (ε, δ)-unlearning: k·K/σ_b² = ρ*, i.e. √k times the
    plain method's σ for the same per-block T."""
    return math.sqrt(_blocks(blocks)) * gradient_clip_sigma(epsilon, delta, C0, C1, gamma, lam, steps)


def blockwise_account(
    *, delta: float, sigma: float, steps: int, gamma: float, lam: float, C0: float, C1: float, blocks: int
) -> NoisyFTAccount:
    """The (ε, δ) guarantee of a block-wise run with noise σ_b (the certificate's numbers)."""
    rho = blockwise_rho(C0, C1, gamma, lam, steps, sigma, blocks)
    eps, order = rho_to_epsilon(rho, delta)
    formula = (
        f"block-wise schedule (Dolgova & Stich 2026): {blocks} orthogonal blocks one after another, the others "
        f"frozen, each T = {steps} clipped noisy steps; per block rho_b = (c^T*2*C0 + 2*gamma*C1*sum_k c^k)^2 / "
        f"(2*sigma^2*sum_k c^(2k)) with c = 1 - gamma*lambda (PABI, Feldman et al. 2018 Thm 22, conditionally on "
        f"the blocks already released); composed over the blocks (Mironov 2017 Prop. 1): rho = {rho:.6g}; Renyi "
        f"alpha*rho at every order converted at delta = {delta:g} (Balle et al. 2020 Thm 21): epsilon = {eps:.6g} "
        f"at alpha = {order}"
    )
    return NoisyFTAccount(eps, delta, sigma, formula, rho=rho, best_order=order)


@dataclass(frozen=True)
class AuthorsBlockParameters:
    """What the authors' ``calculate_parameters`` sets for every block (M = 2)."""

    q: float  #: the Rényi order
    renyi_epsilon: float  #: ε_R / k, each block's share of the order-q Rényi budget
    sigma: float  #: σ_b of every noise step
    steps: int  #: T, clipped steps per block, each followed by a noise step (2T schedule steps)


def authors_block_parameters(
    budget: float, delta: float, blocks: int, C0: float, C1: float, gamma: float, lam: float
) -> AuthorsBlockParameters:
    """The authors' per-block parameters for an (ε, δ) = (``budget``, ``delta``) target, for
    comparison and for choosing T (module docstring; needs λ > 0 and λC0 < C1)."""
    budget, delta = require_positive("budget", budget), require_probability("delta", delta)
    t = lam * C0 / C1
    if not (lam > 0 and 0 < t < 1 and 0 < gamma * lam < 1):
        raise InvalidInput("lam", "a value with 0 < lam*C0/C1 < 1 and 0 < gamma*lam < 1", lam)
    a = math.log(1.0 / delta)
    u = (a + math.sqrt(a * a + a * budget)) / budget  # q − 1 minimising q / (budget − a/(q − 1))
    per_block = (budget - a / u) / _blocks(blocks)
    K = gamma * (2 - gamma * lam) * C0 * C1 * (2 - t)
    steps = int(math.log(1 - t) / math.log(1 - gamma * lam))
    return AuthorsBlockParameters(1 + u, per_block, math.sqrt(2 * (1 + u) / per_block * K), max(1, steps))
