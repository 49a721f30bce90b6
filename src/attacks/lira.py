"""U-LiRA and offline LiRA: per-example likelihood-ratio attacks on unlearning (Hayes et al. 2024).

LiRA (Carlini et al. 2022) decides whether an example x was in a model's training set from one
number, the **logit-scaled confidence** of the model on x,

    φ(x) = log p_y(x) − log(1 − p_y(x)) = log p_y(x) − log Σ_{j≠y} p_j(x),

which is close to Gaussian across training runs. Shadow models trained *with* x and *without*
x give per-example Gaussians N(μ_in, σ_in²) and N(μ_out, σ_out²), and the test statistic for a
model is the log-likelihood ratio

    Λ(x) = log N(φ(x); μ_in, σ_in²) − log N(φ(x); μ_out, σ_out²)

(the **online** attack; ``fixed_variance=True`` is LiRA's ``fix_variance`` option for few
shadows). The **offline** attack uses the "out" Gaussian only, as a one-sided test: how far φ
lies *above* what models trained without x give (Carlini et al. 2022, the offline attack's
one-sided test; their ``plot.py::generate_ours_offline`` scores the two-sided density instead),

    Λ_off(x) = −log Pr[Z ≥ φ(x)],  Z ~ N(μ_out, σ_out²).

**U-LiRA** (Hayes, Shumailov, Triantafillou, Khalifa & Papernot 2024) plays the same game
between the two worlds an unlearning certificate compares:

* the **"in" shadows** are trained *with* the target examples and then **unlearned** with the
  audited method: they are samples of the *unlearned world* U;
* the **"out" shadows** are trained *without* the targets (= retrained from scratch): samples of
  the *retrained world* R.

So "in" here does **not** mean "the model still contains x": it means "x went through training
and then through the unlearning algorithm". If the method unlearned perfectly, the two worlds
would have the same distribution of φ and every test would be at chance. U-LiRA *is* online
LiRA on this game (attack ``ulira``); :func:`lira_offline_attack` (attack ``lira-offline``) is
the offline one, which needs only the retrained world's shadows (the cheap side: no run of the
audited unlearning algorithm).

:func:`ulira_attack` fits the Gaussians on the shadows and scores *other*, independently trained
models of both worlds: positives are unlearned-world models, negatives retrained-world models.
Its per-model scores are what :mod:`attacks.epsilon` turns into an ε lower bound (positive =
world U, as there). Cautions from ``anchors-auditing.md`` §2.12 / §5.3:

* **Fit and evaluate on disjoint models.** The Gaussians (and the variance model, below) are
  chosen from data; scoring the shadows themselves inflates every number (pitfall 1). The
  caller must pass evaluated models trained independently of the shadows.
* **Group size.** With m > 1 target examples the per-model score sums Λ over the examples
  (a product of per-example likelihoods, treating the examples as independent given the world)
  and tests the *group*: it is **not** Hayes et al.'s per-example attack, and its ε is a
  group-privacy ε. The per-example view is kept: :attr:`UliraResult.example_scores_unlearned`,
  :attr:`UliraResult.example_aurocs` and :func:`per_record_exposure`, which ranks the forget
  records (by position in the forget set, never by content) from most to least exposed, with a
  Clopper–Pearson ε bound per record. The vulnerability of single examples varies a lot
  (Hayes et al. 2024).
* **Variance model.** Per-example variances need many shadows; with few, LiRA's global
  variance is better, and the reverse holds with many shadows and heterogeneous examples. By
  default (``fixed_variance=None``) :func:`choose_variance` picks the model with the higher
  leave-one-out predictive log-likelihood **on the shadows** (never on the scored trials).

Query augmentations (LiRA averages φ over flips and shifts) are the caller's choice: pass the
average as φ.

References
----------
.. [1] N. Carlini, S. Chien, M. Nasr, S. Song, A. Terzis and F. Tramèr, "Membership Inference
   Attacks From First Principles", IEEE S&P 2022 (φ, the online test and its global-variance
   variant, the one-sided offline test); code: tensorflow/privacy
   ``research/mi_lira_2021`` (``score.py``, ``plot.py::generate_ours``,
   ``plot.py::generate_ours_offline``).
.. [2] J. Hayes, I. Shumailov, E. Triantafillou, A. Khalifa and N. Papernot, "Inexact Unlearning
   Needs More Careful Evaluations to Avoid a False Sense of Privacy", SaTML 2025
   (arXiv:2403.01218): U-LiRA.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import log_ndtr

from attacks.base import Attack, AttackInputs, AttackOutcome, Features, ModelRows
from attacks.exposure import _column_aurocs, exposure_details
from attacks.lira_gaussians import (
    GaussianFit,
    VarianceChoice,
    _given_variance,
    _log_normal,
    _min_std,
    _phi_matrix,
    choose_variance,
    fit_gaussians,
    phi_of_models,
    shadow_features,
)
from attacks.roc import DEFAULT_CURVE_POINTS, RocSummary
from certify.errors import InvalidInput, require_finite_array

__all__ = [
    "LiRAOffline",
    "OfflineLiraResult",
    "ULiRA",
    "UliraResult",
    "lira_offline_attack",
    "lira_offline_example_scores",
    "ulira_attack",
    "ulira_example_scores",
    "ulira_scores",
]


# ----------------------------------------------------------------------------------------------
# scores


def ulira_example_scores(phi_models: object, fit: GaussianFit) -> np.ndarray:
    """Per-example log-likelihood ratios Λ of N evaluated models.

    Parameters
    ----------
    phi_models:
        Shape ``(N, m)``: φ of the m target examples under N evaluated models (independent of
        the shadows in ``fit``).
    fit:
        From :func:`fit_gaussians`.

    Returns
    -------
    numpy.ndarray
        Shape ``(N, m)``: ``log N(φ; μ_in, σ_in²) − log N(φ; μ_out, σ_out²)``; positive values
        favour the unlearned world.
    """
    if not isinstance(fit, GaussianFit):
        raise InvalidInput("fit", "a GaussianFit from attacks.lira_gaussians.fit_gaussians", type(fit).__name__)
    phi = _phi_matrix(phi_models, "phi_models", min_rows=1, m=fit.n_targets)
    return _log_normal(phi, fit.mu_in, fit.sigma_in) - _log_normal(phi, fit.mu_out, fit.sigma_out)


def ulira_scores(phi_models: object, fit: GaussianFit) -> np.ndarray:
    """Per-model U-LiRA score: Λ summed over the m target examples.

    Parameters
    ----------
    phi_models:
        Shape ``(N, m)``.
    fit:
        From :func:`fit_gaussians`.

    Returns
    -------
    numpy.ndarray
        Shape ``(N,)``: the log-likelihood ratio of the whole target set, treating examples as
        independent given the world. With m = 1 this is exactly the per-example U-LiRA test; with
        m > 1 it tests the group (group privacy applies to its ε).
    """
    return ulira_example_scores(phi_models, fit).sum(axis=1)


# ----------------------------------------------------------------------------------------------
# the online attack (U-LiRA)


@dataclass(frozen=True)
class UliraResult:
    """Outcome of :func:`ulira_attack`.

    Attributes
    ----------
    roc:
        ROC summary of the per-model scores, positives = unlearned-world models. Point
        estimates; AUROC < ½ is leakage too.
    scores_unlearned, scores_retrained:
        Shapes ``(N_u,)`` and ``(N_r,)``: :func:`ulira_scores` of the evaluated models of each
        world, one independent trial each, ready for :func:`attacks.epsilon.clopper_pearson_epsilon`
        (world U = unlearned).
    example_aurocs:
        Shape ``(m,)``: AUROC of each target example's Λ alone (the per-example view).
    n_shadow_in, n_shadow_out:
        Shadow models per side ("in" = trained with the targets then unlearned).
    n_targets:
        Number m of target examples.
    fit:
        The Gaussians.
    example_scores_unlearned, example_scores_retrained:
        Shapes ``(N_u, m)`` and ``(N_r, m)``: the per-example Λ whose row sums are the scores
        (for :func:`per_record_exposure`).
    variance:
        The variance model and how it was chosen.
    """

    roc: RocSummary
    scores_unlearned: np.ndarray
    scores_retrained: np.ndarray
    example_aurocs: np.ndarray
    n_shadow_in: int
    n_shadow_out: int
    n_targets: int
    fit: GaussianFit
    example_scores_unlearned: np.ndarray
    example_scores_retrained: np.ndarray
    variance: VarianceChoice

    @property
    def n_unlearned(self) -> int:
        """Evaluated unlearned-world models (positives)."""
        return int(self.scores_unlearned.shape[0])

    @property
    def n_retrained(self) -> int:
        """Evaluated retrained-world models (negatives)."""
        return int(self.scores_retrained.shape[0])

    def to_dict(self, *, include_fit: bool = False) -> dict[str, Any]:
        """Plain JSON-ready dictionary (the Gaussians only with ``include_fit=True``)."""
        out: dict[str, Any] = {
            "attack": "U-LiRA (Hayes et al. 2024)",
            "roc": self.roc.to_dict(),
            "scores_unlearned": self.scores_unlearned.tolist(),
            "scores_retrained": self.scores_retrained.tolist(),
            "example_aurocs": self.example_aurocs.tolist(),
            "n_shadow_in": self.n_shadow_in,
            "n_shadow_out": self.n_shadow_out,
            "n_targets": self.n_targets,
            "n_unlearned": self.n_unlearned,
            "n_retrained": self.n_retrained,
            "fixed_variance": self.fit.fixed_variance,
            "variance": self.variance.to_dict(),
            "min_std": self.fit.min_std,
            "positives": "unlearned world (trained with the targets, then unlearned)",
            "negatives": "retrained world (trained without the targets)",
        }
        if include_fit:
            out["fit"] = self.fit.to_dict()
        return out


def ulira_attack(
    phi_in: object,
    phi_out: object,
    phi_unlearned: object,
    phi_retrained: object,
    *,
    fixed_variance: bool | None = None,
    min_std: float = 1e-3,
    max_points: int = DEFAULT_CURVE_POINTS,
) -> UliraResult:
    """U-LiRA: fit per-example Gaussians on shadows, score evaluated models of both worlds.

    Parameters
    ----------
    phi_in:
        Shape ``(S_in, m)``: φ (:func:`logit_confidence`) of the m target examples under the
        **"in" shadows: trained with the targets, then unlearned with the audited method**.
        In U-LiRA "in" is the unlearned world, not "the model still contains x".
    phi_out:
        Shape ``(S_out, m)``: φ under the **"out" shadows: trained without the targets**
        (retrained from scratch).
    phi_unlearned:
        Shape ``(N_u, m)``: φ under evaluated models from the unlearned world (the positives),
        trained independently of the shadows.
    phi_retrained:
        Shape ``(N_r, m)``: φ under evaluated models from the retrained world (the negatives),
        trained independently of the shadows.
    fixed_variance:
        ``None`` (default): per-example or global variance, whichever :func:`choose_variance`
        finds predicts held-out *shadows* better. ``True``/``False``: global/per-example, as in
        :func:`fit_gaussians`. The number of shadows per side is set by the caller through the
        array shapes (the U-LiRA paper and the NeurIPS 2023 unlearning competition use
        hundreds).
    min_std:
        Passed to :func:`fit_gaussians`.
    max_points:
        Curve points kept in the ROC summary.

    Returns
    -------
    UliraResult
        ROC summary (AUROC, TPR at 1 % and 0.1 % FPR), per-model scores of both worlds for an
        ε lower bound (the **sum** of Λ over the targets: a group test), the per-example Λ and
        AUROCs, the variance model and the counts.

    Notes
    -----
    Fitting the Gaussians is a choice made from data; scoring the shadows themselves would
    inflate every number (``anchors-auditing.md`` §2.12, pitfall 1). Evaluated and shadow
    models must come from independent training runs; this function cannot check that (a
    deterministic method legitimately produces identical φ in different runs).
    """
    if fixed_variance is None:
        variance = choose_variance(phi_in, phi_out, min_std=min_std)
    else:
        a = _phi_matrix(phi_in, "phi_in", min_rows=1)
        b = _phi_matrix(phi_out, "phi_out", min_rows=1, m=a.shape[1])
        variance = _given_variance(fixed_variance, (int(a.shape[0]), int(b.shape[0])))
    fit = fit_gaussians(phi_in, phi_out, fixed_variance=variance.fixed_variance, min_std=min_std)
    m = fit.n_targets
    pos_phi = _phi_matrix(phi_unlearned, "phi_unlearned", min_rows=1, m=m)
    neg_phi = _phi_matrix(phi_retrained, "phi_retrained", min_rows=1, m=m)
    pos_ex = ulira_example_scores(pos_phi, fit)
    neg_ex = ulira_example_scores(neg_phi, fit)
    pos = pos_ex.sum(axis=1)
    neg = neg_ex.sum(axis=1)
    return UliraResult(
        roc=RocSummary.from_scores(pos, neg, max_points=max_points),
        scores_unlearned=pos,
        scores_retrained=neg,
        example_aurocs=_column_aurocs(pos_ex, neg_ex),
        n_shadow_in=fit.n_in,
        n_shadow_out=fit.n_out,
        n_targets=m,
        fit=fit,
        example_scores_unlearned=pos_ex,
        example_scores_retrained=neg_ex,
        variance=variance,
    )


# ----------------------------------------------------------------------------------------------
# the offline attack


@dataclass(frozen=True)
class OfflineLiraResult:
    """Outcome of :func:`lira_offline_attack`.

    Attributes
    ----------
    roc, scores_unlearned, scores_retrained, example_aurocs:
        As in :class:`UliraResult`; the per-model score is Σ_x Λ_off(x).
    example_scores_unlearned, example_scores_retrained:
        Shapes ``(N_u, m)``, ``(N_r, m)``: the per-example Λ_off.
    mu_out, sigma_out:
        Shape ``(m,)``: the retrained world's Gaussians.
    n_shadow_out, n_targets:
        Shadows ("out" only) and target examples.
    variance:
        The variance model and how it was chosen (on the "out" shadows).
    min_std:
        Floor applied to every σ.
    """

    roc: RocSummary
    scores_unlearned: np.ndarray
    scores_retrained: np.ndarray
    example_aurocs: np.ndarray
    example_scores_unlearned: np.ndarray
    example_scores_retrained: np.ndarray
    mu_out: np.ndarray
    sigma_out: np.ndarray
    n_shadow_out: int
    n_targets: int
    variance: VarianceChoice
    min_std: float

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dictionary (without the per-model and per-example arrays)."""
        return {
            "attack": "offline LiRA (Carlini et al. 2022) on the unlearning game",
            "roc": self.roc.to_dict(),
            "example_aurocs": self.example_aurocs.tolist(),
            "n_shadow_out": self.n_shadow_out,
            "n_targets": self.n_targets,
            "variance": self.variance.to_dict(),
            "min_std": self.min_std,
        }


