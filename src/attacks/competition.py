"""The NeurIPS 2023 unlearning-competition measurement (Triantafillou et al. 2024), as an attack.

The competition ("Are we making progress in unlearning? Findings from the first NeurIPS
unlearning competition", Triantafillou, Kairouz, Pedregosa, Hayes, Kurmanji, Zhao, Dumoulin,
Jacques Junior, Mitliagkas, Wan, Sun Hosoya, Escalera, Dziugaite, Triantafillou and Guyon, 2024)
scores an unlearning method by looking at *many* unlearned and *many* retrained models
(512 of each) and, for every forget example separately, asking how well one number, the
**logit-scaled confidence** φ of a model on the example, tells the two populations apart. Its
reference code is google-deepmind/unlearning_evaluation ``metric.py``; this module is our own
implementation of that procedure, function by function:

``compute_logit_scaled_confidence``
    φ = log(p_y + 1e-45) − log(1 − p_y + 1e-45). :func:`competition_confidence` reproduces the
    1e-45 guards (they saturate |φ| near 103.6) from :func:`attacks.lira_gaussians.logit_confidence`,
    which itself has no cap.
``compute_forget_score_from_confs``
    Per example, the world whose **median** φ is larger is the "positive" one (ties: the
    unlearned world). Per-example ε from ``_get_epsilons`` at ``DELTA`` = 1e-5, then
    **bucketing**: with K models per world, ε_max = ⌈ln(K − 1)⌉ (7 for K = 512); ε in
    [0, 0.5) earns 1 point, [0.5, 1) ½, [1, 1.5) ¼, …, halving every 0.5 up to ε_max, and
    ε ≥ ε_max earns nothing. ``forget_score`` is the mean of the points over the forget set
    (1 = every example looks retrained; 0 = every example is obvious). The competition's final
    score multiplies it by utility ratios (retain and test accuracy), which is not done here.
``_get_epsilons``
    For one example: if the smaller of the two ranges (max − min of φ) is below 1 % of the
    larger one, ε = ``EPSILON_CAP`` = 50 outright (a "peaky" distribution). Otherwise two
    families of decision rules are swept on **point estimates** of the error rates:

    * ``_get_single_threshold_rates``: say "positive" when φ ≥ t, for
      ⌈100·(range of both)⌉ thresholds evenly spaced over the pooled range;
    * ``_get_double_threshold_rates``: say "peaky world" when l ≤ φ ≤ r, where the peaky
      world is the one with the smaller range w; ~400 right ends r evenly spaced over
      [max − 2, max + 2] of the peaky world, and for each of them 400 left ends evenly spaced
      over [r − w − 2, r − w + 2].

    Each (FPR, FNR) gives ε = max(0, ln((1 − δ − FPR)/FNR), ln((1 − δ − FNR)/FPR)); a rule
    with FPR = FNR = 0 gives ∞; a rule with exactly one of FPR, FNR zero is **discarded**
    ("insufficient samples"); ε of the example is the maximum over the surviving rules,
    clipped to [0, 50].

Known departures (none changes a value except at a last-ulp tie of a threshold and a score):
the reference computes the rates as float32 means and its thresholds with ``torch.linspace``;
here rates are exact fractions k/K in float64 and thresholds come from ``numpy.linspace``.
Where the reference's ``assert thr_eps`` would stop (no rule survives, e.g. two identical
constant populations), the example's ε is 0 and the example is counted (rule ``"none"``).
The reference assumes as many unlearned as retrained models and reads K from the unlearned
ones; here K = min(K_U, K_R).

The fixed grid (100 thresholds per unit of φ, a 2-unit buffer) assumes the φ of one example
spreads over units across models, as it does across training runs. When the released models of
the audit differ only by a tiny release noise, φ spreads over far less than the grid step and no
rule can follow it: ε is then 0 even for perfectly separated worlds. Such examples are counted
(``examples_below_resolution``: pooled span below :data:`RESOLUTION`) and the caveat says so.

What the numbers are, and are not (``anchors-auditing.md`` §2.9 and §2.12, pitfalls 1–2): they
are **point estimates maximised over ~180,000 rules chosen on the very models they are
evaluated on**. On two identical populations they are not 0 (a few dozen models per world give
per-example ε around 0.5–1); they are not a confidence bound, and they say nothing at a stated
confidence. The ceiling ln(K − 1) is a back-of-the-envelope scale, not a proof. The audit's
Clopper–Pearson bound on this attack's per-model score (the mean φ over the forget set, a
group test) is the valid statement; the competition's ε is reported next to it for comparison
with the literature.

References
----------
.. [1] E. Triantafillou et al., "Are we making progress in unlearning? Findings from the first
   NeurIPS unlearning competition", arXiv:2406.09073, 2024.
.. [2] google-deepmind/unlearning_evaluation, ``metric.py``: ``compute_logit_scaled_confidence``,
   ``_get_single_threshold_rates``, ``_get_double_threshold_rates``, ``_get_epsilons``,
   ``compute_forget_score_from_confs``.
.. [3] N. Carlini et al., "Membership Inference Attacks From First Principles", IEEE S&P 2022 (φ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import log_expit

from attacks.base import Attack, AttackInputs, AttackOutcome, Features, ModelRows, to_numpy
from attacks.lira_gaussians import logit_confidence
from certify.errors import InvalidInput, require_finite_array
from unlearners.batched import batched_logits

__all__ = [
    "BUCKET_SIZE",
    "DELTA",
    "EPSILON_CAP",
    "CompetitionMetric",
    "CompetitionResult",
    "bucket_points",
    "bucketed_points",
    "competition_confidence",
    "competition_metric",
    "example_epsilon",
    "max_epsilon",
]

#: ``metric.py`` constants.
DELTA = 1e-05
EPSILON_CAP = 50.0
NUM_THRESHOLDS_PER_UNIT = 100
#: ``_get_double_threshold_rates``: ``buffer``; ``_get_epsilons``: the "peaky" range ratio;
#: ``compute_forget_score_from_confs``: ``bucket_size``.
BUFFER = 2.0
PEAKY_RATIO = 0.01
BUCKET_SIZE = 0.5
#: An example whose confidences (both worlds pooled) span less than this is below the sweep's
#: resolution: fewer than 10 steps of the 1/``NUM_THRESHOLDS_PER_UNIT`` grid cross it, so the
#: rules cannot follow the populations and ε says little (0 even for separated worlds).
RESOLUTION = 10.0 / NUM_THRESHOLDS_PER_UNIT
#: The guard ``compute_logit_scaled_confidence`` adds inside both logarithms.
CONFIDENCE_GUARD = 1e-45
#: The attack measures at most this many forget examples (a seeded subset beyond it; the
#: per-model score still averages all of them): about 20 ms each at 1,000 models per world.
MAX_EXAMPLES = 1000

RULES = ("single", "double", "separated", "peaky", "none")
"""How an example's ε was reached: the best single-threshold rule, the best double-threshold
rule, a rule with FPR = FNR = 0 (ε = ∞, clipped to the cap), the peaky-range shortcut (the
cap), or no surviving rule (ε = 0)."""

CAVEATS = (
    "Competition measurement (Triantafillou et al. 2024; google-deepmind/unlearning_evaluation metric.py): "
    "per-example point estimates of FPR and FNR across {k} released models per world, maximised over "
    "about 160,000 double-threshold rules and 100 single thresholds per unit of confidence range, "
    "chosen on the same models they are evaluated on, so it is an estimate "
    "biased upwards, not a bound: identical worlds do not give 0 (the Clopper-Pearson bound on this "
    "attack's per-model score is the valid statement). delta is fixed at {delta:g} as in the competition. "
    "With K = {k} models per world the buckets stop at ceil(ln(K - 1)) = {emax:g}: any larger epsilon "
    "earns 0 points and is indistinguishable; epsilon is capped at {cap:g}. The forget_score is a score "
    "(1 = every example below 0.5), not an epsilon, and omits the competition's utility factors."
)
RESOLUTION_CAVEAT = (
    " The sweep uses a fixed grid of 100 thresholds per unit of confidence, as metric.py does (built for "
    "models from different training runs, whose confidences spread over several units): for {n} of {m} "
    "examples the released models' confidences span less than {res:g} in all, too little for the grid to "
    "follow, and their epsilon says little (it is 0 even when the worlds are perfectly separated)."
)
MODE_CAVEATS = {
    "noise": (
        " Here the models of a world differ only by the release noise (trial mode 'noise'), not by "
        "training randomness as in the competition."
    ),
    "retrain": " Here every model was trained with its own seeds (trial mode 'retrain'), as in the competition.",
}


# ----------------------------------------------------------------------------------------------
# the statistic


def competition_confidence(phi: object) -> np.ndarray:
    """φ as ``compute_logit_scaled_confidence`` computes it, from the exact φ.

    With p = sigmoid(φ) the probability of the true class, the reference returns
    log(p + 1e-45) − log(1 − p + 1e-45); computed here in log space (no probability is formed),
    so it equals φ for |φ| up to about 90 and saturates at ±ln(1 + 1e45) ≈ ±103.6.

    Parameters
    ----------
    phi:
        Exact logit-scaled confidences (:func:`attacks.lira_gaussians.logit_confidence`), any shape, finite.
    """
    x = require_finite_array("phi", phi, "an array of finite logit-scaled confidences")
    guard = math.log(CONFIDENCE_GUARD)
    return np.logaddexp(log_expit(x), guard) - np.logaddexp(log_expit(-x), guard)


# ----------------------------------------------------------------------------------------------
# per-example epsilon


def _rule_epsilons(tpr: np.ndarray, fnr: np.ndarray, fpr: np.ndarray, tnr: np.ndarray, delta: float) -> np.ndarray:
    """ε of every rule as ``_get_epsilons`` computes it; NaN marks a discarded rule."""
    separated = (fpr + fnr == 0.0) & (tpr + tnr == 2.0)
    one_zero = ~separated & (fpr * fnr == 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = np.log(1.0 - delta - fpr) - np.log(fnr)
        t2 = np.log(1.0 - delta - fnr) - np.log(fpr)
        # nanmax of the two terms, NaN only when both are NaN
        eps = np.where(np.isnan(t1), t2, np.where(np.isnan(t2), t1, np.maximum(t1, t2)))
    eps = np.maximum(eps, 0.0)  # np.clip(·, 0, None) keeps NaN, so does maximum
    eps = np.where(one_zero, np.nan, eps)
    return np.where(separated, np.inf, eps)


def _inside(sorted_values: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """How many values v satisfy left ≤ v ≤ right, for each pair (0 when left > right)."""
    n = np.searchsorted(sorted_values, right, side="right") - np.searchsorted(sorted_values, left, side="left")
    return np.maximum(n, 0)


def _single_threshold(pos: np.ndarray, neg: np.ndarray, delta: float) -> float:
    """Best ε of ``_get_single_threshold_rates``: say positive when φ ≥ t (NaN: no rule survives)."""
    lo = min(pos[0], neg[0])
    hi = max(pos[-1], neg[-1])
    count = int(np.ceil((hi - lo) * NUM_THRESHOLDS_PER_UNIT))
    if count < 1:
        return math.nan
    t = np.linspace(lo, hi, count)
    said_pos_pos = pos.size - np.searchsorted(pos, t, side="left")  # pos >= t
    said_pos_neg = neg.size - np.searchsorted(neg, t, side="left")
    tpr = said_pos_pos / pos.size
    fpr = said_pos_neg / neg.size
    eps = _rule_epsilons(tpr, (pos.size - said_pos_pos) / pos.size, fpr, (neg.size - said_pos_neg) / neg.size, delta)
    return _nanmax(eps)


def _double_threshold(pos: np.ndarray, neg: np.ndarray, delta: float) -> float:
    """Best ε of ``_get_double_threshold_rates``: say "peaky world" when l ≤ φ ≤ r."""
    pos_diff = pos[-1] - pos[0]
    neg_diff = neg[-1] - neg[0]
    smallest = neg_diff if pos_diff > neg_diff else pos_diff
    if pos_diff >= neg_diff:  # "positive" becomes the peakiest world
        pos, neg = neg, pos
    width = smallest
    lo = pos[0] + width - BUFFER
    hi = pos[-1] + BUFFER
    right = np.linspace(lo, hi, num=int(np.ceil((hi - lo) * NUM_THRESHOLDS_PER_UNIT)))
    n_left = int(np.ceil(2 * BUFFER * NUM_THRESHOLDS_PER_UNIT))
    left = np.linspace(right - width - BUFFER, right - width + BUFFER, num=n_left, axis=-1)  # (R, n_left)
    right = np.broadcast_to(right[:, None], left.shape)
    inside_pos = _inside(pos, left, right)
    inside_neg = _inside(neg, left, right)
    eps = _rule_epsilons(
        inside_pos / pos.size,
        (pos.size - inside_pos) / pos.size,
        inside_neg / neg.size,
        (neg.size - inside_neg) / neg.size,
        delta,
    )
    return _nanmax(eps)


def _nanmax(values: np.ndarray) -> float:
    kept = values[~np.isnan(values)]
    return float(kept.max()) if kept.size else math.nan


def example_epsilon(pos: object, neg: object, *, delta: float = DELTA) -> tuple[float, str]:
    """``_get_epsilons`` for one example: (ε in [0, 50], the rule that reached it, see :data:`RULES`).

    Parameters
    ----------
    pos, neg:
        φ of the example under the models of the "positive" world (the one with the larger
        median) and of the other world, 1-D, finite, at least one model each.
    delta:
        δ of the rates-to-ε conversion (the competition's 1e-5 by default).
    """
    p = np.sort(require_finite_array("pos", pos, "a 1-D array of finite confidences").ravel())
    n = np.sort(require_finite_array("neg", neg, "a 1-D array of finite confidences").ravel())
    if p.size < 1 or n.size < 1:
        raise InvalidInput("pos", "at least one model per world", (p.size, n.size))
    pos_diff, neg_diff = p[-1] - p[0], n[-1] - n[0]
    largest, smallest = (pos_diff, neg_diff) if pos_diff > neg_diff else (neg_diff, pos_diff)
    if largest > 0 and smallest / largest < PEAKY_RATIO:
        return EPSILON_CAP, "peaky"
    single = _single_threshold(p, n, delta)
    double = _double_threshold(p, n, delta)
    best = _nanmax(np.array([single, double]))
    if math.isnan(best):
        return 0.0, "none"
    rule = "separated" if math.isinf(best) else ("single" if single >= double or math.isnan(double) else "double")
    return float(min(max(best, 0.0), EPSILON_CAP)), rule


# ----------------------------------------------------------------------------------------------
# bucketing and the forget score


def max_epsilon(n_models: int) -> float:
    """⌈ln(K − 1)⌉: where the competition's buckets stop for K models per world (7 for 512)."""
    if isinstance(n_models, bool) or int(n_models) != n_models or n_models < 2:
        raise InvalidInput("n_models", "an integer >= 2 (models per world)", n_models)
    return float(math.ceil(math.log(int(n_models) - 1)))


def bucket_points(n_models: int) -> list[tuple[float, float, float]]:
    """The buckets of ``compute_forget_score_from_confs``: (lower, upper, points), upper exclusive.

    [0, 0.5) earns 1, each next bucket half the previous one, up to ⌈ln(K − 1)⌉; an ε at or
    above the last upper edge earns 0. For K = 2 (ln 1 = 0) there is no bucket at all.
    """
    top = max_epsilon(n_models)
    buckets: list[tuple[float, float, float]] = []
    start, points = 0.0, 1.0
    while start + BUCKET_SIZE <= top:
        buckets.append((start, start + BUCKET_SIZE, points))
        points /= 2
        start += BUCKET_SIZE
    return buckets


def bucketed_points(epsilons: object, n_models: int) -> np.ndarray:
    """The points each ε earns (the first bucket whose upper edge exceeds it; 0 past the last)."""
    eps = require_finite_array("epsilons", epsilons, "an array of finite per-example epsilons").ravel()
    out = np.zeros(eps.shape)
    assigned = np.zeros(eps.shape, dtype=bool)
    for _, upper, points in bucket_points(n_models):
        hit = ~assigned & (eps < upper)
        out[hit] = points
        assigned |= hit
    return out


@dataclass(frozen=True)
class CompetitionResult:
    """The competition's measurement of one forget set.

    Attributes
    ----------
    epsilons:
        Shape (m,): per-example ε in [0, 50], by position in the forget set.
    rules:
        Shape (m,): the rule behind each ε (:data:`RULES`).
    points:
        Shape (m,): the bucket points each ε earns.
    forget_score:
        Mean of ``points``: 1 when every example looks retrained, 0 when every one is obvious.
    n_models:
        K = min(K_U, K_R) models per world, which sets the buckets.
    n_unlearned, n_retrained:
        Models per world.
    delta:
        δ of the conversion.
    retrained_positive:
        Shape (m,): whether the retrained world had the larger median (the "positive" world).
    spans:
        Shape (m,): max − min of the example's confidences over both worlds; below
        :data:`RESOLUTION` the fixed grid cannot resolve the populations.
    """

    epsilons: np.ndarray
    rules: np.ndarray
    points: np.ndarray
    forget_score: float
    n_models: int
    n_unlearned: int
    n_retrained: int
    delta: float
    retrained_positive: np.ndarray
    spans: np.ndarray

    @property
    def max_epsilon(self) -> float:
        return max_epsilon(self.n_models)

    def histogram(self) -> list[dict[str, Any]]:
        """How many examples fall in each bucket, with its points; the last row is ε ≥ ε_max."""
        rows: list[dict[str, Any]] = []
        assigned = np.zeros(self.epsilons.shape, dtype=bool)
        for lower, upper, points in bucket_points(self.n_models):
            hit = ~assigned & (self.epsilons < upper)
            rows.append({"lower": lower, "upper": upper, "points": points, "count": int(hit.sum())})
            assigned |= hit
        rows.append({"lower": self.max_epsilon, "upper": None, "points": 0.0, "count": int((~assigned).sum())})
        return rows

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; per-example values by position 0..m−1 only (no features, no labels)."""
        return {
            "forget_score": float(self.forget_score),
            "example_epsilons": [float(e) for e in self.epsilons],
            "example_rules": [str(r) for r in self.rules],
            "epsilon_histogram": self.histogram(),
            "mean_epsilon": float(np.mean(self.epsilons)),
            "median_epsilon": float(np.median(self.epsilons)),
            "max_epsilon_example": float(np.max(self.epsilons)),
            "examples": int(self.epsilons.size),
            "examples_at_cap": int(np.sum(self.epsilons >= EPSILON_CAP)),
            "rule_counts": {r: int(np.sum(self.rules == r)) for r in RULES},
            "retrained_positive_examples": int(np.sum(self.retrained_positive)),
            "examples_below_resolution": int(np.sum(self.spans < RESOLUTION)),
            "below_resolution_positions": [int(i) for i in np.flatnonzero(self.spans < RESOLUTION)],
            "resolution": RESOLUTION,
            "models_per_world": int(self.n_models),
            "n_unlearned": int(self.n_unlearned),
            "n_retrained": int(self.n_retrained),
            "bucket_ceiling": self.max_epsilon,
            "epsilon_cap": EPSILON_CAP,
            "delta": float(self.delta),
            "kind": "estimate",
        }


def _confs(value: object, field: str) -> np.ndarray:
    arr = require_finite_array(field, value, "a 2-D array (models, forget examples) of finite confidences")
    if arr.ndim != 2 or arr.shape[1] < 1:
        raise InvalidInput(
            field, "a 2-D array (models, forget examples) with at least one example", f"shape {arr.shape}"
        )
    if arr.shape[0] < 2:
        raise InvalidInput(field, "at least 2 models (rows): the buckets need ln(K - 1) >= 0", arr.shape[0])
    return arr.astype(np.float64)


def competition_metric(unlearned_confs: object, retrained_confs: object, *, delta: float = DELTA) -> CompetitionResult:
    """``compute_forget_score_from_confs``: per-example ε, bucket points and the forget score.

    Parameters
    ----------
    unlearned_confs, retrained_confs:
        Shapes (K_U, m) and (K_R, m): the confidence (:func:`competition_confidence`) of each
        forget example under each unlearned and each retrained model; K ≥ 2.
    delta:
        δ of the conversion (the competition's 1e-5).

    Returns
    -------
    CompetitionResult
        Point estimates, not bounds (see the module docstring).
    """
    u = _confs(unlearned_confs, "unlearned_confs")
    r = _confs(retrained_confs, "retrained_confs")
    if u.shape[1] != r.shape[1]:
        raise InvalidInput(
            "retrained_confs", f"{u.shape[1]} columns, one per forget example as in unlearned_confs", r.shape[1]
        )
    if not (isinstance(delta, (int, float)) and 0 <= delta < 1):
        raise InvalidInput("delta", "a number in [0, 1)", delta)
    retrained_positive = np.median(r, axis=0) > np.median(u, axis=0)
    eps = np.empty(u.shape[1])
    rules = np.empty(u.shape[1], dtype=object)
    for i in range(u.shape[1]):
        pos, neg = (r[:, i], u[:, i]) if retrained_positive[i] else (u[:, i], r[:, i])
        eps[i], rules[i] = example_epsilon(pos, neg, delta=float(delta))
    k = min(u.shape[0], r.shape[0])
    points = bucketed_points(eps, k)
    return CompetitionResult(
        epsilons=eps,
        rules=rules.astype(str),
        points=points,
        forget_score=float(points.mean()),
        n_models=k,
        n_unlearned=int(u.shape[0]),
        n_retrained=int(r.shape[0]),
        delta=float(delta),
        retrained_positive=retrained_positive,
        spans=np.maximum(u.max(0), r.max(0)) - np.minimum(u.min(0), r.min(0)),
    )


# ----------------------------------------------------------------------------------------------
# the attack


class CompetitionMetric(Attack):
    """The NeurIPS 2023 unlearning-competition measurement on the trials.

    Score of a released model: the mean over the forget set of its competition confidence
    (so the audit's Clopper–Pearson bound applies to it, as a group test); ``details`` carry
    the competition's own per-example ε, forget score, bucket histogram and caveats
    (:meth:`CompetitionResult.to_dict`, plus ``caveats``, ``per_model_score``,
    ``example_positions``: the forget-set positions 0..m−1 the per-example lists refer to, and
    ``forget_examples_total``). Beyond :data:`MAX_EXAMPLES` forget examples the per-example
    measurement runs on a subset drawn with the attack's seed. Features of a model: its
    competition confidence on each forget example; the per-example ε compare the models of both
    worlds, in :meth:`score`.
    """

    name = "competition"
    title = "Unlearning-competition ε (NeurIPS 2023)"
    description = (
        "mean logit-scaled confidence on the forget set; details: the NeurIPS 2023 unlearning "
        "competition's per-example epsilon (point estimates over single- and double-threshold "
        "rules across the released models, Triantafillou et al. 2024) and its forget score"
    )
    orientation = "memory"  # confidence on Z: remembers more

    def features(self, inputs: AttackInputs, models: ModelRows) -> dict[str, np.ndarray]:
        """``confidence``: the competition confidence of each released model on each forget
        example, shape (n, m)."""
        Xf, yf = inputs.forget_data
        one = inputs.objective.n_outputs == 1
        logits = batched_logits(inputs.objective, models.released, Xf)
        return {
            "confidence": competition_confidence(
                to_numpy(logit_confidence(to_numpy(logits).astype(np.float64), to_numpy(yf), one_logit=one))
            )
        }

    def score(self, inputs: AttackInputs, features: Features) -> AttackOutcome:
        cu, cr = features["unlearned"]["confidence"], features["retrained"]["confidence"]  # (N, m) each
        m = cu.shape[1]
        positions = np.arange(m)
        if m > MAX_EXAMPLES:  # a seeded subset: ~20 ms per example at 1,000 models per world
            positions = np.sort(np.random.default_rng(inputs.seed).choice(m, MAX_EXAMPLES, replace=False))
        result = competition_metric(cu[:, positions], cr[:, positions])
        mode = "retrain" if inputs.every_trial_retrains else "noise"
        details = result.to_dict()
        details["example_positions"] = positions.tolist()  # what the per-example lists refer to
        details["below_resolution_positions"] = [int(positions[i]) for i in details["below_resolution_positions"]]
        details["forget_examples_total"] = int(m)
        details["caveats"] = (
            CAVEATS.format(k=result.n_models, delta=result.delta, emax=result.max_epsilon, cap=EPSILON_CAP)
            + MODE_CAVEATS[mode]
            + (
                RESOLUTION_CAVEAT.format(n=details["examples_below_resolution"], m=result.epsilons.size, res=RESOLUTION)
                if details["examples_below_resolution"]
                else ""
            )
            + (
                f" Measured on a seeded subset of {MAX_EXAMPLES} of the {m} forget examples."
                if m > MAX_EXAMPLES
                else ""
            )
        )
        details["per_model_score"] = "mean competition confidence over the forget set (larger: unlearned)"
        return AttackOutcome(cu.mean(axis=1), cr.mean(axis=1), details)
