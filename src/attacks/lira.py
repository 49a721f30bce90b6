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
import torch
from scipy.special import log_ndtr, logsumexp

from attacks.base import Attack, AttackInputs, AttackOutcome, Features, ModelRows, to_numpy
from attacks.epsilon import clopper_pearson_epsilon
from attacks.roc import DEFAULT_CURVE_POINTS, RocSummary
from certify.errors import InvalidInput, require_finite_array, require_integer, require_positive
from unlearners.batched import batched_logits

__all__ = [
    "GaussianFit",
    "OfflineLiraResult",
    "UliraResult",
    "VarianceChoice",
    "choose_variance",
    "exposure_details",
    "fit_gaussians",
    "lira_offline_attack",
    "lira_offline_example_scores",
    "logit_confidence",
    "per_record_exposure",
    "phi_of_models",
    "shadow_features",
    "ulira_attack",
    "ulira_example_scores",
    "ulira_scores",
]

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


# ----------------------------------------------------------------------------------------------
# validation helpers


def _phi_matrix(value: object, field: str, *, min_rows: int, m: int | None = None) -> np.ndarray:
    """A finite (rows, m) array: one row per model, one column per target example."""
    allowed = "a 2-D array (models, target examples) of finite φ values"
    arr = require_finite_array(field, value, allowed)
    if arr.ndim != 2:
        raise InvalidInput(
            field,
            allowed,
            f"array of shape {arr.shape}",
            hint="For one target example pass phi[:, None]; for one model pass phi[None, :].",
        )
    if arr.shape[1] < 1:
        raise InvalidInput(field, "at least one target example (column)", "0 columns")
    if m is not None and arr.shape[1] != m:
        raise InvalidInput(
            field,
            f"{m} column(s), one per target example as in the shadow arrays",
            f"{arr.shape[1]} column(s)",
        )
    if arr.shape[0] < min_rows:
        raise InvalidInput(
            field,
            f"at least {min_rows} model(s) (rows)",
            f"{arr.shape[0]} row(s)",
            hint="Per-example Gaussians need >= 2 shadow models per side; with fewer use fixed_variance=True."
            if min_rows == 2
            else None,
        )
    return arr


def _min_std(value: object) -> float:
    return require_positive("min_std", value)


# ----------------------------------------------------------------------------------------------
# the statistic


