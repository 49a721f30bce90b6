"""The population membership-inference attack the seed papers report, with a fixed protocol.

One attacker is fitted for *all* examples at once: a logistic regression on the model's outputs
for each record (its logits and its loss) separates the **forget set** (members: records the
original model was trained on) from records the model was **never trained on** (non-members).
The attack is run separately against the original, the unlearned and the retrained model. The
number to read is how close the unlearned model's AUROC is to the *retrained* model's:
**lower is not better**. A retrained model can score above ½ because forget-set records differ
in distribution from the non-member pool (Mu & Klabjan, §4.4: on Lacuna the noiseless full
retrain has the highest MIA), and a very noisy model can score below ½ because the attacker
overfits.

Protocol (fixed here because the seed papers leave it open or contradict their code;
``seed-003-r2d.md`` §10 item 13, ``seed-001-certified-dnn.md`` item 17):

1. **Features** (:func:`attack_features`): the model's logits (one column for a one-logit
   binary model, C columns otherwise) and the per-record loss, as in the R2D code
   (``LogisticRegression()`` on ``[logits, loss]``; Mu & Klabjan, App. D.1).
2. **Class balance**: the non-members are subsampled, without replacement and per class, to the
   members' class counts, so the attacker cannot win by spotting the majority class (Mu &
   Klabjan, App. D.1). Where a class has fewer non-members than members, that class's members
   are subsampled instead and the result says so. Classes absent from the members are dropped.
3. **Attacker**: scikit-learn ``LogisticRegression()`` with its defaults, by default behind a
   ``StandardScaler`` in one ``Pipeline``, so the scaling is fitted on the training folds only
   (the R2D code does not standardise; ``standardize=False`` reproduces that).
4. **Evaluation**: ``RepeatedStratifiedKFold`` (5 folds × 10 repeats by default, stratified by
   membership and, when every cell is large enough, by membership × class). The AUROC is
   computed **only on the held-out fold** of each split; no record is ever scored by an
   attacker that was fitted on it. (The released ``attack.py`` of Zhang et al. 2024 scores the
   attacker on its own training data and does not balance, which inflates both numbers.)
   The mean and standard deviation over the ``n_splits · n_repeats`` folds are reported with
   every fold value.

With fewer balanced members than folds the attack is **not applicable** (for instance when a
single record is forgotten): :func:`population_mia` then returns ``applicable=False`` and a
``reason`` instead of raising. Per-example attacks that do work for one record are in
:mod:`attacks.lira`; population attacks are much weaker than per-example ones and overstate the
protection of unlearning (Hayes et al. 2024).

AUROC values here are point estimates with a fold-to-fold spread, not confidence bounds and not
an ε. AUROC < ½ is reported as measured.

References
----------
.. [1] S. Mu and D. Klabjan, "Rewind-to-Delete: Certified Machine Unlearning for Nonconvex
   Functions", App. D.1 (forget set against class-matched unseen users; logistic regression on
   logits and loss; repeated 5-fold cross-validation) and its code
   ``github.com/anonymous-1234567/r2d``.
.. [2] B. Zhang, Y. Dong, T. Wang and J. Li, "Towards Certified Unlearning for Deep Neural
   Networks", ICML 2024, Table 2 (MIA accuracy and AUC).
.. [3] M. Chen, Z. Zhang, T. Wang, M. Backes, M. Humbert and Y. Zhang, "When Machine Unlearning
   Jeopardizes Privacy", ACM CCS 2021.
.. [4] R. Shokri, M. Stronati, C. Song and V. Shmatikov, "Membership Inference Attacks Against
   Machine Learning Models", IEEE S&P 2017.
.. [5] J. Hayes, I. Shumailov, E. Triantafillou, A. Khalifa and N. Papernot, "Inexact Unlearning
   Needs More Careful Evaluations to Avoid a False Sense of Privacy", SaTML 2025
   (arXiv:2403.01218).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import log_expit, logsumexp

from attacks.base import Attack, AttackInputs, AttackOutcome, Features, ModelRows, to_numpy
from attacks.roc import auroc
from certify.errors import InvalidInput, require_finite_array, require_integer
from unlearners.base import Unlearner
from unlearners.batched import batched_per_sample_loss

__all__ = ["MembershipInference", "MiaResult", "attack_features", "population_mia"]


# ----------------------------------------------------------------------------------------------
# validation helpers


def _labels(value: object, field_name: str, n: int, n_field: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.ndim != 1:
        raise InvalidInput(field_name, "a 1-D array of class labels", f"array of shape {arr.shape}")
    if arr.shape[0] != n:
        raise InvalidInput(
            field_name,
            f"one label per row of {n_field} ({n})",
            f"{arr.shape[0]} label(s)",
        )
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise InvalidInput(field_name, "class labels without NaN", "NaN or infinite label(s)")
        if not np.all(arr == np.round(arr)):
            raise InvalidInput(field_name, "integer class labels", "non-integer float label(s)")
        arr = arr.astype(np.int64)
    elif arr.dtype.kind not in "iubUSO":
        raise InvalidInput(field_name, "a 1-D array of class labels", f"array of dtype {arr.dtype}")
    return arr


def _int_at_least(value: object, field_name: str, minimum: int) -> int:
    return require_integer(field_name, value, minimum)


# ----------------------------------------------------------------------------------------------
# features


def attack_features(logits: object, labels: object, losses: object | None = None) -> np.ndarray:
    """Attack features of one model on n records: its logits and its per-record loss.

    Parameters
    ----------
    logits:
        Shape ``(n,)`` for a binary model with one logit (``p(y=1) = sigmoid(z)``) or ``(n, C)``
        with ``C >= 2`` for a softmax model. Finite.
    labels:
        Shape ``(n,)``: the records' true classes, integers in ``{0, 1}`` for one-logit models
        and in ``[0, C)`` otherwise.
    losses:
        Shape ``(n,)``: the per-record training loss. When ``None`` the cross-entropy of the
        logits is used (binary: ``log(1 + e^{−z})`` for y = 1 and ``log(1 + e^{z})`` for y = 0;
        softmax: ``logsumexp(z) − z_y``), computed stably. Pass the model's own loss when it
        differs (e.g. with a regulariser or a different link).

    Returns
    -------
    numpy.ndarray
        Shape ``(n, f)``, float64: ``[z, loss]`` (f = 2) for one-logit models, ``[z_1 … z_C,
        loss]`` (f = C + 1) otherwise: the R2D attack's input (Mu & Klabjan, App. D.1).

    Raises
    ------
    certify.errors.InvalidInput
        On NaN or infinite values, shapes that do not match, or labels out of range.
    """
    z = require_finite_array("logits", logits, "an array of finite logits, shape (n,) or (n, C)")
    if z.ndim not in (1, 2) or (z.ndim == 2 and z.shape[1] < 2):
        raise InvalidInput(
            "logits",
            "shape (n,) for a one-logit binary model or (n, C) with C >= 2",
            f"array of shape {z.shape}",
            hint="A binary model with one logit column: pass logits[:, 0].",
        )
    n = z.shape[0]
    if n < 1:
        raise InvalidInput("logits", "at least one record", "0 records")
    y = require_finite_array("labels", labels, "a 1-D array of integer class labels")
    if y.shape != (n,):
        raise InvalidInput("labels", f"shape ({n},), one label per row of logits", f"shape {y.shape}")
    n_classes = 2 if z.ndim == 1 else z.shape[1]
    if not np.all((y == np.round(y)) & (y >= 0) & (y < n_classes)):
        raise InvalidInput("labels", f"integers in [0, {n_classes - 1}]", sorted(set(np.unique(y).tolist()))[:10])
    y = y.astype(np.int64)
    if losses is None:
        if z.ndim == 1:
            loss = -log_expit(np.where(y == 1, z, -z))
        else:
            loss = logsumexp(z, axis=1) - z[np.arange(n), y]
    else:
        loss = require_finite_array("losses", losses, "a 1-D array of finite per-record losses")
        if loss.shape != (n,):
            raise InvalidInput("losses", f"shape ({n},), one loss per row of logits", f"shape {loss.shape}")
    cols = z[:, None] if z.ndim == 1 else z
    return np.column_stack([cols, loss])


# ----------------------------------------------------------------------------------------------
# the attack


@dataclass(frozen=True)
class MiaResult:
    """Outcome of :func:`population_mia`.

    Attributes
    ----------
    applicable:
        ``False`` when there are too few balanced members or non-members for ``n_splits``-fold
        cross-validation; then the AUROC fields are ``None`` and ``reason`` says why.
    reason:
        Why the attack was not applicable, else ``None``.
    auroc_mean, auroc_std:
        Mean and (population) standard deviation of the held-out AUROC over all folds. Compare
        with the same attack on the retrained model: *close to retraining* is the goal, lower
        is not better.
    fold_aurocs:
        The ``n_splits · n_repeats`` held-out AUROCs, repeat-major.
    n_members, n_nonmembers:
        Records used after class balancing (equal by construction).
    n_members_available, n_nonmembers_available:
        Records passed in.
    class_counts:
        Records used per class and side (the same count on both sides), keyed by ``str(class)``.
    members_subsampled:
        ``True`` when some class had fewer non-members than members, so members were dropped.
    stratified_by:
        ``"membership x class"`` or ``"membership"``: the labels the folds were stratified on.
    n_not_converged:
        Folds whose logistic regression stopped at its iteration limit (sklearn
        ``ConvergenceWarning``); reported rather than hidden.
    notes:
        Human-readable remarks about balancing, for the report.
    n_splits, n_repeats, seed, standardize, n_features:
        The protocol, for the report.
    """

    applicable: bool
    reason: str | None
    auroc_mean: float | None
    auroc_std: float | None
    fold_aurocs: tuple[float, ...]
    n_members: int
    n_nonmembers: int
    n_members_available: int
    n_nonmembers_available: int
    class_counts: dict[str, int] = field(default_factory=dict)
    members_subsampled: bool = False
    stratified_by: str | None = None
    n_not_converged: int = 0
    notes: tuple[str, ...] = ()
    n_splits: int = 5
    n_repeats: int = 10
    seed: int = 0
    standardize: bool = True
    n_features: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dictionary."""
        return {
            "attack": "population MIA (logistic regression on logits and loss)",
            "applicable": self.applicable,
            "reason": self.reason,
            "auroc_mean": self.auroc_mean,
            "auroc_std": self.auroc_std,
            "fold_aurocs": list(self.fold_aurocs),
            "n_members": self.n_members,
            "n_nonmembers": self.n_nonmembers,
            "n_members_available": self.n_members_available,
            "n_nonmembers_available": self.n_nonmembers_available,
            "class_counts": dict(self.class_counts),
            "members_subsampled": self.members_subsampled,
            "stratified_by": self.stratified_by,
            "n_not_converged": self.n_not_converged,
            "notes": list(self.notes),
            "protocol": {
                "n_splits": self.n_splits,
                "n_repeats": self.n_repeats,
                "seed": self.seed,
                "standardize": self.standardize,
                "n_features": self.n_features,
                "evaluation": "held-out folds only (RepeatedStratifiedKFold)",
                "balancing": "per-class subsampling without replacement",
            },
        }


