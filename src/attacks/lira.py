"""U-LiRA: the per-example likelihood-ratio attack on unlearning (Hayes et al. 2024).

LiRA (Carlini et al. 2022) decides whether an example x was in a model's training set from one
number, the **logit-scaled confidence** of the model on x,

    φ(x) = log p_y(x) − log(1 − p_y(x)) = log p_y(x) − log Σ_{j≠y} p_j(x),

which is close to Gaussian across training runs. Shadow models trained *with* x and *without*
x give per-example Gaussians N(μ_in, σ_in²) and N(μ_out, σ_out²), and the test statistic for a
model is the log-likelihood ratio

    Λ(x) = log N(φ(x); μ_in, σ_in²) − log N(φ(x); μ_out, σ_out²)

(the "online" attack; ``fixed_variance=True`` is LiRA's ``fix_variance`` option for few
shadows).

**U-LiRA** (Hayes, Shumailov, Triantafillou, Khalifa & Papernot 2024) plays the same game
between the two worlds an unlearning certificate compares:

* the **"in" shadows** are trained *with* the target examples and then **unlearned** with the
  audited method: they are samples of the *unlearned world* U;
* the **"out" shadows** are trained *without* the targets (= retrained from scratch): samples of
  the *retrained world* R.

So "in" here does **not** mean "the model still contains x": it means "x went through training
and then through the unlearning algorithm". If the method unlearned perfectly, the two worlds
would have the same distribution of φ and every test would be at chance.

:func:`ulira_attack` fits the Gaussians on the shadows and scores *other*, independently trained
models of both worlds: positives are unlearned-world models, negatives retrained-world models.
Its per-model scores are what :mod:`attacks.epsilon` turns into an ε lower bound (positive =
world U, as there). Two cautions from ``anchors-auditing.md`` §2.12 / §5.3:

* **Fit and evaluate on disjoint models.** The Gaussians are chosen from data; scoring the
  shadows themselves inflates every number (pitfall 1). The caller must pass evaluated models
  trained independently of the shadows.
* **Group size.** With m > 1 target examples the per-model score sums Λ over the examples
  (a product of per-example likelihoods, treating the examples as independent given the world)
  and tests the *group*; its ε is a group-privacy ε. :attr:`UliraResult.example_aurocs` and
  :func:`ulira_example_scores` keep the per-example view that U-LiRA reports; the vulnerability
  of single examples varies a lot (Hayes et al. 2024).

Query augmentations (LiRA averages φ over flips and shifts) are the caller's choice: pass the
average as φ.

References
----------
.. [1] N. Carlini, S. Chien, M. Nasr, S. Song, A. Terzis and F. Tramèr, "Membership Inference
   Attacks From First Principles", IEEE S&P 2022 (φ, the online test and its global-variance
   variant); code: tensorflow/privacy ``research/mi_lira_2021`` (``score.py``,
   ``plot.py::generate_ours``).
.. [2] J. Hayes, I. Shumailov, E. Triantafillou, A. Khalifa and N. Papernot, "Inexact Unlearning
   Needs More Careful Evaluations to Avoid a False Sense of Privacy", SaTML 2025
   (arXiv:2403.01218): U-LiRA.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import logsumexp
from scipy.stats import rankdata

from attacks.base import Attack, AttackInputs, AttackOutcome, to_numpy
from attacks.roc import DEFAULT_CURVE_POINTS, RocSummary
from certify.errors import InvalidInput, require_finite_array, require_positive
from unlearners.batched import batched_logits

__all__ = [
    "GaussianFit",
    "UliraResult",
    "fit_gaussians",
    "logit_confidence",
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
            field, allowed, f"array of shape {arr.shape}",
            hint="For one target example pass phi[:, None]; for one model pass phi[None, :].",
        )
    if arr.shape[1] < 1:
        raise InvalidInput(field, "at least one target example (column)", "0 columns")
    if m is not None and arr.shape[1] != m:
        raise InvalidInput(
            field, f"{m} column(s), one per target example as in the shadow arrays",
            f"{arr.shape[1]} column(s)",
        )
    if arr.shape[0] < min_rows:
        raise InvalidInput(
            field, f"at least {min_rows} model(s) (rows)", f"{arr.shape[0]} row(s)",
            hint="Per-example Gaussians need >= 2 shadow models per side; with fewer use "
            "fixed_variance=True." if min_rows == 2 else None,
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
                "one_logit", "True or False when logits have shape (..., n, n)", None,
                hint=f"logits of shape {z.shape} fit both (..., n) one-logit and (..., n, C) layouts.",
            )
        if not (binary_fits or multi_fits):
            raise InvalidInput(
                "logits", f"shape (..., {n}) (one logit) or (..., {n}, C) with C >= 2",
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
        raise InvalidInput(
            "labels", f"integers in [0, {n_classes - 1}]", sorted(set(np.unique(y).tolist()))[:10]
        )
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
                "phi_in", "together with phi_out at least 3 shadow models", f"{a.shape[0]} + {b.shape[0]}",
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
# scores


def _log_normal(x: np.ndarray, mu: np.ndarray, sigma: np.ndarray) -> np.ndarray:
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
# the attack


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
    """

    roc: RocSummary
    scores_unlearned: np.ndarray
    scores_retrained: np.ndarray
    example_aurocs: np.ndarray
    n_shadow_in: int
    n_shadow_out: int
    n_targets: int
    fit: GaussianFit

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
            "min_std": self.fit.min_std,
            "positives": "unlearned world (trained with the targets, then unlearned)",
            "negatives": "retrained world (trained without the targets)",
        }
        if include_fit:
            out["fit"] = self.fit.to_dict()
        return out


