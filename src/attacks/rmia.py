"""RMIA (Zarifzadeh, Liu & Shokri 2024) adapted to the unlearning game.

RMIA decides membership of a record x in the training set of a model θ by comparing x with
**population records** z that no model was trained on. Its statistic is the pairwise likelihood
ratio (Zarifzadeh et al. 2024, §3)

    LR_θ(x, z) = [Pr(x | θ) / Pr(x)] / [Pr(z | θ) / Pr(z)],

and its score is the fraction of population records that x dominates by a factor γ,

    Score(x; θ) = Pr_{z ~ π}( LR_θ(x, z) > γ ).

Pr(x | θ) is the model's probability of x's true label, p_y(x; θ), and Pr(x) is its average over
**reference models**: the marginal of Pr(x | θ') over models θ' trained with and without x.

**In the unlearning game** the reference models are the audit's shadows, and "trained with x"
means, as in U-LiRA (:mod:`attacks.lira`), "trained with x and then unlearned":

* **online** (attack ``rmia``): Pr(x) = ½ (mean over "in" shadows (world U) + mean over "out"
  shadows (world R)), the marginal over both worlds with equal weight;
* **offline** (attack ``rmia-offline``): only the "out" shadows (retrained without Z) are
  averaged, and the missing "in" mean is replaced by the paper's linear approximation
  Pr(x)_IN ≈ a·Pr(x)_OUT + (1 − a), so that

      Pr(x) = ½ ((1 + a)·Pr(x)_OUT + (1 − a))

  (§3, "offline" setting; ml_privacy_meter ``modules/mia/attacks/rmia.py::run_rmia``).

For a population record z every shadow is "out" (no model of the audit was trained on z), and
Pr(z) is computed by the same formula. The score of a released model is the **mean** of
Score(x; θ) over the forget set (each record's score is a fraction in [0, 1]); the per-record
scores are kept and ranked (:func:`attacks.exposure.per_record_exposure`). Larger = the model is
relatively more confident on the forgotten records than on never-seen records, compared with
the reference models: "unlearned world".

Unlike the single-target setting of the reference tool (ml_privacy_meter issue #139: there the
z-terms are a monotone transform for a fixed model and are dropped), the audit compares scores
*across* released models, so the z-normalisation Pr(z | θ)/Pr(z) matters and is computed in full.

**Choosing a (offline).** The paper tunes a on a reference model whose members are known
(``tune_offline_a``: the a in {0, 0.1, …, 1} with the highest AUROC). Here a is chosen on the
shadows alone (:func:`tune_offline_a`): every "in" shadow and every "out" shadow is scored
against the *other* "out" shadows, and the a whose per-model scores separate the two best
(AUROC) wins. The scored trials play no part. Only the choice of a reads the "in" shadows; the
scores themselves read only the "out" ones.

Computation is in log space: log LR(x) = log p_y(x; θ) − log Pr(x), and the count of z with
log LR(x) − log LR(z) > log γ is one binary search per record into the sorted population terms.

References
----------
.. [1] S. Zarifzadeh, P. Liu and R. Shokri, "Low-Cost High-Power Membership Inference Attacks",
   ICML 2024 (arXiv:2312.03262), §3 (the pairwise likelihood ratio, the score, Pr(x) over
   reference models and its offline approximation with a). Reference implementation:
   privacytrustlab/ml_privacy_meter, ``modules/mia/attacks/rmia.py`` (``run_rmia``,
   ``tune_offline_a``) and ``research/2024_rmia``.
.. [2] J. Hayes, I. Shumailov, E. Triantafillou, A. Khalifa and N. Papernot, "Inexact Unlearning
   Needs More Careful Evaluations to Avoid a False Sense of Privacy", SaTML 2025: the game.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from scipy.special import log_expit, logsumexp

from attacks.base import Attack, AttackInputs, AttackOutcome, Features, ModelRows
from attacks.exposure import _column_aurocs, exposure_details
from attacks.lira_gaussians import _phi_matrix, logit_confidence, phi_of_models, shadow_features
from attacks.roc import DEFAULT_CURVE_POINTS, RocSummary, auroc
from certify.errors import InvalidInput, require_finite, require_integer, require_positive

__all__ = [
    "DEFAULT_OFFLINE_A",
    "A_GRID",
    "LogProbs",
    "RmiaReference",
    "RmiaResult",
    "log_prob_true_label",
    "rmia_attack",
    "rmia_example_scores",
    "rmia_reference",
    "tune_offline_a",
]

DEFAULT_OFFLINE_A = 0.3
"""a when it cannot be tuned (too few shadows): the reference implementation's default."""

