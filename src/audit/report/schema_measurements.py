"""Report sections of what the run measured besides the attacks: utility, the knob's tradeoff,
the frontier, checkpoint recovery, the method, timings, seeds and the environment
(:mod:`audit.report.schema`)."""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    model_validator,
)
from pydantic_core import PydanticCustomError

from audit.report.schema_fields import (
    Absent,
    Bool,
    Count,
    Delta,
    ExtNonNeg,
    ExtNonNegNoNan,
    ExtProbability,
    Float,
    NonNegFloat,
    OpenDict,
    PosCount,
    PosFloat,
    Probability,
    Seed,
    Sha256,
    Str,
    Text,
    _Section,
)


class SplitUtility(_Section):
    """Accuracy and loss of one model on one split; ``noisy_*`` over released (noisy) draws.

    The ``noisy_*`` keys are absent when σ is not finite (no release is possible).
    """

    accuracy: ExtProbability
    loss: ExtNonNeg
    noisy_accuracy_mean: ExtProbability = Absent()
    noisy_accuracy_std: ExtNonNeg = Absent()
    noisy_loss_mean: ExtNonNeg = Absent()
    noisy_loss_std: ExtNonNeg = Absent()
    noisy_records: PosCount | None = None
    """Records the released draws were scored on: a seeded random subsample when fewer than the
    split's (None: every record, or no draws)."""
    noisy_accuracy_se: ExtNonNeg | None = None
    """Standard error of ``noisy_accuracy_mean`` as the mean released accuracy on the whole split:
    the draws' spread and, for a subsample, the records' (conservative)."""

    @model_validator(mode="after")
    def _noisy_all_or_none(self) -> SplitUtility:
        keys = ("noisy_accuracy_mean", "noisy_accuracy_std", "noisy_loss_mean", "noisy_loss_std")
        present = [k for k in keys if k in self.model_fields_set]
        if present and len(present) != len(keys):
            missing = next(k for k in keys if k not in present)
            raise PydanticCustomError(
                "inconsistent", "present with the other noisy_* fields (all four or none)", {"field": missing}
            )
        return self


class ModelUtility(_Section):
    retain: SplitUtility
    forget: SplitUtility
    test: SplitUtility
    noise_draws: Count
    """Released draws behind the ``noisy_*`` values (0 when σ is 0 or not finite)."""
    noisy_dtype: Str | None = None
    """Precision the released draws were scored in (float32 in a float64 run: no certificate reads them)."""


class SplitCounts(_Section):
    forget: list[Count]
    retain: list[Count]
    unseen: list[Count]


class HistogramCounts(_Section):
    original: SplitCounts
    unlearned: SplitCounts
    retrained: SplitCounts


class LossHistograms(_Section):
    """Per-record loss histograms of each noiseless model on each split, shared bin edges."""

    edges: Annotated[list[Float], Field(min_length=2)]
    counts: HistogramCounts
    note: Str

    @model_validator(mode="after")
    def _bins_match_edges(self) -> LossHistograms:
        bins = len(self.edges) - 1
        for model in ("original", "unlearned", "retrained"):
            for split in ("forget", "retain", "unseen"):
                if len(getattr(getattr(self.counts, model), split)) != bins:
                    raise PydanticCustomError(
                        "inconsistent",
                        "{bins} bin counts (len(edges) - 1)",
                        {"bins": bins, "field": f"counts.{model}.{split}"},
                    )
        return self


class UnlearnedVsRetrained(_Section):
    """The noiseless unlearned and retrained models on the test split, record by record."""

    n: PosCount
    unlearned_wrong_retrained_right: Count
    retrained_wrong_unlearned_right: Count
    accuracy_gap: Float
    """Retrained minus unlearned test accuracy (positive: the unlearned model is worse)."""
    p_value: Probability
    """One-sided exact binomial test on the records where they disagree (H0: the unlearned model
    is no more often the wrong one): small means the unlearned model is significantly worse."""


class Utility(_Section):
    original: ModelUtility
    unlearned: ModelUtility
    retrained: ModelUtility
    loss_histograms: LossHistograms
    test_chance_accuracy: Probability
    """The majority-class rate of the test split: the accuracy of a model that learned nothing."""
    unlearned_vs_retrained: UnlearnedVsRetrained


