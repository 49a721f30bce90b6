"""The comparison report (``audit compare``): every method on one data set, one signed page.

A comparison is a directory::

    OUT/report.json                      this document (ComparisonModel, schema 1.1)
    OUT/report.html                      its page (audit.report.comparison_html)
    OUT/report.dsse.json                 one signature over the page, the document and every method's files
    OUT/deletion-commitment.salt         the salt shared by every method's commitment (0600)
    OUT/methods/<name>/report.json       that method's own audit report (schema 2.3) ...
    OUT/methods/<name>/report.html       ... its page ...
    OUT/methods/<name>/report.dsse.json  ... and its own signature, so it verifies alone

Every number of a method's row is copied from that method's report (``report_sha256`` binds the
row to the file's bytes); nothing is measured twice. The recommendation is a rule applied to the
rows (:meth:`audit.comparing.FastestWithin.apply`), stated in words in the document and on the page.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from audit.report.schema import (
    JSON_SCHEMA_DIALECT,
    Absent,
    AttackName,
    Bool,
    CertificateKind,
    Dataset,
    DeletionRequest,
    Delta,
    Environment,
    EstimateInterval,
    Estimates,
    ExtNonNeg,
    ExtNonNegNoNan,
    ExtProbability,
    Finding,
    Float,
    FrontierSection,
    Model,
    NonNegFloat,
    OpenDict,
    PosCount,
    PosFloat,
    Probability,
    Seeds,
    Sha256,
    Text,
    Timestamp,
    Tool,
    Tradeoff,
    Verdict,
    _invalid_input,
    _Section,
    _utc,
    read_context,
    schema_file,
    schema_version_field,
)
from audit.report.schema_attacks import EffectSize
from certify.errors import InvalidInput

COMPARISON_SCHEMA_VERSION = "1.3"
COMPARISON_SCHEMA_ID = f"https://unlearn-audit.dev/schemas/comparison-{COMPARISON_SCHEMA_VERSION}.schema.json"
MethodName = Annotated[str, Field(pattern=r"^[a-z0-9]+([-_][a-z0-9]+)*$")]


class Leakage(_Section):
    """What the attacks measured on the method's releases (from its report's ``attacks``)."""

    trial_mode: Literal["noise", "retrain", "rerun"]
    n_trials: PosCount
    best_empirical_epsilon: ExtNonNegNoNan
    """The largest epsilon lower bound any attack proved (Clopper-Pearson, at the audit's confidence)."""
    best_attack: AttackName | None
    auroc: dict[AttackName, Probability]
    """Each attack's AUROC at telling the unlearned world's releases from the retrained world's (0.5: cannot)."""
    positive_control_has_power: Bool
    """Whether the same attacks prove anything against the original model (if not, a low bound means little)."""
    estimates: dict[AttackName, Estimates] | None = Absent()
    """Each attack's estimates with intervals, as in the method's report (absent when it has none)."""


class MethodRow(_Section):
    """One method's numbers, each copied from its own report."""

    name: MethodName
    title: Text
    paper: Text
    report: Text
    """Its report, relative to the comparison directory (``methods/<name>/report.json``)."""
    report_sha256: Sha256
    """SHA-256 of that file's bytes."""
    verdict: Verdict
    certificate_kind: CertificateKind
    certified_epsilon: ExtNonNegNoNan | None
    """null when no certificate was issued; 0 for an exact certificate (retraining: identical releases)."""
    conditional: Bool
    """The certificate rests on estimated or assumed constants."""
    cumulative_epsilon: ExtNonNeg | None
    """With several requests (``--requests``): the ledger's cumulative epsilon over every release (the last
    release's certificate is ``certified_epsilon``); null for one request."""
    sigma: ExtNonNegNoNan
    sensitivity: ExtNonNegNoNan | None
    no_op_epsilon: ExtNonNeg | None = Absent()
    """The realized epsilon of releasing the original model (not unlearning at all) at the same sigma (its
    report's ``realized.no_op_epsilon``); at or below certified_epsilon the noise alone hides the deletion.
    null where the reference does not apply (no certificate, training noise)."""
    test_accuracy_noiseless: ExtProbability
    """The unlearned model before noise."""
    test_accuracy_released_mean: ExtProbability | None
    """The released model, mean over the report's noise draws; null when no finite noise certifies (nothing
    is released)."""
    test_accuracy_released_std: ExtNonNeg | None
    test_accuracy_retrained: ExtProbability
    """Retraining from scratch without the forgotten records (the method's own A(D \\ Z)), noiseless."""
    noise_cost_points: Float | None
    """Points of test accuracy the noise costs: noiseless minus released mean, times 100."""
    loss_vs_retrained_points: Float | None
    """Points the released model is below retraining: retrained minus released mean, times 100."""
    learn_s: NonNegFloat
    """Training A(D): what the method costs before any deletion (DP-SGD's noisy training, HF's recollection)."""
    unlearn_s: NonNegFloat
    retrain_s: NonNegFloat
    speedup_vs_retrain: NonNegFloat
    """Retraining time over unlearning time, both measured in the method's own run."""
    unlearn_repeats_s: list[NonNegFloat] | None = None
    """Every timing of the unlearning (its report's ``timings.unlearn_repeats_s``; ``unlearn_s`` is their median):
    min to max is the spread the recommendation's tie rule reads. null when the report timed it once."""
    retrain_repeats_s: list[NonNegFloat] | None = None
    """Every timing of the method's own retraining (``retrain_s`` is their median)."""
    leakage: Leakage | None
    """null when no attack ran (none asked for, or nothing to attack)."""
    frontier: FrontierSection | None
    """The method's privacy-utility frontier (its report's); null when its report has none."""
    knob: Tradeoff | None
    """The method's own knob (R2D's rewind, HF's step size, NGD's lambda): its report's tradeoff curve."""
    findings: list[Finding]
    """The method's findings, as in its report."""
    trained_by: Text | None = Absent()
    """What trained this row's worlds: absent for a registered method (the toolkit's own training algorithm,
    the one its theorem is about); for the caller's candidates and their reference, the caller's train function
    (``module.qualname``). Rows with different trainers compare different pipelines: each row's AUROCs read
    against the retraining of its own trainer (``reference`` or ``candidate_reference``)."""


class NotApplicable(_Section):
    """A requested method that was not run (its theorem excludes the model, or it cannot run on it) or
    that refused while running, and why (one sentence)."""

    name: MethodName
    reason: Text


class MeasuredRanking(_Section):
    """The caller's candidates (and their reference) ordered by measured leakage: measured, not certified."""

    rule: Text
    order: list[MethodName]
    """Least measured leakage first."""
    not_ranked: dict[MethodName, Text]
    """Candidates that ran but cannot be ranked, and why (no attack ran; the attacks had no power)."""


class EstimatedRanking(_Section):
    """The methods of one group of trial modes ordered by their largest estimated epsilon (estimates, not
    bounds), and which neighbours this trial count cannot separate (:mod:`audit.ranking`)."""

    rule: Text
    order: list[MethodName]
    """Least estimated leakage first; neighbours at the trial ceiling, least effect size first (``effect_size``)."""
    epsilon: dict[MethodName, EstimateInterval]
    """Each ranked method's largest epsilon estimate (over its attacks) with its interval."""
    attack: dict[MethodName, AttackName]
    """The attack that gave it."""
    direction: dict[MethodName, Literal["under-unlearning", "over-unlearning", "undetermined", "not-oriented"]]
    not_separable: list[list[MethodName]]
    """Neighbours in ``order`` whose intervals overlap: this trial count cannot tell them apart."""
    sentence: Text
    auroc: dict[MethodName, EstimateInterval] | None = Absent()
    """The AUROC (with its interval) of the attack that gave each method's epsilon estimate."""
    trials_to_separate: list[PosCount | None] | None = Absent()
    """Per pair of ``not_separable``: trials per world that would separate it if the intervals shrink like
    1/sqrt(n); null where none would (equal estimates, or both at the trial ceiling)."""
    at_ceiling: list[MethodName] | None = Absent()
    """Methods whose epsilon estimate is at the trial ceiling (every trial separates the worlds; the upper end
    is infinite): the estimate is what the trials can show, not an order among them."""
    trial_modes: list[Literal["noise", "retrain", "rerun"]] | None = Absent()
    """The trial modes ranked together (retrain mode alone; noise and rerun, which hold training fixed)."""
    not_ranked: dict[MethodName, Text] | None = Absent()
    """Methods of these modes left out, and why (no power and an estimate that contains no leak)."""
    effect_size: dict[MethodName, EffectSize] | None = Absent()
    """The methods at the trial ceiling that ``order`` places by effect size (a secondary order, within each run
    of neighbours there: every epsilon interval in such a run has an infinite upper end, so no separable epsilon
    difference is reversed): each one's effect size of largest magnitude over its attacks, with its interval. A
    distance in units of the trials' own spread, not leakage; absent where no run of two or more has one."""
    effect_size_attack: dict[MethodName, AttackName] | None = Absent()
    """The attack that gave each ``effect_size``."""
    effect_size_not_separable: list[list[MethodName]] | None = Absent()
    """Neighbours in ``order`` ordered by effect size whose intervals (of its magnitude) overlap."""


class Recommendation(_Section):
    """The rule, stated in words, and what it picks among the rows."""

    rule: Text
    max_accuracy_loss_points: NonNegFloat
    method: MethodName | None
    """The recommended method; null when none meets the rule."""
    why: Text
    eligible: list[MethodName]
    """Every method that meets the rule, fastest first."""
    excluded: dict[MethodName, Text]
    """Every other method that ran, with the first condition of the rule it misses."""


class ComparisonModel(_Section):
    """An unlearn-audit comparison (``report.json`` of ``audit compare``), schema version 1.0."""

    schema_version: schema_version_field(COMPARISON_SCHEMA_VERSION)  # type: ignore[valid-type]
    kind: Literal["comparison"]
    tool: Tool
    created_at: Timestamp
    started_at: Timestamp
    epsilon: PosFloat
    delta: Delta
    config: OpenDict
    """The settings every method shared (the audit's fields but ``method``); each method's report holds its own
    validated configuration."""
    methods_requested: list[MethodName]
    """The registered methods requested (empty only when candidates were given)."""
    methods: list[MethodRow]
    """The methods that ran, in the requested order, then the candidates that ran."""
    not_applicable: list[NotApplicable]
    reference: MethodName | None
    """``retrain`` when it was compared: its AUROCs are what an attack achieves against exact retraining."""
    candidates: list[MethodName] | None = Absent()
    """The caller's own unlearning functions compared (``candidates=``, ``--candidate``), in the given order, then
    their reference when ``retrain`` was requested; each audited as the caller's code (certificate kind none),
    trained by the caller's train function. Absent when none was given."""
    candidate_reference: MethodName | None = Absent()
    """``retrain-yours`` when it ran: exact retraining by the caller's train function, so its AUROCs are what an
    attack achieves against a perfect deletion of the caller's pipeline."""
    estimated_ranking: EstimatedRanking | None = Absent()
    """The methods audited in retrain mode (fresh trainings, no output noise: the uncertified methods and
    retraining) ranked by their epsilon estimates; absent with fewer than two."""
    estimated_ranking_fixed_training: EstimatedRanking | None = Absent()
    """The methods audited in noise or rerun mode (the trained models fixed, the release's own noise redrawn)
    ranked among themselves by their epsilon estimates; absent with fewer than two."""
    measured_ranking: MeasuredRanking | None = Absent()
    """The candidates ranked by measured leakage (with candidates only); the recommendation never picks one."""
    dataset: Dataset
    model: Model
    deletion_request: DeletionRequest
    """The one commitment every method's report carries (same records, same salt)."""
    recommendation: Recommendation
    seeds: Seeds
    environment: Environment
    total_s: NonNegFloat
    """Wall-clock seconds of the whole comparison."""

    @model_validator(mode="after")
    def _consistent(self) -> ComparisonModel:
        ran = [m.name for m in self.methods]
        if not (self.methods_requested or self.candidates):
            raise PydanticCustomError(
                "inconsistent", "at least one method or candidate", {"field": "methods_requested"}
            )
        skipped = [m.name for m in self.not_applicable]
        if sorted(ran + skipped) != sorted(self.methods_requested + (self.candidates or [])):
            raise PydanticCustomError(
                "inconsistent", "every requested method and candidate once, run or not applicable", {"field": "methods"}
            )
        if self.recommendation.method is not None and self.recommendation.method not in ran:
            raise PydanticCustomError(
                "inconsistent", "a method that ran ({ran})", {"ran": ", ".join(ran), "field": "recommendation.method"}
            )
        if _utc(self.started_at) > _utc(self.created_at):
            raise PydanticCustomError("inconsistent", "not after created_at", {"field": "started_at"})
        return self

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_unset=True)

    def to_json(self) -> str:
        """``report.json`` text: sorted keys, indent 2, trailing newline, standard JSON."""
        return json.dumps(self.to_json_dict(), indent=2, sort_keys=True, allow_nan=False) + "\n"