A_GRID = tuple(round(0.1 * i, 1) for i in range(11))
"""The a values :func:`tune_offline_a` tries, as the paper's ``tune_offline_a``."""

DEFAULT_POPULATION = 1000
"""Most population records the registered attacks compare with (a seeded random subset)."""

_MODES = ("online", "offline")


# ----------------------------------------------------------------------------------------------
# signals


def log_prob_true_label(logits: object, labels: object, *, one_logit: bool | None = None) -> np.ndarray:
    """log Pr(x | θ) = log p_y(x; θ), from logits (same layouts as :func:`attacks.lira_gaussians.logit_confidence`).

    Computed as ``log_expit(φ)`` with φ the logit-scaled confidence (p_y = sigmoid(φ) exactly),
    so it stays accurate for very confident and very wrong models.
    """
    return log_expit(logit_confidence(logits, labels, one_logit=one_logit))


@dataclass(frozen=True)
class LogProbs:
    """log p_y of some models on the forget records and on the population records.

    Attributes
    ----------
    forget:
        Shape ``(models, m)``.
    population:
        Shape ``(models, n_z)``, the same models.
    """

    forget: np.ndarray
    population: np.ndarray

    @classmethod
    def of(
        cls,
        forget: object,
        population: object,
        field: str,
        *,
        min_rows: int = 1,
        m: int | None = None,
        n_z: int | None = None,
    ) -> LogProbs:
        """Validated: finite, ≤ 0 (log-probabilities), 2-D, matching rows."""
        x = _phi_matrix(forget, f"{field}.forget", min_rows=min_rows, m=m)
        z = _phi_matrix(population, f"{field}.population", min_rows=min_rows, m=n_z)
        if z.shape[0] != x.shape[0]:
            raise InvalidInput(
                f"{field}.population", f"{x.shape[0]} row(s), one per model as in forget", f"{z.shape[0]} row(s)"
            )
        for name, arr in (("forget", x), ("population", z)):
            if np.any(arr > 1e-12):
                raise InvalidInput(f"{field}.{name}", "log-probabilities (<= 0)", float(arr.max()))
        return cls(np.minimum(x, 0.0), np.minimum(z, 0.0))

    @property
    def n_models(self) -> int:
        return int(self.forget.shape[0])


def _as_logprobs(value: object, field: str, **kwargs: Any) -> LogProbs:
    if isinstance(value, LogProbs):
        return LogProbs.of(value.forget, value.population, field, **kwargs)
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return LogProbs.of(value[0], value[1], field, **kwargs)
    raise InvalidInput(field, "a LogProbs (or a pair (forget, population) of log p_y arrays)", type(value).__name__)


# ----------------------------------------------------------------------------------------------
# Pr(x) over reference models


@dataclass(frozen=True)
class RmiaReference:
    """log Pr(x) of the forget records and log Pr(z) of the population records.

    Attributes
    ----------
    log_px, log_pz:
        Shapes ``(m,)`` and ``(n_z,)``.
    mode:
        ``"online"`` or ``"offline"``.
    offline_a:
        The a of the offline approximation (``None`` online).
    n_in, n_out:
        Reference ("in", "out") shadows averaged.
    """

    log_px: np.ndarray
    log_pz: np.ndarray
    mode: str
    offline_a: float | None
    n_in: int
    n_out: int


def _log_mean(logp: np.ndarray) -> np.ndarray:
    return logsumexp(logp, axis=0) - math.log(logp.shape[0])