def _features(value: object, field_name: str) -> np.ndarray:
    arr = require_finite_array(field_name, value, "a 2-D array (n, f) of finite features")
    if arr.ndim != 2 or arr.shape[1] < 1:
        raise InvalidInput(
            field_name,
            "a 2-D array (n, f) of finite features with f >= 1",
            f"array of shape {arr.shape}",
            hint="Build it with attacks.mia.attack_features(logits, labels, losses).",
        )
    return arr


def _balance(
    y_mem: np.ndarray, y_non: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, dict[str, int], bool, list[str]]:
    """Per-class subsampling without replacement to equal member / non-member counts."""
    keep_mem: list[np.ndarray] = []
    keep_non: list[np.ndarray] = []
    counts: dict[str, int] = {}
    members_subsampled = False
    notes: list[str] = []
    for c in np.unique(y_mem):
        im = np.flatnonzero(y_mem == c)
        inn = np.flatnonzero(y_non == c)
        k = min(im.size, inn.size)
        if inn.size < im.size:
            members_subsampled = True
            notes.append(f"class {c!s}: {inn.size} non-member(s) for {im.size} member(s); members subsampled to {k}")
        keep_mem.append(np.sort(rng.choice(im, size=k, replace=False)) if k < im.size else im)
        keep_non.append(np.sort(rng.choice(inn, size=k, replace=False)) if k < inn.size else inn)
        counts[str(c)] = int(k)
    dropped = np.setdiff1d(np.unique(y_non), np.unique(y_mem)) if y_non.size else np.array([])
    if dropped.size:
        n_drop = int(np.isin(y_non, dropped).sum())
        notes.append(
            f"{n_drop} non-member(s) of class(es) absent from the members dropped: "
            + ", ".join(str(c) for c in dropped.tolist()[:10])
        )
    mem = np.concatenate(keep_mem) if keep_mem else np.array([], dtype=np.int64)
    non = np.concatenate(keep_non) if keep_non else np.array([], dtype=np.int64)
    return mem.astype(np.int64), non.astype(np.int64), counts, members_subsampled, notes