def logit_confidence(logits: object, labels: object, *, one_logit: bool | None = None) -> np.ndarray:
    """LiRA's logit-scaled confidence φ = log p_y − log(1 − p_y), computed stably from logits.

    Parameters
    ----------
    logits:
        Either ``(..., n)``: one logit z per example of a binary model with
        ``p_1 = sigmoid(z)``; or ``(..., n, C)`` with ``C >= 2``: softmax logits. Leading axes
        stack models, e.g. ``(S, n)`` or ``(S, n, C)`` for S shadow models. Finite.
    labels:
        Shape ``(n,)``: the examples' true classes (``{0, 1}`` for one-logit models, ``[0, C)``
        otherwise), shared by all stacked models.
    one_logit:
        ``True`` for the one-logit layout, ``False`` for the C-logit layout, ``None`` (default)
        to infer it from the shapes. Inference fails, with an error, only when both layouts fit
        (the last two axes are ``(n, n)``).

    Returns
    -------
    numpy.ndarray
        φ with the logits' shape minus the class axis: ``(..., n)``.

    Notes
    -----
    One logit: ``log p_1 − log p_0 = z``, so φ = z for y = 1 and −z for y = 0, exactly.
    C logits: ``log p_y − log Σ_{j≠y} p_j = z_y − logsumexp_{j≠y} z_j`` (the normaliser
    cancels), so no probability is ever formed and φ stays finite and accurate for confident
    models. The LiRA reference code forms softmax probabilities and adds 1e-45 inside the logs
    (``score.py``), which saturates near |φ| ≈ 100; here there is no such cap. With C = 2 both
    layouts give the same φ for ``z_1 − z_0``.

    Raises
    ------
    certify.errors.InvalidInput
        On NaN or infinite logits, shapes that match neither layout, or labels out of range.
    """
    z = require_finite_array("logits", logits, "an array of finite logits, shape (..., n) or (..., n, C)")
    y = require_finite_array("labels", labels, "a 1-D array of integer class labels")
    if y.ndim != 1 or y.size < 1:
        raise InvalidInput("labels", "a 1-D array with one class label per example", f"shape {y.shape}")
    n = y.shape[0]
    binary_fits = z.ndim >= 1 and z.shape[-1] == n
    multi_fits = z.ndim >= 2 and z.shape[-2] == n and z.shape[-1] >= 2
    if one_logit is None:
        if binary_fits and multi_fits:
            raise InvalidInput(
                "one_logit",
                "True or False when logits have shape (..., n, n)",
                None,
                hint=f"logits of shape {z.shape} fit both (..., n) one-logit and (..., n, C) layouts.",
            )
        if not (binary_fits or multi_fits):
            raise InvalidInput(
                "logits",
                f"shape (..., {n}) (one logit) or (..., {n}, C) with C >= 2",
                f"array of shape {z.shape}",
                hint="The example axis must match labels; a one-logit (n, 1) array: squeeze it.",
            )
        one_logit = binary_fits
    elif not isinstance(one_logit, (bool, np.bool_)):
        raise InvalidInput("one_logit", "True, False or None", one_logit)
    elif one_logit and not binary_fits:
        raise InvalidInput("logits", f"shape (..., {n}) with one_logit=True", f"array of shape {z.shape}")
    elif not one_logit and not multi_fits:
        raise InvalidInput(
            "logits", f"shape (..., {n}, C) with C >= 2 with one_logit=False", f"array of shape {z.shape}"
        )

    n_classes = 2 if one_logit else z.shape[-1]
    if not np.all((y == np.round(y)) & (y >= 0) & (y < n_classes)):
        raise InvalidInput("labels", f"integers in [0, {n_classes - 1}]", sorted(set(np.unique(y).tolist()))[:10])
    yi = y.astype(np.int64)
    if one_logit:
        return np.where(yi == 1, z, -z)
    onehot = np.arange(n_classes) == yi[:, None]  # (n, C), broadcasts over leading axes
    z_y = np.sum(np.where(onehot, z, 0.0), axis=-1)
    others = logsumexp(np.where(onehot, -np.inf, z), axis=-1)
    return z_y - others


# ----------------------------------------------------------------------------------------------
# Gaussian fits