def _offline_log_marginal(log_mean_out: np.ndarray, a: float) -> np.ndarray:
    """log(½((1 + a)·P_out + (1 − a))), computed without leaving log space."""
    if a >= 1.0:
        return log_mean_out
    return np.logaddexp(math.log((1.0 + a) / 2.0) + log_mean_out, math.log((1.0 - a) / 2.0))


def _offline_a(value: object) -> float:
    a = require_finite("offline_a", value)
    if not 0.0 <= a <= 1.0:
        raise InvalidInput("offline_a", "a number in [0, 1] (or 'auto')", value)
    return float(a)


def rmia_reference(
    ref_in: object | None, ref_out: object, *, mode: str = "online", offline_a: float = DEFAULT_OFFLINE_A
) -> RmiaReference:
    """Pr(x) and Pr(z) from the reference (shadow) models.

    Parameters
    ----------
    ref_in:
        :class:`LogProbs` of the "in" shadows (trained with Z, then unlearned: world U); needed
        online, ignored offline (may be ``None``).
    ref_out:
        :class:`LogProbs` of the "out" shadows (retrained without Z: world R).
    mode:
        ``"online"``: Pr = ½(mean_in + mean_out). ``"offline"``: Pr = ½((1 + a)·mean_out + 1 − a).
    offline_a:
        a in [0, 1] (offline only). a = 1 uses mean_out as Pr; a = 0 halves its weight and adds ½.

    Returns
    -------
    RmiaReference
    """
    if mode not in _MODES:
        raise InvalidInput("mode", f"one of {_MODES}", mode)
    out = _as_logprobs(ref_out, "ref_out")
    m, n_z = out.forget.shape[1], out.population.shape[1]
    if mode == "online":
        if ref_in is None:
            raise InvalidInput(
                "ref_in",
                "the 'in' shadows' log-probabilities for online RMIA",
                None,
                hint="Without them use mode='offline'.",
            )
        inn = _as_logprobs(ref_in, "ref_in", m=m, n_z=n_z)
        log_px = np.logaddexp(_log_mean(inn.forget), _log_mean(out.forget)) - math.log(2.0)
        log_pz = np.logaddexp(_log_mean(inn.population), _log_mean(out.population)) - math.log(2.0)
        return RmiaReference(log_px, log_pz, mode, None, inn.n_models, out.n_models)
    a = _offline_a(offline_a)
    return RmiaReference(
        _offline_log_marginal(_log_mean(out.forget), a),
        _offline_log_marginal(_log_mean(out.population), a),
        mode,
        a,
        0,
        out.n_models,
    )


# ----------------------------------------------------------------------------------------------
# scores


def _gamma(value: object) -> float:
    return require_positive("gamma", value)


def _fractions(lx: np.ndarray, lz: np.ndarray, log_gamma: float) -> np.ndarray:
    """Per model (row): fraction of z with lx − lz > log γ, for every x. lx (N, m), lz (N, n_z)."""
    lz_sorted = np.sort(lz, axis=1)
    out = np.empty(lx.shape, dtype=float)
    for i in range(lx.shape[0]):
        out[i] = np.searchsorted(lz_sorted[i], lx[i] - log_gamma, side="left")
    return out / lz.shape[1]


def rmia_example_scores(target: object, reference: RmiaReference, *, gamma: float = 1.0) -> np.ndarray:
    """Score(x; θ) = fraction of population records z with LR_θ(x, z) > γ, per model and record.

    Parameters
    ----------
    target:
        :class:`LogProbs` of the N scored models (forget and population records).
    reference:
        From :func:`rmia_reference` (or :func:`tune_offline_a`'s choice), with the same records.
    gamma:
        γ > 0 (default 1, the paper's default).

    Returns
    -------
    numpy.ndarray
        Shape ``(N, m)``, values in {0, 1/n_z, …, 1}.
    """
    if not isinstance(reference, RmiaReference):
        raise InvalidInput("reference", "an RmiaReference from attacks.rmia.rmia_reference", type(reference).__name__)
    t = _as_logprobs(target, "target", m=reference.log_px.shape[0], n_z=reference.log_pz.shape[0])
    lx = t.forget - reference.log_px
    lz = t.population - reference.log_pz
    return _fractions(lx, lz, math.log(_gamma(gamma)))


