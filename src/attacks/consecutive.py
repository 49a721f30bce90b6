"""An attack on consecutive releases of a sequence of deletion requests.

A ledger publishes one model per request: release k is the method's model after requests 1..k,
plus fresh Gaussian noise σ_k ξ_k. An adversary who keeps every release can compare release k
with release k+1: what changed between them is what request k+1 removed. This module measures,
for each step k → k+1 of the ledger, how well the best such adversary tells the two worlds apart:

* world **U**: the method's releases (Y_k, Y_{k+1}) = (a_k + σ_k ξ_k, a_{k+1} + σ_{k+1} ξ_{k+1}),
  with a_j the method's noiseless model after requests 1..j;
* world **R**: the retrained models b_k = A(D \\ requests 1..k) and b_{k+1}, released with the
  same noise scales.

The test
--------
Write Δ_j = a_j − b_j. The noises are independent and isotropic, so the observed pair is
Gaussian with covariance diag(σ_k² I, σ_{k+1}² I) in both worlds and means (a_k, a_{k+1}) or
(b_k, b_{k+1}). By Neyman–Pearson the most powerful test at every level thresholds the
log-likelihood ratio, which is linear in the pair:

    s(Y_k, Y_{k+1}) = ⟨Y_k − m_k, Δ_k⟩ / σ_k²  +  ⟨Y_{k+1} − m_{k+1}, Δ_{k+1}⟩ / σ_{k+1}²,
    m_j = (a_j + b_j)/2.

Each release is weighted by its own precision 1/σ_j²: a noisier release counts less. In world U,
s ~ N(+μ²/2, μ²), in world R, s ~ N(−μ²/2, μ²), with

    μ_pair² = ‖Δ_k‖²/σ_k² + ‖Δ_{k+1}‖²/σ_{k+1}²,

so the pair is exactly μ_pair-GDP (Dong, Roth & Su 2022): the trade-off curve of the optimal
test is G_μ and its exact ε at δ is that of the Gaussian mechanism with Δ/σ = μ_pair
(:func:`certify.mechanisms.epsilon_for`). This is the **realized** ε of the step, the value the
Clopper–Pearson bound from the simulated scores must approach and (with probability at least
the confidence) not exceed.

The difference alone
--------------------
The issue's picture, "the difference between release k and k+1 reveals what request k+1
removed", is the test that sees only D = Y_{k+1} − Y_k. D is Gaussian with covariance
(σ_k² + σ_{k+1}²) I in both worlds (isotropic even when σ_k ≠ σ_{k+1}, so the best test on D is
the plain projection on the difference of the expected differences E = Δ_{k+1} − Δ_k):

    s_D = ⟨D − m_D, E⟩ / (σ_k² + σ_{k+1}²),   μ_difference = ‖E‖ / √(σ_k² + σ_{k+1}²).

But the adversary sees the pair, not only its difference, and D throws information away. By
Cauchy–Schwarz, ‖Δ_{k+1} − Δ_k‖² ≤ (σ_k² + σ_{k+1}²)(‖Δ_k‖²/σ_k² + ‖Δ_{k+1}‖²/σ_{k+1}²), so
μ_difference ≤ μ_pair, with equality only when Δ_k/σ_k² = −Δ_{k+1}/σ_{k+1}². A method whose
error is the same at both releases (Δ_k = Δ_{k+1}) leaks nothing through the difference
(μ_difference = 0) and μ_pair = √2·‖Δ‖/σ through the pair. Both are computed; the pair test is
the attack (``epsilon_lower``), the difference test is reported next to it.

Degenerate noise: a release with σ_j = ∞ carries nothing and drops out; a release with σ_j = 0
and Δ_j ≠ 0 identifies the world exactly (μ = ∞): the release equals a_j or b_j, the score is
+1 in world U and −1 in world R, and the bound reaches the ceiling. Releases with σ_j = 0 and
Δ_j = 0 carry nothing either.

Trials
------
Each trial is one independent pair of noise draws: trial t of world w ∈ {0: U, 1: R} at step
k (the ledger index of the first release) draws ξ_k then ξ_{k+1}, each standard normal of the
parameters' dimension, from ``numpy.random.default_rng(SeedSequence(seed, spawn_key=(k, t,
w)))``. The scores are linear in the releases, so they are computed as their value at the
noiseless models plus the projections of the draws (one matrix product per chunk of trials).
The normal draws dominate the cost: about 18 s per step for d = 10⁵ and 1,000 trials per world
on the 2-core development machine. ``draws="projected"`` draws the four projections a trial's
scores use (exact joint Gaussian law) instead: milliseconds per step whatever d. The scores
are turned into a bound by :func:`attacks.epsilon.clopper_pearson_epsilon`
(``split="half"`` by default: the threshold is chosen on half of the trials and counted on the
other half). Every step's bound holds at ``confidence`` on its own; for all K − 1 steps to hold
together pass ``confidence = 1 − (1 − c)/(K − 1)`` (Bonferroni).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from attacks.base import to_numpy
from attacks.epsilon import SPLITS, clopper_pearson_epsilon
from certify.errors import Integer, InvalidInput, Real
from certify.mechanisms import epsilon_for

__all__ = [
    "ConsecutiveStep",
    "consecutive_release_bounds",
    "consecutive_scores",
    "difference_mu",
    "gdp_epsilon",
    "pair_mu",
]

DRAWS = ("full", "projected")
"""How a trial's noise is drawn (:func:`consecutive_scores`)."""

