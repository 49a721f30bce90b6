"""LiRA's statistic and its per-example Gaussians: φ, the shadow fits and the variance model.

The pieces of :mod:`attacks.lira` that every shadow-based attack shares (U-LiRA, offline LiRA,
RMIA and the one-run audit read φ; the fits are LiRA's): the **logit-scaled confidence**
φ(x) = log p_y(x) − log(1 − p_y(x)) (Carlini et al. 2022), per-example Gaussians fitted on
shadow models, and the choice between per-example and global variances by leave-one-out
likelihood on the shadows. See :mod:`attacks.lira` for the attacks and the references.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from scipy.special import logsumexp

from attacks.base import Features, to_numpy
from certify.errors import InvalidInput, require_finite_array, require_positive
from unlearners.batched import batched_logits

__all__ = [
    "MODEL_CHUNK",
    "VARIANCE_MODELS",
    "GaussianFit",
    "VarianceChoice",
    "choose_variance",
    "fit_gaussians",
    "logit_confidence",
    "phi_of_models",
    "shadow_features",
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


def _log_normal(x: np.ndarray, mu: np.ndarray | float, sigma: np.ndarray) -> np.ndarray:
    return -np.log(sigma) - _LOG_SQRT_2PI - 0.5 * ((x - mu) / sigma) ** 2


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