def tune_offline_a(
    ref_in: object, ref_out: object, *, gamma: float = 1.0, grid: tuple[float, ...] = A_GRID
) -> tuple[float, dict[str, float]]:
    """Choose offline RMIA's a on the shadows: the a that best separates "in" from "out" shadows.

    Every "in" shadow is scored against all "out" shadows, every "out" shadow against the
    *other* "out" shadows (leave one out, so no shadow is its own reference); the per-model
    score is the mean over the forget records, and the AUROC of "in" against "out" is computed
    for each a in ``grid``. The first a with the highest AUROC wins (as the paper's
    ``tune_offline_a``, which tries 0, 0.1, …, 1 on a paired reference model).

    Parameters
    ----------
    ref_in, ref_out:
        :class:`LogProbs` of the "in" (≥ 1) and "out" (≥ 2) shadows.
    gamma:
        γ of the score.
    grid:
        Candidate a values in [0, 1].

    Returns
    -------
    (float, dict)
        The chosen a and ``{str(a): AUROC}`` for every candidate.
    """
    out = _as_logprobs(ref_out, "ref_out", min_rows=2)
    inn = _as_logprobs(ref_in, "ref_in", m=out.forget.shape[1], n_z=out.population.shape[1])
    if not isinstance(grid, (tuple, list)) or not grid:
        raise InvalidInput("grid", "a non-empty sequence of numbers in [0, 1]", grid)
    values = [_offline_a(a) for a in grid]
    log_g = math.log(_gamma(gamma))
    s = out.n_models
    # Means of p over the out shadows, all and leave-one-out (probability space, floored).
    tiny = np.finfo(float).tiny
    px, pz = np.exp(out.forget), np.exp(out.population)
    log_mx_all, log_mz_all = _log_mean(out.forget), _log_mean(out.population)
    log_mx_loo = np.log(np.maximum((px.sum(axis=0) - px) / (s - 1), tiny))  # (S, m)
    log_mz_loo = np.log(np.maximum((pz.sum(axis=0) - pz) / (s - 1), tiny))  # (S, n_z)
    aurocs: dict[str, float] = {}
    best_a, best = values[0], -1.0
    for a in values:
        pos = _fractions(
            inn.forget - _offline_log_marginal(log_mx_all, a),
            inn.population - _offline_log_marginal(log_mz_all, a),
            log_g,
        ).mean(axis=1)
        neg = _fractions(
            out.forget - _offline_log_marginal(log_mx_loo, a),
            out.population - _offline_log_marginal(log_mz_loo, a),
            log_g,
        ).mean(axis=1)
        value = auroc(pos, neg)
        aurocs[f"{a:g}"] = float(value)
        if value > best + 1e-12:
            best_a, best = a, value
    return float(best_a), aurocs


# ----------------------------------------------------------------------------------------------
# the attack