def lira_offline_example_scores(phi_models: object, mu_out: object, sigma_out: object) -> np.ndarray:
    """Offline LiRA's one-sided per-example score Λ_off = −log Pr[Z ≥ φ], Z ~ N(μ_out, σ_out²).

    Parameters
    ----------
    phi_models:
        Shape ``(N, m)``: φ of the m targets under N evaluated models.
    mu_out, sigma_out:
        Shape ``(m,)``: the retrained world's Gaussians (σ > 0).

    Returns
    -------
    numpy.ndarray
        Shape ``(N, m)``, ≥ 0 and increasing in φ: large when the model is more confident on x
        than models trained without x are (computed as ``−log_ndtr(−(φ − μ)/σ)``, accurate far
        into both tails).
    """
    mu = require_finite_array("mu_out", mu_out, "a 1-D array of finite means, one per target")
    sd = require_finite_array("sigma_out", sigma_out, "a 1-D array of standard deviations > 0")
    if mu.ndim != 1 or sd.shape != mu.shape:
        raise InvalidInput("sigma_out", f"shape {mu.shape}, as mu_out", f"shape {sd.shape}")
    if np.any(sd <= 0):
        raise InvalidInput("sigma_out", "standard deviations > 0", float(sd.min()))
    phi = _phi_matrix(phi_models, "phi_models", min_rows=1, m=mu.shape[0])
    return -log_ndtr(-(phi - mu) / sd)