TEST = "pair likelihood ratio (Neyman-Pearson on both releases, each weighted by 1/sigma^2)"
DIFFERENCE_TEST = "projection of the difference of the two releases (sees only Y_{k+1} - Y_k)"


# ----------------------------------------------------------------------------------------------
# exact values


def _ratio(distance: float, sigma: float) -> float:
    """‖Δ‖/σ with the conventions of the module docstring (0/0 = 0, x/∞ = 0, x/0 = ∞)."""
    if distance == 0.0 or math.isinf(sigma):
        return 0.0
    if sigma == 0.0:
        return math.inf
    return distance / sigma


def pair_mu(distance_k: float, distance_next: float, sigma_k: float, sigma_next: float) -> float:
    """μ of the optimal test on the pair: √(‖Δ_k‖²/σ_k² + ‖Δ_{k+1}‖²/σ_{k+1}²)."""
    return math.hypot(_ratio(distance_k, sigma_k), _ratio(distance_next, sigma_next))


def difference_mu(difference_distance: float, sigma_k: float, sigma_next: float) -> float:
    """μ of the best test on the difference alone: ‖Δ_{k+1} − Δ_k‖ / √(σ_k² + σ_{k+1}²)."""
    return _ratio(difference_distance, math.hypot(sigma_k, sigma_next))


def gdp_epsilon(mu: float, delta: float) -> float:
    """ε at δ of μ-GDP (the Gaussian mechanism with Δ/σ = μ); ∞ for μ = ∞ or δ = 0 < μ."""
    if mu == 0.0:
        return 0.0
    if math.isinf(mu) or delta == 0.0:
        return math.inf
    return float(epsilon_for(1.0 / mu, delta, 1.0))


# ----------------------------------------------------------------------------------------------
# scores


@dataclass(frozen=True)
class ConsecutiveStep:
    """The simulated scores of one step k → k+1 (world U first), and the exact μ values."""

    index: int
    pair_unlearned: np.ndarray
    pair_retrained: np.ndarray
    difference_unlearned: np.ndarray
    difference_retrained: np.ndarray
    distances: tuple[float, float]
    difference_distance: float
    sigmas: tuple[float, float]

    @property
    def mu_pair(self) -> float:
        return pair_mu(*self.distances, *self.sigmas)

    @property
    def mu_difference(self) -> float:
        return difference_mu(self.difference_distance, *self.sigmas)


def _vector(value: Any, field: str) -> np.ndarray:
    arr = np.asarray(to_numpy(value), dtype=np.float64)
    if arr.ndim != 1 or arr.size < 1 or not np.all(np.isfinite(arr)):
        raise InvalidInput(field, "a 1-D vector of finite parameters", f"shape {arr.shape}")
    return arr


_SIGMA = Real(ge=0, allow_inf=True)


def _trial_rng(seed: int, index: int, trial: int, world: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index, trial, world)))


def _projection_factor(d: np.ndarray, e: np.ndarray, own: int) -> np.ndarray:
    """A (3, 2) matrix L with L z ~ the law of (⟨ξ, Δ_k⟩, ⟨ξ, Δ_{k+1}⟩, ⟨ξ, E⟩) restricted to what one
    release's noise ξ enters: row ``own`` (its own Δ) and row 2 (E); z ~ N(0, I₂)."""
    nd = float(np.linalg.norm(d))
    ne2 = float(e @ e)
    out = np.zeros((3, 2))
    if nd > 0:
        c = float(d @ e) / nd
        out[own, 0] = nd
        out[2, 0] = c
        out[2, 1] = math.sqrt(max(ne2 - c * c, 0.0))
    else:
        out[2, 1] = math.sqrt(ne2)
    return out


