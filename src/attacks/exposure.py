"""Per-record exposure: which forget records an attack's per-record scores single out.

Ranks the forget records (by position, never by content) by |AUROC − ½| of each record's own
score across the two worlds' models, with a Clopper–Pearson ε bound per record (Bonferroni over
all records). Used by the per-example attacks (U-LiRA, offline LiRA, RMIA); see
:func:`per_record_exposure`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attacks.base import AttackInputs
from attacks.epsilon import clopper_pearson_epsilon
from attacks.lira_gaussians import _phi_matrix
from certify.errors import InvalidInput, require_integer, require_positive

__all__ = ["DEFAULT_TOP_RECORDS", "exposure_details", "per_record_exposure"]


def _column_aurocs(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """Mann–Whitney AUROC of every column, ties counting one half."""
    from scipy.stats import rankdata  # scipy.stats costs 0.5 s to import: only when scoring

    ranks = rankdata(np.concatenate([pos, neg], axis=0), method="average", axis=0)
    n1, n0 = pos.shape[0], neg.shape[0]
    u = ranks[:n1].sum(axis=0) - n1 * (n1 + 1) / 2.0
    return np.clip(u / (n1 * n0), 0.0, 1.0)


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