@dataclass(frozen=True)
class RmiaResult:
    """Outcome of :func:`rmia_attack`.

    Attributes
    ----------
    roc:
        ROC summary of the per-model scores (positives = unlearned-world models).
    scores_unlearned, scores_retrained:
        Shapes ``(N_u,)``, ``(N_r,)``: mean over the forget set of Score(x; θ).
    example_scores_unlearned, example_scores_retrained:
        Shapes ``(N_u, m)``, ``(N_r, m)``: Score(x; θ) per record.
    example_aurocs:
        Shape ``(m,)``: AUROC of each record's score alone.
    reference:
        The Pr(x), Pr(z) used (mode, a, shadow counts).
    gamma:
        γ.
    n_population:
        Population records compared with.
    a_aurocs:
        Offline with a tuned on the shadows: the shadows' AUROC for every candidate a; else
        ``None``.
    """

    roc: RocSummary
    scores_unlearned: np.ndarray
    scores_retrained: np.ndarray
    example_scores_unlearned: np.ndarray
    example_scores_retrained: np.ndarray
    example_aurocs: np.ndarray
    reference: RmiaReference
    gamma: float
    n_population: int
    a_aurocs: dict[str, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dictionary (without the per-model and per-example arrays)."""
        return {
            "attack": "RMIA (Zarifzadeh et al. 2024) on the unlearning game",
            "roc": self.roc.to_dict(),
            "example_aurocs": self.example_aurocs.tolist(),
            "mode": self.reference.mode,
            "offline_a": self.reference.offline_a,
            "offline_a_aurocs": self.a_aurocs,
            "gamma": self.gamma,
            "n_population": self.n_population,
            "n_shadow_in": self.reference.n_in,
            "n_shadow_out": self.reference.n_out,
        }


def rmia_attack(
    ref_in: object | None,
    ref_out: object,
    unlearned: object,
    retrained: object,
    *,
    mode: str = "online",
    offline_a: float | str = "auto",
    gamma: float = 1.0,
    max_points: int = DEFAULT_CURVE_POINTS,
) -> RmiaResult:
    """RMIA on the unlearning game: score released models of both worlds.

    Parameters
    ----------
    ref_in:
        :class:`LogProbs` (or a pair ``(forget, population)``) of the "in" shadows: trained with
        Z then unlearned (world U). Required online, and offline with ``offline_a="auto"``.
    ref_out:
        The same for the "out" shadows: retrained without Z (world R).
    unlearned, retrained:
        The same for the evaluated models of each world (positives, negatives), independent of
        the shadows.
    mode:
        ``"online"`` (default) or ``"offline"``; see the module docstring.
    offline_a:
        Offline only: a in [0, 1], or ``"auto"`` (default) to choose it on the shadows with
        :func:`tune_offline_a` (:data:`DEFAULT_OFFLINE_A` when there are fewer than 2 "out"
        shadows or no "in" shadow).
    gamma:
        γ > 0 of the score (default 1).
    max_points:
        ROC curve points kept.

    Returns
    -------
    RmiaResult
    """
    if mode not in _MODES:
        raise InvalidInput("mode", f"one of {_MODES}", mode)
    g = _gamma(gamma)
    out = _as_logprobs(ref_out, "ref_out")
    m, n_z = out.forget.shape[1], out.population.shape[1]
    inn = None if ref_in is None else _as_logprobs(ref_in, "ref_in", m=m, n_z=n_z)
    a_aurocs = None
    if mode == "offline":
        if isinstance(offline_a, str):
            if offline_a != "auto":
                raise InvalidInput("offline_a", "a number in [0, 1] or 'auto'", offline_a)
            if inn is not None and out.n_models >= 2:
                a, a_aurocs = tune_offline_a(inn, out, gamma=g)
            else:
                a = DEFAULT_OFFLINE_A
        else:
            a = _offline_a(offline_a)
        reference = rmia_reference(None, out, mode="offline", offline_a=a)
    else:
        reference = rmia_reference(inn, out, mode="online")
    pos_ex = rmia_example_scores(_as_logprobs(unlearned, "unlearned", m=m, n_z=n_z), reference, gamma=g)
    neg_ex = rmia_example_scores(_as_logprobs(retrained, "retrained", m=m, n_z=n_z), reference, gamma=g)
    pos, neg = pos_ex.mean(axis=1), neg_ex.mean(axis=1)
    return RmiaResult(
        roc=RocSummary.from_scores(pos, neg, max_points=max_points),
        scores_unlearned=pos,
        scores_retrained=neg,
        example_scores_unlearned=pos_ex,
        example_scores_retrained=neg_ex,
        example_aurocs=_column_aurocs(pos_ex, neg_ex),
        reference=reference,
        gamma=g,
        n_population=int(n_z),
        a_aurocs=a_aurocs,
    )


# ----------------------------------------------------------------------------------------------
# the attacks on the audit's trials


def _population(inputs: AttackInputs, limit: int) -> tuple[Any, Any]:
    n = int(inputs.X_unseen.shape[0])
    if n < 1:
        raise InvalidInput("X_unseen", "at least one record no model was trained on (RMIA's population)", "0 records")
    if n <= limit:
        return inputs.X_unseen, inputs.y_unseen
    gen = torch.Generator().manual_seed(int(inputs.seed) % 2**63)
    pick = torch.randperm(n, generator=gen)[:limit].sort().values.to(inputs.X_unseen.device)
    return inputs.X_unseen[pick], inputs.y_unseen[pick]


class _RmiaAttack(Attack):
    """RMIA on the trials. Features of a model: log p_y on the forget records and on the
    population records; Pr(x), Pr(z), a and the scores are computed across models in :meth:`score`."""

    mode: str = "online"
    needs = frozenset({"shadows"})
    orientation = "memory"  # a higher likelihood ratio on Z: remembers more

    def features(self, inputs: AttackInputs, models: ModelRows) -> dict[str, np.ndarray]:
        """``forget`` (n, m) and ``population`` (n, n_z): log p_y of each released model on the
        forget records and on the population records (a seeded subset, the same for every block)."""
        limit = require_integer("rmia_population", inputs.settings.get("rmia_population", DEFAULT_POPULATION), 1)
        Xf, yf = inputs.forget_data
        Xz, yz = _population(inputs, limit)
        return {
            "forget": log_expit(phi_of_models(inputs.objective, models.released, Xf, yf)),
            "population": log_expit(phi_of_models(inputs.objective, models.released, Xz, yz)),
        }

    def score(self, inputs: AttackInputs, features: Features) -> AttackOutcome:
        def logp(world: str) -> LogProbs:
            return LogProbs(features[world]["forget"], features[world]["population"])

        n_out = int(shadow_features(features, "shadows_out", "forget").shape[0])
        # Offline, the "in" shadows only tune a (and a falls back to its default without them).
        with_in = self.mode == "online" or "shadows_in" in features
        if with_in:
            shadow_features(features, "shadows_in", "forget")
        result = rmia_attack(
            logp("shadows_in") if with_in else None,
            logp("shadows_out"),
            logp("unlearned"),
            logp("retrained"),
            mode=self.mode,
        )
        details: dict[str, Any] = {
            "mode": self.mode,
            "shadow_models_per_side": n_out,
            "targets": int(inputs.forget_data[0].shape[0]),
            "population_records": result.n_population,
            "gamma": result.gamma,
            "score": "mean over the forget set of the fraction of population records z with "
            "LR(x)/LR(z) > gamma, LR(.) = p_y(.|model)/Pr(.) over the shadows",
        }
        if self.mode == "offline":
            details["offline_a"] = result.reference.offline_a
            details["offline_a_aurocs_on_shadows"] = result.a_aurocs
        details.update(exposure_details(result.example_scores_unlearned, result.example_scores_retrained, inputs))
        return AttackOutcome(result.scores_unlearned, result.scores_retrained, details)


class RMIA(_RmiaAttack):
    """Online RMIA (Zarifzadeh et al. 2024) on the trials: Pr(x) over the "in" and "out" shadows."""

    name = "rmia"
    title = "RMIA"
    description = (
        "RMIA: for each forgotten record, the fraction of never-seen population records it "
        "dominates in p_y(model)/Pr, with Pr averaged over shadows trained with Z then unlearned "
        "and shadows trained without Z; score = mean over the forget set"
    )
    mode = "online"


class RMIAOffline(_RmiaAttack):
    """Offline RMIA: Pr(x) from the retrained shadows only, with a chosen on the shadows."""

    name = "rmia-offline"
    title = "RMIA (offline)"
    description = (
        "offline RMIA: as rmia, with Pr approximated from the retrained shadows alone "
        "(Pr = ((1+a) mean_out + 1 - a)/2, a chosen on the shadows); score = mean over the forget set"
    )
    mode = "offline"