def _column_aurocs(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """Mann–Whitney AUROC of every column, ties counting one half."""
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
    fixed_variance: bool = False,
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
    fixed_variance, min_std:
        Passed to :func:`fit_gaussians`. The number of shadows per side is set by the caller
        through the array shapes (the U-LiRA paper and the NeurIPS 2023 unlearning competition
        use hundreds; LiRA's global variance helps below about 64 per side).
    max_points:
        Curve points kept in the ROC summary.

    Returns
    -------
    UliraResult
        ROC summary (AUROC, TPR at 1 % and 0.1 % FPR), per-model scores of both worlds for an
        ε lower bound, per-example AUROCs, and the counts.

    Notes
    -----
    Fitting the Gaussians is a choice made from data; scoring the shadows themselves would
    inflate every number (``anchors-auditing.md`` §2.12, pitfall 1). Evaluated and shadow
    models must come from independent training runs; this function cannot check that (a
    deterministic method legitimately produces identical φ in different runs).
    """
    fit = fit_gaussians(phi_in, phi_out, fixed_variance=fixed_variance, min_std=min_std)
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
    )


class ULiRA(Attack):
    """U-LiRA (Hayes et al. 2024) as an attack on the trials, from the audit's shadow models."""

    name = "ulira"
    title = "U-LiRA"
    description = ("U-LiRA: per-example Gaussian fits of logit-scaled confidence from shadow models "
                   "trained with Z then unlearned (in) vs trained without Z (out)")
    needs = frozenset({"shadows"})

    def run(self, inputs: AttackInputs) -> AttackOutcome:
        Xf, yf = inputs.forget_data
        one = inputs.objective.n_outputs == 1

        def phi(thetas):
            return to_numpy(logit_confidence(batched_logits(inputs.objective, thetas, Xf), yf, one_logit=one))

        result = ulira_attack(phi(inputs.shadows_in), phi(inputs.shadows_out),
                              phi(inputs.released_unlearned), phi(inputs.released_retrained))
        return AttackOutcome(result.scores_unlearned, result.scores_retrained,
                             {"shadow_models_per_side": int(inputs.shadows_in.shape[0]),
                              "targets": int(Xf.shape[0])})