class TradeoffRow(_Section):
    """One value of the method's knob on the tradeoff curve."""

    value: Float
    """The knob's value (R2D: the rewind K in steps)."""
    sensitivity: ExtNonNegNoNan
    sigma: ExtNonNegNoNan
    distance: ExtNonNeg
    test_accuracy_noiseless: ExtProbability
    test_accuracy_released: ExtProbability = Absent()
    """Absent when sigma is not finite."""
    realized_epsilon: ExtNonNeg = Absent()
    """Absent when sigma is not finite."""

    @model_validator(mode="after")
    def _released_iff_finite_sigma(self) -> TradeoffRow:
        finite = math.isfinite(self.sigma)
        for key in ("test_accuracy_released", "realized_epsilon"):
            if (key in self.model_fields_set) != finite:
                raise PydanticCustomError("inconsistent", "present exactly when sigma is finite", {"field": key})
        return self


class Knob(_Section):
    """A hyperparameter that trades noise against compute or utility (declared by the method)."""

    option: Text
    symbol: Text
    description: Text
    refits: Bool
    """True when every value is a different learning algorithm (each point refits and retrains)."""
    sigma_budget: Bool


class Tradeoff(_Section):
    """The knob–sigma–epsilon tradeoff: for each value of the method's knob, the bound, the sigma
    it needs at the certified epsilon, and what it buys."""

    knob: Knob
    chosen: Float
    """The value this audit used."""
    rows: Annotated[list[TradeoffRow], Field(min_length=1)]
    work: NonNegFloat = Absent()
    """The curve's own work in trainings of the audited model (a refit: 1; an R2D replay: K/T; the
    chosen value reuses the audit's own models: 0), within ``config.diagnostic_budget``."""
    left_out: list[Float] = Absent()
    """Values of the knob's grid the diagnostic budget left out (finding ``diagnostic-cut``)."""


class FrontierPoint(_Section):
    """The released model at one epsilon of the frontier."""

    epsilon: PosFloat
    sigma: ExtNonNegNoNan
    """The noise the method's certificate needs at this epsilon (its own ``certify``, same delta)."""
    test_accuracy_mean: ExtProbability
    """Test accuracy of the unlearned model plus that noise, mean over ``noise_draws`` draws."""
    test_accuracy_std: ExtNonNeg
    """Its standard deviation over the draws (0 without noise)."""
    test_accuracy_se: ExtNonNeg | None = None
    """Standard error of ``test_accuracy_mean`` (the draws' and, for a subsample, the records' spread)."""


class Frontier(_Section):
    """The privacy-utility frontier: released test accuracy as a function of epsilon, from this
    run's one fitted and unlearned model (the noise is the only thing that changes)."""

    applicable: Literal[True]
    delta: Delta
    mechanism: Literal["analytic", "classic"]
    noise_draws: PosCount
    test_accuracy_noiseless: ExtProbability
    """The unlearned model without noise: the frontier's ceiling."""
    points: Annotated[list[FrontierPoint], Field(min_length=1)]
    note: Str
    """What the curve is and, where some requested epsilons are left out, why."""
    test_records: PosCount | None = None
    """Test records the released models were scored on (a seeded subsample when below the split's size)."""


class FrontierNotApplicable(_Section):
    """No frontier from one trained model: the reason (training noise, no certificate, ...)."""

    applicable: Literal[False]
    reason: Text


FrontierSection = Annotated[Frontier | FrontierNotApplicable, Field(discriminator="applicable")]


class CheckpointRecovered(_Section):
    """Algorithm 3 (recover the checkpoint from the final parameters) ran."""

    applicable: Literal[True]
    distance_to_checkpoint: ExtNonNeg
    checkpoint_norm: ExtNonNeg
    steps: Count
    max_iterations: Count
    max_residual: ExtNonNeg
    converged: Bool
    tolerance: PosFloat
    rewind: Count = Absent()
    """K, the steps Algorithm 3 was asked to recover; ``steps`` < K when the diagnostic budget cut the
    check short (``distance_to_checkpoint`` is then to the stored θ_{T−steps}; finding ``diagnostic-cut``)."""
    gradients: Count = Absent()
    """Full-data gradients the check evaluated (its budget: ``config.diagnostic_budget`` × T)."""