def lira_offline_attack(
    phi_out: object,
    phi_unlearned: object,
    phi_retrained: object,
    *,
    fixed_variance: bool | None = None,
    min_std: float = 1e-3,
    max_points: int = DEFAULT_CURVE_POINTS,
) -> OfflineLiraResult:
    """Offline LiRA on the unlearning game: Gaussians of the retrained world only.

    The score of a model is Σ_x Λ_off(x) = Σ_x −log Pr[Z_x ≥ φ_x] (Fisher's combination of the
    per-example one-sided p-values): it is large when the model is more confident on the
    forgotten records than retrained models are, i.e. when it still remembers them. No
    unlearned shadow is needed, which is what makes the offline attack cheap; it is weaker
    than the online one (U-LiRA) when unlearning moves φ in a way the "out" Gaussian alone
    cannot see (e.g. a *lower* confidence than retraining gives scores near 0 for both worlds
    on that record).

    Parameters
    ----------
    phi_out:
        Shape ``(S_out, m)``, S_out ≥ 2: φ under the "out" shadows (retrained world).
    phi_unlearned, phi_retrained:
        Shapes ``(N_u, m)``, ``(N_r, m)``: φ under the evaluated models of each world,
        independent of the shadows.
    fixed_variance:
        ``None`` (default): per-example or pooled σ, chosen by :func:`choose_variance` on the
        "out" shadows; ``True``/``False`` to force pooled/per-example.
    min_std, max_points:
        σ floor and ROC curve points.

    Returns
    -------
    OfflineLiraResult
    """
    floor = _min_std(min_std)
    b = _phi_matrix(phi_out, "phi_out", min_rows=2)
    if fixed_variance is None:
        variance = choose_variance(None, b, min_std=floor)
    else:
        variance = _given_variance(fixed_variance, (int(b.shape[0]),))
    mu = b.mean(axis=0)
    if variance.fixed_variance:
        sigma = np.full(b.shape[1], max(float(np.sqrt(np.sum((b - mu) ** 2) / ((b.shape[0] - 1) * b.shape[1]))), floor))
    else:
        sigma = np.maximum(b.std(axis=0, ddof=1), floor)
    m = b.shape[1]
    pos_ex = lira_offline_example_scores(_phi_matrix(phi_unlearned, "phi_unlearned", min_rows=1, m=m), mu, sigma)
    neg_ex = lira_offline_example_scores(_phi_matrix(phi_retrained, "phi_retrained", min_rows=1, m=m), mu, sigma)
    pos, neg = pos_ex.sum(axis=1), neg_ex.sum(axis=1)
    return OfflineLiraResult(
        roc=RocSummary.from_scores(pos, neg, max_points=max_points),
        scores_unlearned=pos,
        scores_retrained=neg,
        example_aurocs=_column_aurocs(pos_ex, neg_ex),
        example_scores_unlearned=pos_ex,
        example_scores_retrained=neg_ex,
        mu_out=mu,
        sigma_out=sigma,
        n_shadow_out=int(b.shape[0]),
        n_targets=int(m),
        variance=variance,
        min_std=floor,
    )


