"""The white-box one-run audit: parameter-space canary scores and f-DP analysis, in one run.

The black-box one-run audit (:mod:`audit.onerun`) scores each canary by the released model's
confidence on it. On a model that cannot memorise one record (the default Adult model has 3
parameters) that score is at chance even for a deletion that did nothing, so it missed a
planted violation the multi-run white-box attack sees at once. This game keeps the black-box
game and its guarantees and changes what is read from the release and how it is analysed.

The game (as :mod:`audit.onerun`, paired design)
------------------------------------------------
2m canaries are paired by a seeded permutation; secret S_i ∈ {−1, +1} (fair coins) picks which
member of pair i is inserted into D, so the inserted half C₊(S) always has m records. One fit of
A on D ∪ C₊ (canaries appended after D), one unlearning of exactly C₊, the certificate for
deleting exactly C₊, one release with that certificate's σ. The game runs on ``method.replica()``
on its own copy of the data: **the canaries never enter the audit of the user's forget set**,
whose certificate, worlds and attacks are computed before and apart from it.

Canaries (:func:`isotropic_canaries`) are, by default, isotropic random records: features drawn
uniformly on the sphere of radius ``radius`` (the unit sphere: the domain the analytic constants
assume), labels uniform (Andrew et al. 2024's random canaries, as records because a method's only
input is records). Held-out records (mislabelled) can be passed instead.

What is read from the release (white-box)
-----------------------------------------
The auditor also runs A on D alone from the same θ₀ (``retrain``: the reference θ_R = A(D),
which is the same for every S because D ∪ C₊(S) minus C₊(S) is D). Each canary c is scored by
the alignment of the release's change from the reference with the canary's own descent
direction there,

    z_c = ⟨θ̃ − θ_R, u_c⟩ / σ,    u_c = −∇ℓ(θ_R; c) / ‖∇ℓ(θ_R; c)‖,

which is N(0, 1) exactly when θ̃ is the reference world θ_R + N(0, σ²I) (u_c does not depend on
S or on the noise). A model that kept an inserted canary has moved along its descent direction.

Two analyses, each at α/2 and fixed before the run (the reported bound is the larger; a union
bound keeps the pair at confidence 1 − α):

1. **Per-canary guesses, f-DP one-run bound.** Pair i's score is z_first − z_second; the top
   k₊ are guessed +1 and the bottom k₋ guessed −1 (:func:`attacks.onerun.one_run_guesses`), v of
   r right. μ_LB is Mahloujifar, Melis & Chaudhuri's f-DP one-run bound for the Gaussian curve
   (:func:`attacks.fdp_onerun.fdp_one_run_mu`), chained as in :mod:`audit.onerun`: every release
   μ-GDP from the common reference makes any two releases exactly 2μ-GDP. Steinke et al.'s
   chained (ε, δ) bound on the same guesses is reported as the cross-check (``steinke_*``). Its
   ceiling (all r right) is computed and logged before the game runs.
2. **One test against the reference.** T = max_c |z_c| over all 2m canaries, p₀ ≤ 4m·Φ(−T)
   under the reference (:func:`attacks.fdp_onerun.max_alignment_log_p`), μ_LB = Φ⁻¹(α/2) −
   Φ⁻¹(p₀) (:func:`attacks.fdp_onerun.reference_test_mu`). It needs the hypothesis only for the
   secrets drawn (the certificate of this very run), and it has no ceiling: a release many σ
   from where the certificate says it must be refutes any ε.

Each μ_LB is reported as the ε of μ_LB-GDP at the audit's δ (:func:`attacks.fdp_onerun.gdp_epsilon`).

What is proven, and under what
------------------------------
H₀: the release M(S) = U(A(D ∪ C₊), C₊) + N(0, σ²I) is μ-GDP from R = A(D) + N(0, σ²I), with
μ = μ(ε, δ) of the certified (ε, δ) (:func:`attacks.fdp_onerun.gdp_mu`). A Gaussian output-noise
certificate whose sensitivity bound ‖θ_U − θ_R‖ ≤ Δ holds for this θ₀ implies H₀ (its release is
a Gaussian mechanism with Δ/σ ≤ μ(ε, δ)); ``epsilon_lower > certified ε`` is ``μ_LB > μ(ε, δ)``.
Under H₀ (for every S, analysis 1; for the drawn S, analysis 2), P[epsilon_lower > ε] ≤ α over S,
the method's randomness and the release noise. Conditions, as in :mod:`audit.onerun`: the
certificate is for the *group* of m canaries (so it is the group's ε that is bounded), one σ for
every S (``covers_all_assignments``), and the reference must be the certificate's: a method whose
training is deterministic given θ₀ and its seed (the audit's noise mode), with options chosen
from data pinned before the game. Only certificates of kind ``output-noise`` with a finite σ > 0
are tested; others are recorded as skipped. z is exactly N(0, 1) in float64; a float32 release is
rounded (about 6e-8·|θ| per coordinate), which is negligible only while σ is far above that.

Positive control: the game's original model A(D ∪ C₊), released with the same σ and noise draw,
analysed the same way (``control``), as in :mod:`audit.onerun`.

Randomness: every choice is a pure function of (seed, role, index): the roles of
:data:`audit.onerun.ROLES` plus ``canaries`` (spawn_key 6) for :func:`isotropic_canaries`.

References
----------
.. [1] S. Mahloujifar, L. Melis and K. Chaudhuri, "Auditing f-Differential Privacy in One Run",
   ICML 2025 (arXiv:2410.22235).
.. [2] G. Andrew, P. Kairouz, S. Oh, A. Oprea, H. B. McMahan and V. Suriyakumar, "One-shot
   Empirical Privacy Estimation for Federated Learning", ICLR 2024 (isotropic random canaries).
.. [3] T. Steinke, M. Nasr and M. Jagielski, "Privacy Auditing with One (1) Training Run",
   NeurIPS 2023 (the game, and the cross-check).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from attacks.fdp_onerun import (
    fdp_one_run_ceiling,
    fdp_one_run_mu,
    gdp_epsilon,
    gdp_mu,
    max_alignment_log_p,
    reference_test_mu,
)
from attacks.onerun import one_run_ceiling, one_run_epsilon, one_run_guesses
from audit.onerun import ROLES, SEED_SCHEME, _check_data, _covers, _rng, _tie_seed, _torch_generator, default_guesses
from audit.seeds import child_seed
from certify.errors import (
    PROBABILITY,
    Integer,
    InvalidInput,
    Real,
    require_choice,
    require_positive,
    require_probability,
)
from certify.mechanisms import MECHANISMS
from unlearners.base import Unlearner

__all__ = [
    "CANARY_ROLE",
    "WhiteBoxOneRun",
    "isotropic_canaries",
    "pipeline_section",
    "whitebox_ceiling",
    "whitebox_one_run_audit",
]

log = logging.getLogger("unlearn_audit.onerun_whitebox")

#: spawn_key of the isotropic canaries' stream (after :data:`audit.onerun.ROLES`).
CANARY_ROLE = max(ROLES.values()) + 1


def isotropic_canaries(count: int, n_features: int, n_classes: int, seed: int, *, radius: float = 1.0):
    """``count`` records with features uniform on the sphere of ``radius`` in R^n_features and
    labels uniform in [0, n_classes): float64 and int64 tensors, a pure function of ``seed``
    (role ``canaries``; row i is the same in every larger draw of the same seed)."""
    count = Integer(1).check("count", count)
    d = Integer(1).check("n_features", n_features)
    c = Integer(2).check("n_classes", n_classes)
    radius = Real(gt=0).check("radius", radius)
    rng = np.random.default_rng(np.random.SeedSequence(Integer(0).check("seed", seed), spawn_key=(CANARY_ROLE,)))
    rows = np.empty((count, d))
    labels = np.empty(count, dtype=np.int64)
    for i in range(count):  # row by row: a prefix of a larger draw is the smaller draw
        v = rng.standard_normal(d)
        rows[i] = radius * v / max(float(np.linalg.norm(v)), 1e-300)
        labels[i] = rng.integers(c)
    return torch.as_tensor(rows), torch.as_tensor(labels)


def _levels(confidence: float) -> float:
    """The confidence of each of the two analyses (α/2 each)."""
    return 1.0 - (1.0 - confidence) / 2.0


def whitebox_ceiling(m: int, delta: float, confidence: float = 0.95, k_plus=None, k_minus=None) -> dict[str, Any]:
    """The design's ceilings, known before the run: the largest ε analysis 1 (per-canary guesses)
    can certify as violated with m pairs, r = k₊ + k₋ guesses, δ and its α/2 (f-DP, and Steinke
    et al.'s chained bound for comparison); analysis 2 (the reference test) has none."""
    m = Integer(1).check("m", m)
    kp, km = default_guesses(m) if k_plus is None and k_minus is None else (k_plus, k_minus)
    r = Integer(1, m).check("k_plus + k_minus", int(kp) + int(km))
    each = _levels(PROBABILITY.check("confidence", confidence))
    mu = fdp_one_run_ceiling(m, r, confidence=each, chained=True)
    return {
        "m": m,
        "r": r,
        "per_canary_mu": mu,
        "per_canary_epsilon": gdp_epsilon(mu, delta),
        "steinke_epsilon": one_run_ceiling(m, r, delta, confidence=each, chained=True),
        "reference_test": None,
    }


@dataclass(frozen=True)
class Analysis:
    """Both analyses of one release (the game's, or its control's)."""

    r: int
    v: int
    mu_guesses: float  # analysis 1: μ_LB from the guesses (f-DP, chained)
    epsilon_guesses: float
    steinke_epsilon: float  # the cross-check on the same guesses (not in epsilon_lower)
    max_abs_z: float  # analysis 2's statistic
    log_p0: float
    mu_reference: float
    epsilon_reference: float
    distance_sigmas: float  # ‖θ̃ − θ_R‖/σ, for the reader

    @property
    def epsilon_lower(self) -> float:
        return max(self.epsilon_guesses, self.epsilon_reference)


@dataclass(frozen=True)
class WhiteBoxOneRun:
    """What the white-box one-run game showed (:func:`whitebox_one_run_audit`).

    ``epsilon_lower`` is the larger of the two analyses' bounds (each at α/2), ``violation``
    whether it exceeds the certified ε, ``ceiling`` the per-canary analysis's (the reference
    test has none), ``control`` the same analyses of the game's original model."""

    design: str
    canary_kind: str
    m: int
    canaries: int
    inserted: int
    k_plus: int
    k_minus: int
    sigma: float
    certificate_kind: str
    certified_epsilon: float
    certified_mu: float
    confidence: float
    delta: float
    epsilon_lower: float
    violation: bool
    ceiling: dict
    analysis: Analysis
    control: Analysis
    covers_all_assignments: bool
    seed: int
    note: str

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for name in ("analysis", "control"):
            d[name]["epsilon_lower"] = getattr(self, name).epsilon_lower
        d["control"]["has_power"] = self.control.epsilon_lower > self.certified_epsilon
        d["seed_scheme"] = SEED_SCHEME + f", canaries={CANARY_ROLE} (isotropic canaries, row by row)"
        return d


def _directions(game: Unlearner, reference: Tensor, cX: Tensor, cy: Tensor) -> Tensor:
    """u_c: each canary's unit descent direction at the reference (zero where its gradient is)."""
    g = -game.objective.per_sample_grads(reference, cX, cy).detach().to("cpu", torch.float64)
    norms = torch.linalg.vector_norm(g, dim=1, keepdim=True)
    return torch.where(norms > 0, g / norms.clamp_min(1e-300), torch.zeros_like(g))


def _analyse(
    release: Tensor, reference: Tensor, u: Tensor, sigma: float, pairs: np.ndarray, secrets: np.ndarray, ctx: dict
) -> Analysis:
    """Analyses 1 and 2 of the module docstring on one release."""
    diff = (release - reference).detach().to("cpu", torch.float64)
    z = (u @ diff).numpy() / sigma
    guesses = one_run_guesses(z[pairs[:, 0]] - z[pairs[:, 1]], ctx["k_plus"], ctx["k_minus"], tie_seed=ctx["tie"])
    m, r, each, delta = pairs.shape[0], ctx["k_plus"] + ctx["k_minus"], ctx["each"], ctx["delta"]
    v = int(np.count_nonzero(guesses.astype(np.int16) * secrets == 1))
    mu_g = fdp_one_run_mu(m, r, v, confidence=each, chained=True)
    log_p0 = max_alignment_log_p(z)
    mu_ref = reference_test_mu(log_p0, confidence=each)
    return Analysis(
        r=r,
        v=v,
        mu_guesses=mu_g,
        epsilon_guesses=gdp_epsilon(mu_g, delta),
        steinke_epsilon=one_run_epsilon(m, r, v, delta, confidence=each, chained=True),
        max_abs_z=float(np.max(np.abs(z))),
        log_p0=log_p0,
        mu_reference=mu_ref,
        epsilon_reference=gdp_epsilon(mu_ref, delta) if math.isfinite(mu_ref) else math.inf,
        distance_sigmas=float(torch.linalg.vector_norm(diff)) / sigma,
    )


def whitebox_one_run_audit(
    method: Unlearner,
    X: Tensor,
    y: Tensor,
    canaries_X: Tensor,
    canaries_y: Tensor,
    init: Callable[[torch.Generator], Tensor],
    *,
    epsilon: float,
    delta: float,
    mechanism: str = "analytic",
    k_plus: int | None = None,
    k_minus: int | None = None,
    confidence: float = 0.95,
    seed: int = 0,
    canary_kind: str = "isotropic",
) -> WhiteBoxOneRun:
    """Play the paired deletion game once and bound the group certificate's ε from below with
    white-box canary scores (module docstring). Arguments as :func:`audit.onerun.one_run_audit`
    (2m canaries, paired design, pre-registered guesses: default 5 % of m on each side);
    ``canary_kind`` names what the canaries are, for the report.

    Raises
    ------
    certify.errors.InvalidInput
        On bad input (naming the field), and when the certificate for C₊ is not a finite
        Gaussian output noise (field ``certificate``): there is no reference law to test.
    """
    if not isinstance(method, Unlearner):
        raise InvalidInput("method", "an Unlearner instance", type(method).__name__)
    _check_data(X, y, canaries_X, canaries_y, "paired")
    if not callable(init):
        raise InvalidInput("init", "a function of a torch.Generator returning θ₀", type(init).__name__)
    epsilon, delta = require_positive("epsilon", epsilon), require_probability("delta", delta)
    mechanism = require_choice("mechanism", mechanism, MECHANISMS)
    confidence, seed = PROBABILITY.check("confidence", confidence), Integer(0).check("seed", seed)
    canary_kind = require_choice("canary_kind", canary_kind, ("isotropic", "records"))
    m = int(canaries_X.shape[0]) // 2
    ceiling = whitebox_ceiling(m, delta, confidence, k_plus, k_minus)  # validates the counts before training
    kp, km = default_guesses(m) if k_plus is None and k_minus is None else (int(k_plus), int(k_minus))  # type: ignore[arg-type]

    secrets = np.where(_rng(seed, "secrets").random(m) < 0.5, 1, -1).astype(np.int8)
    pairs = _rng(seed, "pairs").permutation(2 * m).reshape(m, 2)
    inserted = np.sort(np.where(secrets == 1, pairs[:, 0], pairs[:, 1]))
    cX = canaries_X.to(device=X.device, dtype=X.dtype)
    cy = canaries_y.to(device=y.device, dtype=y.dtype)
    game = method.replica()
    n = int(X.shape[0])
    idx = torch.as_tensor(inserted, dtype=torch.long, device=cX.device)
    forget = torch.arange(n, n + m, device=X.device)
    if type(game).capabilities.deletable_before_training:
        game.declare_deletable(forget)
    original = game.fit(torch.cat([X, cX[idx]]), torch.cat([y, cy[idx]]), init(_torch_generator(seed, "init"))).clone()
    theta = game.unlearn(forget)
    reference = game.retrain(forget)
    certificate = game.certify(forget, epsilon, delta, mechanism)
    sigma = float(certificate.sigma)
    if (
        certificate.kind != "output-noise"
        or not (math.isfinite(sigma) and sigma > 0)
        or not certificate.certified
        or certificate.epsilon is None
    ):
        raise InvalidInput(
            "certificate",
            "a Gaussian output-noise certificate with a finite sigma > 0 for deleting the canaries",
            f"{certificate.kind} (sigma {sigma:.4g})",
        )
    u = _directions(game, reference, cX, cy)
    ctx = {"k_plus": kp, "k_minus": km, "tie": _tie_seed(seed), "each": _levels(confidence), "delta": delta}

    def analyse(noiseless: Tensor) -> Analysis:  # the same noise draw for the game and its control
        return _analyse(
            Unlearner.release(noiseless, sigma, _torch_generator(seed, "noise")),
            reference,
            u,
            sigma,
            pairs,
            secrets,
            ctx,
        )

    analysis, control = analyse(theta), analyse(original)
    certified = float(certificate.epsilon)
    covers = _covers(certificate, "paired", type(game).capabilities.data_dependent_certificate)
    return WhiteBoxOneRun(
        design="paired",
        canary_kind=canary_kind,
        m=m,
        canaries=2 * m,
        inserted=m,
        k_plus=kp,
        k_minus=km,
        sigma=sigma,
        certificate_kind=certificate.kind,
        certified_epsilon=certified,
        certified_mu=gdp_mu(certified, delta),
        confidence=confidence,
        delta=delta,
        epsilon_lower=analysis.epsilon_lower,
        violation=analysis.epsilon_lower > certified,
        ceiling=ceiling,
        analysis=analysis,
        control=control,
        covers_all_assignments=covers,
        seed=seed,
        note=_note(m, kp + km, confidence, covers),
    )


def _note(m: int, r: int, confidence: float, covers: bool) -> str:
    parts = [
        f"White-box one-run deletion game (paired design, {m} canary pairs, {m} inserted then deleted, {r} "
        "guesses fixed in advance). Proven: if every release of this game is mu(eps, delta)-GDP from the "
        "reference A(D) + N(0, sigma^2 I), epsilon_lower exceeds eps with probability at most "
        f"{1 - confidence:.3g} (two analyses at half that each: Mahloujifar et al.'s f-DP one-run bound on the "
        "guesses, and one test of the largest canary alignment against the reference).",
        f"The certificate is for deleting the group of {m} canaries at once, so the bound concerns that group's "
        "epsilon; the canaries are a separate game on a copy and do not enter the audit of the forget set.",
    ]
    if not covers:
        parts.append(
            "Conditional for the per-canary analysis: the released sigma was calibrated for this run's forget set "
            "only (the certificate depends on the data or on estimated constants); the reference test needs only it."
        )
    return " ".join(parts)


def ceiling_line(ceiling: dict[str, Any], certified: float | None) -> str:
    """The design's ceiling in words, printed before the game runs (and kept in the report)."""
    target = f" against the certified {certified:.4g}" if certified is not None else ""
    return (
        f"white-box one-run audit: {ceiling['m']} canary pairs, {ceiling['r']} guesses; from its guesses it can "
        f"prove at most epsilon >= {ceiling['per_canary_epsilon']:.4g} (f-DP one-run bound; Steinke et al. "
        f"{ceiling['steinke_epsilon']:.4g}){target}; its test against the reference A(D) has no ceiling"
    )


def pipeline_section(config: Any, method: Unlearner, inputs: Any, init: Callable, seed: int) -> dict[str, Any]:
    """The report section: ``one_run_whitebox_canaries`` pairs of isotropic canaries on the sphere
    of the training rows' largest norm (the domain the constants were computed on), a game seed
    derived from the audit's, the ceiling logged before the game; a certificate that is not a
    finite Gaussian output noise is recorded as skipped."""
    m = int(config.one_run_whitebox_canaries)
    ceiling = whitebox_ceiling(m, config.delta, config.confidence)
    log.info("%s", ceiling_line(ceiling, config.epsilon))
    game_seed = child_seed(seed, "one-run-whitebox")
    X = inputs.X
    flat = X.reshape(X.shape[0], -1)
    radius = float(torch.linalg.vector_norm(flat.to(torch.float64), dim=1).max())
    classes = max(2, int(inputs.objective.n_outputs))
    cX, cy = isotropic_canaries(2 * m, int(flat.shape[1]), classes, game_seed, radius=max(radius, 1e-12))
    try:
        result = whitebox_one_run_audit(
            method,
            X,
            inputs.y,
            cX.reshape(2 * m, *X.shape[1:]),
            cy,
            init,
            epsilon=config.epsilon,
            delta=config.delta,
            mechanism=config.mechanism,
            confidence=config.confidence,
            seed=game_seed,
        )
    except InvalidInput as exc:
        if exc.field in ("canaries_X", "canaries_y", "k_plus + k_minus"):
            raise
        return {"skipped": f"{exc.field}: {exc.allowed} (got {exc.got!r})", "ceiling": ceiling, "seed": game_seed}
    return result.to_dict()