class CheckpointNotApplicable(_Section):
    """Algorithm 3 does not apply (e.g. eta >= 1/L)."""

    applicable: Literal[False]
    reason: Text


CheckpointRecovery = Annotated[CheckpointRecovered | CheckpointNotApplicable, Field(discriminator="applicable")]


class Parameters(_Section):
    """Content hashes and norms of the original, unlearned and retrained parameters."""

    dimension: PosCount
    norm_original: ExtNonNeg
    norm_unlearned: ExtNonNeg
    norm_retrained: ExtNonNeg
    sha256_original: Sha256
    sha256_unlearned: Sha256
    sha256_retrained: Sha256


class Capabilities(_Section):
    """What the method declares it can do beyond the algorithm pair."""

    knob: Knob | None
    checkpoint_recovery: Bool
    batched_training: Bool
    deletable_before_training: Bool
    data_dependent_certificate: Bool
    any_training: Bool = False
    """The guarantee does not depend on how A trained: A may be the caller's training or weights (noisy-ft)."""
    reruns: Bool = False
    """The release is a noisy run the method re-runs from fixed starts (noisy-ft; trial mode ``rerun``)."""


class Method(_Section):
    """The unlearning method and its paper."""

    name: Text
    title: Text
    paper: Text
    certified: Bool
    """Whether the method has a theorem at all (the certificate says whether it was issued)."""
    capabilities: Capabilities
    hyperparameters: OpenDict
    """Open: each method (built-in or plug-in) has its own hyperparameters."""


class Timings(BaseModel):
    """Wall-clock seconds per stage. Further finite, non-negative entries are accepted."""

    model_config = ConfigDict(extra="allow", strict=True, use_attribute_docstrings=True)
    __pydantic_extra__: dict[str, NonNegFloat] = Field(init=False)

    learn_s: NonNegFloat
    unlearn_s: NonNegFloat
    """The unlearning's time: the median of ``unlearn_repeats_s`` (a single timing in reports without it)."""
    retrain_s: NonNegFloat
    """Retraining without the forgotten records: the median of ``retrain_repeats_s``."""
    speedup_vs_retrain: NonNegFloat
    """``retrain_s / unlearn_s``: medians over medians."""
    attacks_s: NonNegFloat = Absent()
    """Absent when no attack ran."""
    unlearn_repeats_s: Annotated[list[NonNegFloat], Field(min_length=1)] = Absent()
    """Every timing of the unlearning (``config.timing_repeats``), in order: the first on the audited method, each
    further one on a copy of it as trained (no repeat reuses work cached by another); min to max is the spread."""
    retrain_repeats_s: Annotated[list[NonNegFloat], Field(min_length=1)] = Absent()
    """Every timing of the retraining, as for ``unlearn_repeats_s``."""


class Seeds(_Section):
    """Every seed of the run, derived from ``root``."""

    root: Seed
    data: Seed
    forget: Seed
    init: Seed
    estimators: Seed
    noise: Seed
    attacks: Seed


class Environment(_Section):
    """Where the audit ran: Python, package versions (torch among them) and the device."""

    python: Text
    platform: Text
    packages: dict[str, Str | None]
    """Installed version of each numerical dependency (null when not installed); has ``torch``."""
    device: Text
    threads: PosCount
    """torch's CPU threads during the run (:mod:`audit.threads`)."""
    threads_reason: Text
    """Why that many: ``auto``'s rule with the problem's size, or the configured count."""
    omp_wait_policy: Str | None
    """``OMP_WAIT_POLICY`` of the process (the CLI sets ``PASSIVE``; null: the runtime's default)."""
    dtype: Literal["float64", "float32"] = Absent()
    """The dtype the audit trained, drew noise and attacked in (``dtype = auto`` resolved); absent from a
    comparison's environment and from reports written before it was recorded."""
    dtype_reason: Text = Absent()
    """Why that dtype: as configured, or ``auto``'s reading of the method's precision audit."""
    cuda_device: Text = Absent()
    """Present on CUDA only."""
    cuda_version: Str | None = Absent()
    """Present on CUDA only."""

    @model_validator(mode="after")
    def _torch_recorded(self) -> Environment:
        if "torch" not in self.packages:
            raise PydanticCustomError("inconsistent", "an object with a torch entry", {"field": "packages"})
        return self


# -- attacks -------------------------------------------------------------------------------------