# ----------------------------------------------------------------------------------------------
# the attacks on the audit's trials


def _forget_phi(inputs: AttackInputs, models: ModelRows) -> dict[str, np.ndarray]:
    """``phi``: φ of each released model of ``models`` on the forget set, shape (n, m): the
    features of the LiRA attacks (each row reads one model only)."""
    Xf, yf = inputs.forget_data
    return {"phi": phi_of_models(inputs.objective, models.released, Xf, yf)}


class ULiRA(Attack):
    """U-LiRA (Hayes et al. 2024) as an attack on the trials, from the audit's shadow models.

    This is online LiRA on the unlearning game (there is no separate ``lira`` attack: it would
    be this one). The score of a release is the **sum** over the forget set of per-record
    log-likelihood ratios (a group test); ``details["per_record"]`` keeps the per-record results.
    What it reads of each model (its features) is φ on each forgotten record; the Gaussians, the
    variance model and the ranking are fitted across models, in :meth:`score`.
    """

    name = "ulira"
    title = "U-LiRA"
    description = (
        "U-LiRA: Gaussian fits of logit-scaled confidence from shadow models trained with Z then "
        "unlearned (in) vs trained without Z (out), variance model chosen on the shadows; score = "
        "log-likelihood ratio summed over the forget set"
    )
    needs = frozenset({"shadows"})

    def features(self, inputs: AttackInputs, models: ModelRows) -> dict[str, np.ndarray]:
        return _forget_phi(inputs, models)

    def score(self, inputs: AttackInputs, features: Features) -> AttackOutcome:
        phi_in = shadow_features(features, "shadows_in", "phi")
        phi_out = shadow_features(features, "shadows_out", "phi")
        result = ulira_attack(phi_in, phi_out, features["unlearned"]["phi"], features["retrained"]["phi"])
        details = {
            "shadow_models_per_side": int(phi_in.shape[0]),
            "targets": int(inputs.forget_data[0].shape[0]),
            "score": "sum over the forget set of per-record log-likelihood ratios (a group test)",
            "variance_model": result.variance.model,
            "variance_choice": result.variance.to_dict(),
        }
        details.update(exposure_details(result.example_scores_unlearned, result.example_scores_retrained, inputs))
        return AttackOutcome(result.scores_unlearned, result.scores_retrained, details)