def validate_comparison(d: Any) -> ComparisonModel:
    """Validate a comparison dict; a corrupt one raises one :class:`InvalidInput` naming the field."""
    if not isinstance(d, dict):
        raise InvalidInput("report", "a JSON object (an unlearn-audit comparison report.json)", type(d).__name__)
    try:
        return ComparisonModel.model_validate(d, context=read_context(d, COMPARISON_SCHEMA_VERSION))
    except ValidationError as exc:
        raise _invalid_input(exc, d) from None


def json_schema() -> dict[str, Any]:
    """The comparison's JSON Schema (draft 2020-12), generated from :class:`ComparisonModel`."""
    body = ComparisonModel.model_json_schema(mode="validation")
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "$id": COMPARISON_SCHEMA_ID,
        "title": "unlearn-audit comparison",
        "version": COMPARISON_SCHEMA_VERSION,
        "description": (
            "report.json written by `audit compare` (schema 1.1). Generated from "
            "audit.report.comparison.ComparisonModel; do not edit. Each method's own report "
            "(methods/<name>/report.json) follows the report schema."
        ),
        **{k: v for k, v in body.items() if k not in ("title", "description")},
    }


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def schema_path() -> Path:
    return Path(__file__).resolve().parent / "schemas" / f"comparison-{COMPARISON_SCHEMA_VERSION}.schema.json"


def main(argv: list[str] | None = None) -> int:
    """``python -m audit.report.comparison [--check]``: write or check the comparison's schema file."""
    return schema_file(
        schema_path(), schema_text(), sys.argv[1:] if argv is None else argv, "python -m audit.report.comparison"
    )


if __name__ == "__main__":
    raise SystemExit(main())