def _attacker(standardize: bool) -> Any:
    """The attacker model (scikit-learn, imported when an attack runs: importing this module
    to list attacks must not load scikit-learn)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if standardize:
        return make_pipeline(StandardScaler(), LogisticRegression())
    return LogisticRegression()


def population_mia(
    member_features: object,
    member_labels: object,
    nonmember_features: object,
    nonmember_labels: object,
    *,
    n_splits: int = 5,
    n_repeats: int = 10,
    seed: int = 0,
    standardize: bool = True,
) -> MiaResult:
    """Population MIA: forget set vs. class-matched never-trained records, cross-validated AUROC.

    Parameters
    ----------
    member_features:
        Shape ``(n_m, f)``: :func:`attack_features` of the audited model on the forget set.
    member_labels:
        Shape ``(n_m,)``: the forget-set records' true classes (used for balancing only, not as
        a feature).
    nonmember_features:
        Shape ``(n_n, f)``: the same features on records that no model in the audit was
        trained on (e.g. unseen users, Mu & Klabjan, App. D.1). Ideally ``n_n >> n_m``.
    nonmember_labels:
        Shape ``(n_n,)``.
    n_splits:
        Folds per repeat (>= 2; default 5 as in the R2D code).
    n_repeats:
        Repeats of the k-fold split with new shuffles (>= 1; default 10; the R2D code defaults to
        100 and the paper's "k = 100 / k = 5" is probably this count).
    seed:
        Seeds the class-balancing subsample and the fold shuffles; the result is a deterministic
        function of the inputs and the seed.
    standardize:
        Put a ``StandardScaler`` in front of the logistic regression (fitted on training folds
        only). ``False`` matches the R2D code.

    Returns
    -------
    MiaResult
        Mean, standard deviation and per-fold held-out AUROCs (members = positives), the counts
        after balancing and the protocol. ``applicable=False`` with a ``reason`` (and no AUROC)
        when fewer than ``n_splits`` members or non-members remain after balancing, e.g. a
        single forgotten record: this case never raises.

    Raises
    ------
    certify.errors.InvalidInput
        On NaN or infinite features, non-2-D features, feature widths that differ between
        members and non-members, label arrays whose length differs from their features, or bad
        ``n_splits``, ``n_repeats``, ``seed``.

    Notes
    -----
    Members are labelled 1 and non-members 0. For each of the ``n_splits · n_repeats`` splits of
    ``RepeatedStratifiedKFold(random_state=seed)`` the attacker is fitted on the training folds
    and scored with ``decision_function`` on the held-out fold only; the fold AUROC is
    :func:`attacks.roc.auroc`. The balancing subsample is drawn once, so the fold spread
    reflects the splits, not the subsample.

    The subsample and the folds depend only on the labels and ``seed``, never on the features.
    Calling this function for the original, the unlearned and the retrained model with the same
    labels and seed therefore attacks all three on the same records with the same folds, and
    their AUROCs differ only through the models.
    """
    n_splits = _int_at_least(n_splits, "n_splits", 2)
    n_repeats = _int_at_least(n_repeats, "n_repeats", 1)
    seed = _int_at_least(seed, "seed", 0)
    if not isinstance(standardize, (bool, np.bool_)):
        raise InvalidInput("standardize", "True or False", standardize)
    standardize = bool(standardize)
    xm, ym, xn, yn = _member_arrays(member_features, member_labels, nonmember_features, nonmember_labels)

    rng = np.random.default_rng(seed)
    mem_idx, non_idx, counts, members_subsampled, notes = _balance(ym, yn, rng)
    common: dict[str, Any] = dict(  # the fields every MiaResult shares
        n_members_available=int(xm.shape[0]),
        n_nonmembers_available=int(xn.shape[0]),
        class_counts=counts,
        members_subsampled=members_subsampled,
        notes=tuple(notes),
        n_splits=n_splits,
        n_repeats=n_repeats,
        seed=seed,
        standardize=standardize,
        n_features=int(xm.shape[1]),
        n_members=int(mem_idx.size),
        n_nonmembers=int(non_idx.size),
    )
    n_bal = int(mem_idx.size)
    if n_bal < n_splits:
        return MiaResult(
            applicable=False,
            reason=_too_few_reason(int(xm.shape[0]), n_bal, n_splits),
            auroc_mean=None,
            auroc_std=None,
            fold_aurocs=(),
            stratified_by=None,
            **common,
        )

    x = np.concatenate([xm[mem_idx], xn[non_idx]])
    membership = np.r_[np.ones(n_bal, dtype=np.int64), np.zeros(non_idx.size, dtype=np.int64)]
    cls = np.concatenate([ym[mem_idx], yn[non_idx]])
    # stratify on membership x class when every cell can fill every fold; else membership only
    _, cls_code = np.unique(cls, return_inverse=True)
    joint = membership * (int(cls_code.max()) + 1) + cls_code
    _, cell_counts = np.unique(joint, return_counts=True)
    use_joint = bool(cell_counts.min() >= n_splits)
    values, n_not_converged = _cross_validated_aurocs(
        x, membership, joint if use_joint else membership, n_splits, n_repeats, seed, standardize
    )
    return MiaResult(
        applicable=True,
        reason=None,
        auroc_mean=float(values.mean()),
        auroc_std=float(values.std()),
        fold_aurocs=tuple(float(v) for v in values),
        stratified_by="membership x class" if use_joint else "membership",
        n_not_converged=n_not_converged,
        **common,
    )


def _member_arrays(
    member_features: object, member_labels: object, nonmember_features: object, nonmember_labels: object
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The checked feature and label arrays of :func:`population_mia` (same widths, same label kind)."""
    xm = _features(member_features, "member_features")
    xn = _features(nonmember_features, "nonmember_features")
    if xm.shape[1] != xn.shape[1]:
        raise InvalidInput(
            "nonmember_features",
            f"the same number of feature columns as member_features ({xm.shape[1]})",
            f"{xn.shape[1]} column(s)",
        )
    ym = _labels(member_labels, "member_labels", xm.shape[0], "member_features")
    yn = _labels(nonmember_labels, "nonmember_labels", xn.shape[0], "nonmember_features")
    if ym.size and yn.size and (ym.dtype.kind in "US") != (yn.dtype.kind in "US"):
        raise InvalidInput("nonmember_labels", "labels of the same kind as member_labels", f"dtype {yn.dtype}")
    return xm, ym, xn, yn


def _too_few_reason(n_members: int, n_balanced: int, n_splits: int) -> str:
    if n_members < n_splits:
        return (
            f"{n_members} member(s) for {n_splits}-fold cross-validation: a population "
            "attack needs at least n_splits members; use a per-example attack (U-LiRA)"
        )
    return (
        f"{n_balanced} member/non-member pair(s) after class balancing for {n_splits}-fold "
        "cross-validation: too few non-members of the members' classes"
    )


def _cross_validated_aurocs(
    x: np.ndarray,
    membership: np.ndarray,
    strata: np.ndarray,
    n_splits: int,
    n_repeats: int,
    seed: int,
    standardize: bool,
) -> tuple[np.ndarray, int]:
    """Held-out AUROC of each fold of ``RepeatedStratifiedKFold(random_state=seed)``, and how many
    fits did not converge."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import RepeatedStratifiedKFold

    cv = RepeatedStratifiedKFold(n_splits=n_splits, n_repeats=n_repeats, random_state=seed)
    fold_aurocs: list[float] = []
    n_not_converged = 0
    for train, test in cv.split(x, strata):
        model = _attacker(standardize)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            model.fit(x[train], membership[train])
        if any(issubclass(w.category, ConvergenceWarning) for w in caught):
            n_not_converged += 1
        scores = model.decision_function(x[test])
        held = membership[test]
        fold_aurocs.append(auroc(scores[held == 1], scores[held == 0]))
    return np.asarray(fold_aurocs), n_not_converged


class MembershipInference(Attack):
    """The seed papers' population MIA on the original, unlearned and retrained models (noiseless
    and released), plus a black-box per-release score: the release's mean loss on Z (lower =
    remembers), from which the ε bound is computed.

    The per-release score reads one number of each trial (its mean loss on Z: the only feature
    shipped). The population MIA reads the audit's own three noiseless models, and each of them
    released once with noise from this attack's own generator (seeded by ``inputs.seed``, drawn
    in the order original, unlearned, retrained; only when σ is finite), not a trial: the
    trials are never seen whole by :meth:`score`."""

    name = "mia"
    title = "Membership inference"
    description = (
        "population MIA (logistic regression on logits and loss, forget vs never-seen records, "
        "class-balanced, repeated stratified k-fold AUROC); epsilon bound from the forget-set "
        "loss of each released model"
    )
    orientation = "memory"  # a lower loss on Z: remembers more

    def features(self, inputs: AttackInputs, models: ModelRows) -> dict[str, np.ndarray]:
        """``forget_loss``: each released model's mean loss on Z, shape (n,)."""
        Xf, yf = inputs.forget_data
        return {"forget_loss": to_numpy(batched_per_sample_loss(inputs.objective, models.released, Xf, yf).mean(1))}

    def score(self, inputs: AttackInputs, features: Features) -> AttackOutcome:
        import torch

        Xf, yf = inputs.forget_data
        gen = torch.Generator().manual_seed(inputs.seed % 2**32)
        released = math.isfinite(inputs.sigma)
        population = {}
        # one generator, one draw per model in this order: the releases are a function of the seed alone
        for name in ("original", "unlearned", "retrained"):
            noiseless = getattr(inputs, "theta_" + name)
            entry = {"noiseless": self._population(inputs, noiseless, Xf, yf)}
            if released:
                entry["released"] = self._population(inputs, Unlearner.release(noiseless, inputs.sigma, gen), Xf, yf)
            population[name] = entry
        return AttackOutcome(
            -features["unlearned"]["forget_loss"],
            -features["retrained"]["forget_loss"],
            {"population_auroc": population},
        )

    @staticmethod
    def _population(inputs: AttackInputs, theta, Xf, yf) -> dict:
        def feats(X, y):
            return attack_features(
                to_numpy(inputs.objective.logits(theta, X)),
                to_numpy(y),
                to_numpy(inputs.objective.per_sample_loss(theta, X, y)),
            )

        result = population_mia(
            feats(Xf, yf),
            to_numpy(yf),
            feats(inputs.X_unseen, inputs.y_unseen),
            to_numpy(inputs.y_unseen),
            seed=inputs.seed % 2**32,
        )
        return result.to_dict()