class LiRAOffline(Attack):
    """Offline LiRA (Carlini et al. 2022) on the unlearning game: the retrained shadows only.

    Features of a model: φ on each forgotten record, as :class:`ULiRA`."""

    name = "lira-offline"
    title = "LiRA (offline)"
    description = (
        "offline LiRA: how far the logit-scaled confidence on each forgotten record lies above the "
        "retrained world's Gaussian (one-sided, from shadows trained without Z); score = "
        "-log p-value summed over the forget set"
    )
    needs = frozenset({"shadows"})
    orientation = "memory"  # confidence on Z above the retrained world's: remembers more

    def features(self, inputs: AttackInputs, models: ModelRows) -> dict[str, np.ndarray]:
        return _forget_phi(inputs, models)

    def score(self, inputs: AttackInputs, features: Features) -> AttackOutcome:
        result = lira_offline_attack(
            shadow_features(features, "shadows_out", "phi"), features["unlearned"]["phi"], features["retrained"]["phi"]
        )
        details = {
            "shadow_models_out": result.n_shadow_out,
            "targets": result.n_targets,
            "score": "sum over the forget set of -log Pr[Z >= phi], Z ~ N(mu_out, sigma_out^2)",
            "variance_model": result.variance.model,
            "variance_choice": result.variance.to_dict(),
        }
        details.update(exposure_details(result.example_scores_unlearned, result.example_scores_retrained, inputs))
        return AttackOutcome(result.scores_unlearned, result.scores_retrained, details)