@dataclass(frozen=True)
class GaussianFit:
    """Per-example Gaussians of φ in the two worlds, fitted by :func:`fit_gaussians`.

    Attributes
    ----------
    mu_in, sigma_in:
        Shape ``(m,)``: mean and standard deviation of φ over the "in" shadows (trained with
        the targets, then unlearned: world U).
    mu_out, sigma_out:
        Shape ``(m,)``: the same over the "out" shadows (trained without: world R).
    n_in, n_out:
        Shadow models per side.
    fixed_variance:
        Whether one pooled σ was used for all examples and both sides.
    min_std:
        Floor applied to every σ.
    """

    mu_in: np.ndarray
    sigma_in: np.ndarray
    mu_out: np.ndarray
    sigma_out: np.ndarray
    n_in: int
    n_out: int
    fixed_variance: bool
    min_std: float

    @property
    def n_targets(self) -> int:
        """Number m of target examples."""
        return int(self.mu_in.shape[0])

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dictionary."""
        return {
            "mu_in": self.mu_in.tolist(),
            "sigma_in": self.sigma_in.tolist(),
            "mu_out": self.mu_out.tolist(),
            "sigma_out": self.sigma_out.tolist(),
            "n_in": self.n_in,
            "n_out": self.n_out,
            "fixed_variance": self.fixed_variance,
            "min_std": self.min_std,
        }


def fit_gaussians(
    phi_in: object, phi_out: object, *, fixed_variance: bool = False, min_std: float = 1e-3
) -> GaussianFit:
    """Fit per-example Gaussians to φ of the "in" and "out" shadow models.

    Parameters
    ----------
    phi_in:
        Shape ``(S_in, m)``: φ of the m target examples under S_in shadow models trained *with*
        the targets and then unlearned by the audited method (U-LiRA's "in" world = world U).
    phi_out:
        Shape ``(S_out, m)``: φ under S_out shadow models trained *without* the targets
        (retrained, world R).
    fixed_variance:
        ``False`` (default): per-example, per-side standard deviations (LiRA online, needs
        S_in, S_out >= 2). ``True``: one σ shared by all examples and both sides, the pooled
        within-example standard deviation
        ``sqrt(Σ (φ − μ_example,side)² / ((S_in − 1 + S_out − 1)·m))``; LiRA's "global variance"
        for few shadows (Carlini et al. 2022; needs S_in + S_out >= 3).
    min_std:
        Floor on every σ (> 0), so that degenerate examples (all shadows agree, e.g. a
        deterministic method) give a finite likelihood ratio.

    Returns
    -------
    GaussianFit
        Means are sample means; standard deviations use ``ddof = 1`` (unbiased variance), which
        matters with few shadows. (The LiRA reference ``plot.py`` uses medians, ``ddof = 0``,
        and for ``fix_variance`` the standard deviation of *all* in-values including the spread
        between examples; the pooled within-example σ here is the estimate of the shared σ the
        Gaussian model assumes.)

    Raises
    ------
    certify.errors.InvalidInput
        On non-2-D or non-finite arrays, different numbers of columns, or too few shadows.
    """
    if not isinstance(fixed_variance, (bool, np.bool_)):
        raise InvalidInput("fixed_variance", "True or False", fixed_variance)
    floor = _min_std(min_std)
    min_rows = 1 if fixed_variance else 2
    a = _phi_matrix(phi_in, "phi_in", min_rows=min_rows)
    b = _phi_matrix(phi_out, "phi_out", min_rows=min_rows, m=a.shape[1])
    mu_in = a.mean(axis=0)
    mu_out = b.mean(axis=0)
    if fixed_variance:
        dof = (a.shape[0] - 1 + b.shape[0] - 1) * a.shape[1]
        if dof < 1:
            raise InvalidInput(
                "phi_in",
                "together with phi_out at least 3 shadow models",
                f"{a.shape[0]} + {b.shape[0]}",
                hint="A variance needs at least two models on one side.",
            )
        ss = float(np.sum((a - mu_in) ** 2) + np.sum((b - mu_out) ** 2))
        sigma = max(np.sqrt(ss / dof), floor)
        sig_in = np.full(a.shape[1], sigma)
        sig_out = np.full(a.shape[1], sigma)
    else:
        sig_in = np.maximum(a.std(axis=0, ddof=1), floor)
        sig_out = np.maximum(b.std(axis=0, ddof=1), floor)
    return GaussianFit(
        mu_in=mu_in,
        sigma_in=sig_in,
        mu_out=mu_out,
        sigma_out=sig_out,
        n_in=int(a.shape[0]),
        n_out=int(b.shape[0]),
        fixed_variance=bool(fixed_variance),
        min_std=floor,
    )


# ----------------------------------------------------------------------------------------------
# the variance model, chosen on the shadows

VARIANCE_MODELS = ("per-example", "global")
"""The variance models :func:`choose_variance` decides between."""


@dataclass(frozen=True)
class VarianceChoice:
    """The variance model of the Gaussians and the evidence it was chosen on.

    Attributes
    ----------
    model:
        ``"per-example"`` (one σ per example and side) or ``"global"`` (one σ shared by all
        examples and sides: LiRA's ``fix_variance``).
    loglik_per_example, loglik_global:
        Mean leave-one-shadow-out predictive log-density of one shadow's φ on one example
        (nats) under each model; ``None`` where there are too few shadows to evaluate it.
    n_shadows:
        Shadows per side the choice was made on (``(S_in, S_out)``, or ``(S_out,)`` offline).
    reason:
        One sentence: how the model was chosen.
    """

    model: str
    loglik_per_example: float | None
    loglik_global: float | None
    n_shadows: tuple[int, ...]
    reason: str

    @property
    def fixed_variance(self) -> bool:
        """The ``fixed_variance`` flag of :func:`fit_gaussians` for this model."""
        return self.model == "global"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dictionary."""
        return {
            "model": self.model,
            "loglik_per_example": self.loglik_per_example,
            "loglik_global": self.loglik_global,
            "n_shadows": list(self.n_shadows),
            "criterion": "leave-one-shadow-out predictive log-likelihood on the shadows (never the trials)",
            "reason": self.reason,
        }


def _loo_logliks(sides: list[np.ndarray], floor: float) -> tuple[float | None, float | None]:
    """Mean held-out log-density of one shadow's φ, per-example and global variance models.

    Shadow s of a side is predicted from the Gaussians fitted without it (closed form: with
    dev = φ_s − μ, the held-out residual is dev·S/(S−1) and the sum of squares without s is
    SS − dev²·S/(S−1)); variances use ddof = 1 and the floor, as :func:`fit_gaussians`.
    """
    m = sides[0].shape[1]
    devs = [a - a.mean(axis=0) for a in sides]
    per_example = glob = None
    if all(a.shape[0] >= 3 for a in sides):
        total, count = 0.0, 0
        for a, dev in zip(sides, devs):
            n = a.shape[0]
            k = n / (n - 1.0)
            ss_loo = np.maximum((dev**2).sum(axis=0) - k * dev**2, 0.0)  # (S, m)
            sigma = np.maximum(np.sqrt(ss_loo / (n - 2.0)), floor)
            total += float(_log_normal(k * dev, 0.0, sigma).sum())
            count += a.size
        per_example = total / count
    dof = (sum(a.shape[0] - 1 for a in sides) - 1) * m  # one model held out
    if all(a.shape[0] >= 2 for a in sides) and dof >= 1:
        ss_sides = [float((dev**2).sum()) for dev in devs]
        total, count = 0.0, 0
        for a, dev in zip(sides, devs):
            n = a.shape[0]
            k = n / (n - 1.0)
            ss_loo = np.maximum(sum(ss_sides) - k * (dev**2).sum(axis=1), 0.0)  # (S,)
            sigma = np.maximum(np.sqrt(ss_loo / dof), floor)[:, None]
            total += float(_log_normal(k * dev, 0.0, sigma).sum())
            count += a.size
        glob = total / count
    return per_example, glob


def choose_variance(phi_in: object | None, phi_out: object, *, min_std: float = 1e-3) -> VarianceChoice:
    """Choose per-example or global variances for the Gaussians, from the shadows alone.

    Each model is scored by how well it predicts a shadow it was not fitted on: every shadow in
    turn is held out, the Gaussians are fitted on the rest (of its side; the global σ pools all
    sides), and the held-out φ's log-density is averaged over shadows and examples. The model
    with the higher mean wins; a tie goes to the global variance (fewer parameters). With few
    shadows the per-example σ's are noisy and predict held-out shadows badly, so the global
    variance wins on data whose examples share one spread; with many shadows and examples of
    different spreads, the per-example model wins. The scored trials play no part, so the
    choice cannot inflate the bound.

    Parameters
    ----------
    phi_in:
        Shape ``(S_in, m)``: φ under the "in" shadows (world U), or ``None`` for the offline
        attack, which fits the "out" side only.
    phi_out:
        Shape ``(S_out, m)``: φ under the "out" shadows (world R).
    min_std:
        The σ floor of :func:`fit_gaussians`.

    Returns
    -------
    VarianceChoice
        With fewer than 3 shadows on a side the per-example model cannot be checked on held-out
        shadows, and the global variance is chosen (``loglik_per_example`` is ``None``).

    Raises
    ------
    certify.errors.InvalidInput
        On non-2-D or non-finite arrays, different numbers of columns, or fewer than 2 shadows
        on a side.
    """
    floor = _min_std(min_std)
    b = _phi_matrix(phi_out, "phi_out", min_rows=2)
    sides = [b]
    if phi_in is not None:
        sides.insert(0, _phi_matrix(phi_in, "phi_in", min_rows=2, m=b.shape[1]))
    n_shadows = tuple(int(a.shape[0]) for a in sides)
    per_example, glob = _loo_logliks(sides, floor)
    if per_example is None or glob is None:
        return VarianceChoice(
            "global",
            per_example,
            glob,
            n_shadows,
            "fewer than 3 shadows on a side: per-example variances cannot be checked "
            "on held-out shadows, so the global variance (fewest parameters) is used",
        )
    model = "per-example" if per_example > glob else "global"
    return VarianceChoice(
        model,
        per_example,
        glob,
        n_shadows,
        f"{model} predicts held-out shadows better "
        f"({per_example:.4g} vs {glob:.4g} nats per value, per-example vs global)",
    )


def _given_variance(fixed_variance: object, n_shadows: tuple[int, ...]) -> VarianceChoice:
    if not isinstance(fixed_variance, (bool, np.bool_)):
        raise InvalidInput("fixed_variance", "True, False or None (choose on the shadows)", fixed_variance)
    return VarianceChoice("global" if fixed_variance else "per-example", None, None, n_shadows, "set by the caller")


# ----------------------------------------------------------------------------------------------
# scores


def _log_normal(x: np.ndarray, mu: np.ndarray | float, sigma: np.ndarray) -> np.ndarray:
    return -np.log(sigma) - _LOG_SQRT_2PI - 0.5 * ((x - mu) / sigma) ** 2


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
        raise InvalidInput("fit", "a GaussianFit from attacks.lira.fit_gaussians", type(fit).__name__)
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


def _column_aurocs(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """Mann–Whitney AUROC of every column, ties counting one half."""
    from scipy.stats import rankdata  # scipy.stats costs 0.5 s to import: only when scoring

    ranks = rankdata(np.concatenate([pos, neg], axis=0), method="average", axis=0)
    n1, n0 = pos.shape[0], neg.shape[0]
    u = ranks[:n1].sum(axis=0) - n1 * (n1 + 1) / 2.0
    return np.clip(u / (n1 * n0), 0.0, 1.0)


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
# per-record exposure

DEFAULT_TOP_RECORDS = 20
"""Forget records listed by :func:`per_record_exposure` (the rest only through quantiles)."""

_QUANTILES = (("min", 0.0), ("q10", 0.1), ("q25", 0.25), ("median", 0.5), ("q75", 0.75), ("q90", 0.9), ("max", 1.0))


def per_record_exposure(
    example_unlearned: object,
    example_retrained: object,
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
    top: int = DEFAULT_TOP_RECORDS,
    seed: int = 0,
) -> dict[str, Any]:
    """Rank the forget records by how well an attack's per-record score alone separates the worlds.

    Parameters
    ----------
    example_unlearned, example_retrained:
        Shapes ``(N_u, m)`` and ``(N_r, m)``: an attack's per-record scores (larger = world U)
        of the evaluated models of each world, one column per forget record.
    delta:
        δ of the per-record ε bounds (the audit's δ).
    confidence:
        Joint confidence of all m per-record bounds, in (0, 1): each record's bound is taken at
        ``1 − (1 − confidence)/m`` (Bonferroni over **all** m records), so every bound holds
        simultaneously and the listed records, chosen on the same trials, keep their bounds.
    top:
        How many of the most exposed records to list (integer ≥ 1).
    seed:
        Seed of the calibration/evaluation split of each bound.

    Returns
    -------
    dict
        JSON-ready: ``records`` (m), ``identified_by``, ``ranked_by``, ``top`` (a list, most
        exposed first, of ``{"record": position in the forget set, "auroc": AUROC of that
        record's score, "epsilon_lower": its Clopper–Pearson bound, "direction"}``),
        ``auroc_quantiles`` (over all m records) and ``epsilon`` (how the bounds were taken).
        Records are named by position only, never by features or label. Exposure is
        |AUROC − ½| (an AUROC below ½ is leakage too). Each bound is an ε of the U-versus-R
        game (the forget set as a group) proven by a test that reads one record: an exposure
        measure, not a per-record DP guarantee. With fewer than 2 trials in a world no bound
        is computed.

    Raises
    ------
    certify.errors.InvalidInput
        On non-2-D or non-finite arrays, mismatched columns, or bad ``delta``, ``confidence``,
        ``top``.
    """
    pos = _phi_matrix(example_unlearned, "example_unlearned", min_rows=1)
    neg = _phi_matrix(example_retrained, "example_retrained", min_rows=1, m=pos.shape[1])
    conf = require_positive("confidence", confidence)
    if not conf < 1.0:
        raise InvalidInput("confidence", "a number in (0, 1)", confidence)
    k = require_integer("top", top, 1)
    m = int(pos.shape[1])
    aurocs = _column_aurocs(pos, neg)
    exposure = np.abs(aurocs - 0.5)
    order = np.lexsort((np.arange(m), -exposure))[:k]
    level = 1.0 - (1.0 - conf) / m
    can_bound = pos.shape[0] >= 2 and neg.shape[0] >= 2
    rows: list[dict[str, Any]] = []
    ceiling = None
    for j in order:
        row: dict[str, Any] = {"record": int(j), "auroc": float(aurocs[j])}
        if can_bound:
            b = clopper_pearson_epsilon(pos[:, j], neg[:, j], delta=delta, confidence=level, split="half", seed=seed)
            row["epsilon_lower"] = float(b.epsilon_lower)
            row["direction"] = b.direction
            ceiling = float(b.ceiling)
        rows.append(row)
    quantiles = np.quantile(aurocs, [q for _, q in _QUANTILES])
    epsilon: dict[str, Any] = {
        "method": "clopper-pearson/half on the record's own scores",
        "joint_confidence": conf,
        "confidence_per_record": level,
        "delta": float(delta),
        "ceiling": ceiling,
        "note": (
            "Bonferroni over all records: every bound holds simultaneously, so the listed records, "
            "selected on the same trials, keep theirs. An ε of the U-versus-R game seen through one "
            "record, not a per-record privacy guarantee."
        ),
    }
    if not can_bound:
        epsilon["note"] = "not computed: fewer than 2 trials in a world"
    return {
        "records": m,
        "identified_by": "position in the forget set (0 .. m-1)",
        "ranked_by": "|AUROC - 1/2| of the record's own score, most exposed first",
        "top": rows,
        "auroc_quantiles": {name: float(v) for (name, _), v in zip(_QUANTILES, quantiles)},
        "epsilon": epsilon,
    }


# ----------------------------------------------------------------------------------------------
# the attacks on the audit's trials

MODEL_CHUNK = 256
"""Models whose outputs are computed at once by the attacks (bounds memory on large record sets)."""


def phi_of_models(objective: Any, thetas: Any, X: Any, y: Any, *, chunk: int = MODEL_CHUNK) -> np.ndarray:
    """φ (:func:`logit_confidence`) of every model in ``thetas`` (N, d) on records ``X``: (N, n)."""
    one = objective.n_outputs == 1
    labels = to_numpy(y)
    parts = []
    with torch.no_grad():
        for part in thetas.split(chunk):
            parts.append(logit_confidence(to_numpy(batched_logits(objective, part, X)), labels, one_logit=one))
    return np.concatenate(parts, axis=0)


def shadow_features(features: Features, side: str, name: str) -> np.ndarray:
    """Feature ``name`` of the shadow models of ``side`` ("shadows_in" or "shadows_out"), which
    an attack that needs shadows requires at least 2 of."""
    world = features.get(side)
    if world is None or int(np.shape(world[name])[0]) < 2:
        raise InvalidInput(
            side,
            "at least 2 shadow models (the attack declares needs={'shadows'})",
            None if world is None else f"{int(np.shape(world[name])[0])} model(s)",
        )
    return world[name]


def _forget_phi(inputs: AttackInputs, models: ModelRows) -> dict[str, np.ndarray]:
    """``phi``: φ of each released model of ``models`` on the forget set, shape (n, m): the
    features of the LiRA attacks (each row reads one model only)."""
    Xf, yf = inputs.forget_data
    return {"phi": phi_of_models(inputs.objective, models.released, Xf, yf)}


def exposure_details(
    example_unlearned: np.ndarray, example_retrained: np.ndarray, inputs: AttackInputs
) -> dict[str, Any]:
    """The per-record part of an attack's ``details``: the ranking and the most exposed record."""
    exposure = per_record_exposure(
        example_unlearned, example_retrained, delta=inputs.delta, seed=int(inputs.seed) % 2**32
    )
    first = exposure["top"][0]
    return {
        "per_record": exposure,
        "most_exposed_record": first["record"],
        "most_exposed_auroc": first["auroc"],
        "most_exposed_epsilon_lower": first.get("epsilon_lower"),
    }


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