def consecutive_scores(
    a_k: Any,
    a_next: Any,
    b_k: Any,
    b_next: Any,
    sigma_k: float,
    sigma_next: float,
    *,
    n_trials: int,
    seed: int = 0,
    index: int = 1,
    draws: str = "full",
) -> ConsecutiveStep:
    """Simulate ``n_trials`` pairs of releases per world for one step and score them.

    Parameters
    ----------
    a_k, a_next:
        The method's noiseless models after requests 1..k and 1..k+1 (world U), shape (d,).
    b_k, b_next:
        The retrained models without requests 1..k and 1..k+1 (world R), shape (d,).
    sigma_k, sigma_next:
        Noise std of releases k and k+1 (≥ 0; ∞ allowed: the release carries nothing).
    n_trials:
        Independent pairs of noise draws per world.
    seed, index:
        Trial t of world w draws from ``SeedSequence(seed, spawn_key=(index, t, w))``.
    draws:
        ``"full"``: each trial draws ξ_k and ξ_{k+1} in full (2d standard normals) and the scores
        project them; ``"projected"``: each trial draws the four projections the scores use
        directly, with their exact joint law (4 standard normals; the same distribution of scores,
        not the same numbers): for large d and many steps.

    Returns
    -------
    ConsecutiveStep
        Pair-test and difference-test scores of both worlds (larger: world U).
    """
    a0, a1 = _vector(a_k, "unlearned[k]"), _vector(a_next, "unlearned[k+1]")
    b0, b1 = _vector(b_k, "retrained[k]"), _vector(b_next, "retrained[k+1]")
    if not (a0.shape == a1.shape == b0.shape == b1.shape):
        raise InvalidInput(
            "retrained",
            "parameter vectors of one dimension at every release and in both worlds",
            [a0.shape, a1.shape, b0.shape, b1.shape],
        )
    s0 = _SIGMA.check("sigmas[k]", sigma_k)
    s1 = _SIGMA.check("sigmas[k+1]", sigma_next)
    n = Integer(2).check("n_trials", n_trials)
    seed = Integer(0).check("seed", seed)
    index = Integer(0).check("index", index)
    if not isinstance(draws, str) or draws not in DRAWS:
        raise InvalidInput("draws", f"one of {DRAWS}", draws)

    d0, d1 = a0 - b0, a1 - b1
    m0, m1 = (a0 + b0) / 2, (a1 + b1) / 2
    dist0, dist1 = float(np.linalg.norm(d0)), float(np.linalg.norm(d1))
    e = d1 - d0
    mid_d = ((a1 - a0) + (b1 - b0)) / 2
    var_d = s0 * s0 + s1 * s1  # variance of each coordinate of the difference Y_{k+1} − Y_k
    means = ((a0, a1), (b0, b1))
    # releases that carry information about the world: σ < ∞ and Δ_j ≠ 0; with σ = 0 they identify it
    informative = [j for j, (s, dist) in enumerate(((s0, dist0), (s1, dist1))) if dist > 0 and not math.isinf(s)]
    exact = [j for j in informative if (s0, s1)[j] == 0.0]
    sig, dvec, mid = (s0, s1), (d0, d1), (m0, m1)

    # Every score is linear in the releases Y_j = mean_j + σ_j ξ_j, so it is evaluated as its value at
    # the noiseless means plus the projections of the noise draws (the same number as scoring the
    # materialised releases, computed with one matrix product per chunk of trials).
    pair = np.empty((2, n))
    diff = np.empty((2, n))
    dim = a0.shape[0]
    chunk = max(1, min(64, 2**22 // dim)) if draws == "full" else n  # ≤ 32 MiB of draws per release at a time
    directions = np.stack([d0, d1, e], axis=1)  # (d, 3)
    factors = (_projection_factor(d0, e, 0), _projection_factor(d1, e, 1)) if draws == "projected" else None
    for world in (0, 1):
        mu0, mu1 = means[world]
        pair_const: float
        pair_noise: tuple[float, float]
        if exact:  # a noiseless release equal to a_j (world U) or b_j (world R): the world is known
            pair_const, pair_noise = (len(exact) if world == 0 else -len(exact)), (0.0, 0.0)
        else:
            pair_const = sum(float((means[world][j] - mid[j]) @ dvec[j]) / sig[j] ** 2 for j in informative)
            # one weight per release j ∈ (0, 1): a pair
            pair_noise = cast(tuple[float, float], tuple(1.0 / sig[j] if j in informative else 0.0 for j in (0, 1)))
        if math.isinf(var_d):  # a release that is noise only: the difference carries nothing
            diff_const, diff_noise = 0.0, (0.0, 0.0)
        else:
            scale = 1.0 / var_d if var_d > 0 else 1.0
            diff_const = float(((mu1 - mu0) - mid_d) @ e) * scale
            diff_noise = (-s0 * scale, s1 * scale)
        for start in range(0, n, chunk):
            trials = range(start, min(n, start + chunk))
            if draws == "full":
                xi = np.empty((2, len(trials), dim))
                for row, t in enumerate(trials):
                    rng = _trial_rng(seed, index, t, world)
                    xi[0, row] = rng.standard_normal(dim)  # ξ_k
                    xi[1, row] = rng.standard_normal(dim)  # ξ_{k+1}
                # (c, 3) each: ⟨ξ, Δ_k⟩, ⟨ξ, Δ_{k+1}⟩, ⟨ξ, E⟩
                p0, p1 = xi[0] @ directions, xi[1] @ directions
            else:
                assert factors is not None  # draws is "projected" here (DRAWS has two values, checked above)
                z = np.stack([_trial_rng(seed, index, t, world).standard_normal(4) for t in trials])
                p0 = z[:, :2] @ factors[0].T  # (c, 3) with the joint law of the full draw's projections
                p1 = z[:, 2:] @ factors[1].T
            block = slice(start, start + len(trials))
            pair[world, block] = pair_const + pair_noise[0] * p0[:, 0] + pair_noise[1] * p1[:, 1]
            diff[world, block] = diff_const + diff_noise[0] * p0[:, 2] + diff_noise[1] * p1[:, 2]
    return ConsecutiveStep(
        index=index,
        pair_unlearned=pair[0],
        pair_retrained=pair[1],
        difference_unlearned=diff[0],
        difference_retrained=diff[1],
        distances=(dist0, dist1),
        difference_distance=float(np.linalg.norm(e)),
        sigmas=(s0, s1),
    )


# ----------------------------------------------------------------------------------------------
# bounds per step


def _split_seed(seed: int, index: int) -> int:
    return int(np.random.SeedSequence(seed, spawn_key=(index,)).generate_state(1)[0])


def consecutive_release_bounds(
    unlearned: Sequence[Any],
    retrained: Sequence[Any],
    sigmas: Sequence[float],
    *,
    n_trials: int = 1000,
    delta: float,
    confidence: float = 0.95,
    seed: int = 0,
    first_index: int = 1,
    split: str = "half",
    draws: str = "full",
) -> list[dict[str, Any]]:
    """Clopper–Pearson ε lower bound of the optimal attack on each pair of consecutive releases.

    Parameters
    ----------
    unlearned:
        The method's noiseless models θ^U_k, k = first_index, first_index + 1, ... (one per
        release of the ledger, in order), each of shape (d,) (tensor or array).
    retrained:
        The retrained models without requests 1..k, same indexing and shapes.
    sigmas:
        The noise std of each release (≥ 0; ∞ allowed).
    n_trials:
        Simulated pairs of releases per world and step (≥ 2; half choose the threshold).
    delta:
        δ of the bounds and of the exact ε (the ledger's δ).
    confidence:
        Confidence of each step's bound (Bonferroni over steps is the caller's choice).
    seed:
        Root of the noise draws (see the module docstring) and of the threshold split.
    first_index:
        The ledger index k of ``unlearned[0]``: step dicts and noise streams use ledger indices.
    split:
        Threshold protocol of :func:`attacks.epsilon.clopper_pearson_epsilon`.
    draws:
        ``"full"`` (materialise every noise draw) or ``"projected"`` (draw only the projections
        the scores use; same law, far faster for large d), see :func:`consecutive_scores`.

    Returns
    -------
    list of dict
        One per step k → k+1 (K − 1 of them for K releases), JSON-ready except that
        ``realized_epsilon``/``difference_realized_epsilon``/``mu_*`` may be ``inf``:

        ``step`` (k), ``releases`` ([k, k+1]), ``sigmas``, ``distances`` ([‖Δ_k‖, ‖Δ_{k+1}‖],
        Δ_j = θ^U_j − θ^R_j), ``difference_distance`` (‖Δ_{k+1} − Δ_k‖), ``mu_releases``
        ([‖Δ_k‖/σ_k, ‖Δ_{k+1}‖/σ_{k+1}]), ``mu_pair``, ``realized_epsilon`` (exact ε at δ of the
        optimal pair test), ``mu_difference``, ``difference_realized_epsilon``,
        ``epsilon_lower`` and ``ceiling`` (the pair test's bound), ``bound`` (its full
        :meth:`attacks.epsilon.EpsilonBound.to_dict`), ``difference_epsilon_lower`` and
        ``difference_bound`` (the difference-only test, same draws), ``exceeds_realized``
        (the bound above the exact ε: a fault, expected with probability < 1 − confidence),
        ``n_trials``, ``delta``, ``confidence``, ``seed``, ``draws``, ``test``, ``difference_test``.
    """
    _check_releases(unlearned, retrained, sigmas)
    dlt = Real(ge=0, lt=1).check("delta", delta)
    conf = Real(gt=0, lt=1).check("confidence", confidence)
    first = Integer(0).check("first_index", first_index)
    seed = Integer(0).check("seed", seed)
    if not isinstance(split, str) or split not in SPLITS:
        raise InvalidInput("split", f"one of {SPLITS}", split)

    out = []
    for i in range(len(unlearned) - 1):
        k = first + i
        step = consecutive_scores(
            unlearned[i],
            unlearned[i + 1],
            retrained[i],
            retrained[i + 1],
            sigmas[i],
            sigmas[i + 1],
            n_trials=n_trials,
            seed=seed,
            index=k,
            draws=draws,
        )
        split_seed = _split_seed(seed, k)
        pair = clopper_pearson_epsilon(
            step.pair_unlearned, step.pair_retrained, delta=dlt, confidence=conf, split=split, seed=split_seed
        )
        diff = clopper_pearson_epsilon(
            step.difference_unlearned,
            step.difference_retrained,
            delta=dlt,
            confidence=conf,
            split=split,
            seed=split_seed,
        )
        record = _step_record(k, step, pair, diff, dlt)
        setting = {"n_trials": int(n_trials), "delta": dlt, "confidence": conf, "seed": seed, "draws": draws}
        out.append({**record, **setting, "test": TEST, "difference_test": DIFFERENCE_TEST})
    return out


def _check_releases(unlearned: object, retrained: object, sigmas: object) -> None:
    """Both worlds' models and the sigmas: sequences of one entry per release, at least two releases."""
    if not (isinstance(unlearned, Sequence) and isinstance(retrained, Sequence) and isinstance(sigmas, Sequence)):
        raise InvalidInput(
            "unlearned", "sequences (lists) of parameter vectors and of sigmas", type(unlearned).__name__
        )
    if not (len(unlearned) == len(retrained) == len(sigmas)):
        raise InvalidInput(
            "retrained",
            "one model per release in both worlds and one sigma per release",
            (len(unlearned), len(retrained), len(sigmas)),
        )
    if len(unlearned) < 2:
        raise InvalidInput("unlearned", "at least 2 releases (a step needs two consecutive ones)", len(unlearned))


def _step_record(k: int, step: Any, pair: Any, diff: Any, delta: float) -> dict[str, Any]:
    """One step's entry of :func:`consecutive_release_bounds`: distances, μ's, exact ε's and both bounds."""
    mu_p, mu_d = step.mu_pair, step.mu_difference
    realized = gdp_epsilon(mu_p, delta)
    s0, s1 = step.sigmas
    return {
        "step": k,
        "releases": [k, k + 1],
        "sigmas": [s0, s1],
        "distances": list(step.distances),
        "difference_distance": step.difference_distance,
        "mu_releases": [_ratio(step.distances[0], s0), _ratio(step.distances[1], s1)],
        "mu_pair": mu_p,
        "realized_epsilon": realized,
        "mu_difference": mu_d,
        "difference_realized_epsilon": gdp_epsilon(mu_d, delta),
        "epsilon_lower": pair.epsilon_lower,
        "ceiling": pair.ceiling,
        "bound": pair.to_dict(),
        "difference_epsilon_lower": diff.epsilon_lower,
        "difference_bound": diff.to_dict(),
        "exceeds_realized": bool(pair.epsilon_lower > realized * (1 + 1e-9)),
    }
