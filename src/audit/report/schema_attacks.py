"""Report sections of the attacks: bounds, GDP readings and estimates, trials and their sizing,
the comparison with the certificate, the production model and reproducibility
(:mod:`audit.report.schema`)."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    model_validator,
)
from pydantic_core import PydanticCustomError

from audit.report.schema_fields import (
    Absent,
    Bool,
    Count,
    Delta,
    ExtFloat,
    ExtNonNeg,
    ExtNonNegNoNan,
    ExtPosNoNan,
    ExtProbability,
    NonNegFloat,
    OpenDict,
    OpenUnit,
    Pair,
    PosCount,
    PosFloat,
    Probability,
    Seed,
    Str,
    Text,
    _Section,
)
from audit.report.schema_inputs import (
    AttackName,
)


class Counts(_Section):
    tp: Count
    fp: Count
    tn: Count
    fn: Count


class RocCurve(_Section):
    fpr: list[Probability]
    tpr: list[Probability]

    @model_validator(mode="after")
    def _same_length(self) -> RocCurve:
        if len(self.fpr) != len(self.tpr):
            raise PydanticCustomError(
                "inconsistent", "as many points as fpr ({n})", {"n": len(self.fpr), "field": "tpr"}
            )
        return self


class Roc(_Section):
    """Exact empirical ROC (world U positive): AUROC, TPR at low FPR, a downsampled curve."""

    auroc: Probability
    tpr_at_1pct_fpr: Probability
    tpr_at_0_1pct_fpr: Probability
    n_pos: PosCount
    n_neg: PosCount
    curve: RocCurve


Direction = Literal["U>R", "R>U"]


class GdpEstimate(_Section):
    """The mu-GDP reading of an attack's scores: a point fit (not a bound) and a lower bound that
    holds only under the hypothesis that the trade-off curve is Gaussian. Given only when the
    goodness-of-fit test accepts the Gaussian shape (``gof``); otherwise every mu and epsilon is
    nan and ``note`` says why."""

    mu: ExtNonNeg
    """nan when no threshold had enough trials, or the reading was refused (see ``note``)."""
    epsilon_estimate: ExtNonNeg
    delta: Delta
    direction: Direction
    n_points: Count
    min_count: PosCount
    n_trials: Pair
    note: Str
    method: Text
    kind: Literal["estimate"]
    gof: Literal["accepted", "rejected", "discrete", "untestable"] | None = Absent()
    """Verdict of the Gaussian-shape test (absent in reports written before it existed)."""
    gof_statistic: ExtNonNeg | None = Absent()
    """Likelihood-ratio statistic G2 of the equal-variance binormal fit; nan when not run."""
    gof_df: Count | None = Absent()
    """Its degrees of freedom (0 when not run)."""
    gof_p_value: ExtProbability | None = Absent()
    gof_level: OpenUnit | None = Absent()
    mu_lower: ExtNonNeg | None = Absent()
    """Clopper-Pearson lower bound on mu; nan when the reading was refused."""
    epsilon_lower: ExtNonNeg | None = Absent()
    """Epsilon at delta of mu_lower: a lower bound only under the Gaussian hypothesis."""
    confidence: OpenUnit | None = Absent()
    lower_method: Text | None = Absent()
    lower_kind: Literal["bound under the Gaussian (mu-GDP) hypothesis"] | None = Absent()


class GdpBound(_Section):
    """The Clopper-Pearson lower bound on mu of an attack's scores and its epsilon at delta, reported in
    noise mode only: there the release is the Gaussian mechanism on two fixed models, its trade-off
    curve is G_mu by construction, and this is a valid bound that can refute the certificate
    (attacks.gdp, Nasr et al. 2023). Elsewhere the GDP lower bound is ``gdp_estimate.epsilon_lower``,
    an estimate under the Gaussian hypothesis."""

    mu_lower: ExtNonNegNoNan
    epsilon_lower: ExtNonNegNoNan
    """Epsilon at delta of mu_lower (exact GDP conversion); inf when delta is 0 and mu_lower > 0."""
    kind: Literal["bound", "estimate"]
    basis: Literal[
        "bound: the release is the Gaussian mechanism on two fixed models (noise mode)",
        "bound under the Gaussian (mu-GDP) hypothesis",
    ]
    threshold: ExtFloat
    direction: Direction
    fpr_upper: Probability
    fnr_upper: Probability
    rate_confidence: OpenUnit
    n_tests: PosCount
    ceiling: ExtNonNegNoNan
    """The epsilon_lower of a perfectly separating attack at these trial counts."""
    confidence: OpenUnit
    delta: Delta
    method: Text


class EpsilonBound(_Section):
    """Clopper-Pearson lower bound on epsilon from an attack's scores on both worlds' releases."""

    epsilon_lower: ExtNonNegNoNan
    threshold: ExtFloat
    direction: Direction
    counts: Counts
    fpr_upper: Probability
    fnr_upper: Probability
    rate_confidence: OpenUnit
    n_trials: Pair
    n_evaluated: Pair
    n_thresholds: PosCount
    confidence: OpenUnit
    delta: Delta
    method: Literal[
        "clopper-pearson/half",
        "clopper-pearson/split",
        "clopper-pearson/bonferroni",
        "clopper-pearson/pareto-bonferroni",
        "clopper-pearson/explicit",
    ]
    """The threshold strategy: a calibration split (half or another fraction), Bonferroni over a
    grid, Bonferroni over the ROC's Pareto frontier, or a pre-registered threshold."""
    ceiling: ExtNonNegNoNan
    """The largest bound the protocol could give with the evaluated counts (perfect separation)."""
    seed: Seed | None
    """Seed of the calibration/evaluation split; null for the strategies that do not split."""
    kind: Literal["bound"]
    roc: Roc
    gdp_estimate: GdpEstimate
    gdp_bound: GdpBound | None = Absent()
    """Noise mode only: the GDP bound, valid there (absent in other modes and in older reports)."""
    n_tests: PosCount | None = Absent()
    """(threshold, direction) tests the error was shared among (absent in older reports)."""
    can_test: Bool | None = Absent()
    """Whether a valid bound's ceiling exceeds the certified epsilon (0 when nothing is certified): this
    Clopper-Pearson bound's, or in noise mode also the GDP bound's (``test_bound`` says which). If not,
    the attack cannot refute the certificate at this size, and its value is reported as "cannot test"
    (:func:`audit.sizing.attack_resolution`)."""
    size_to_test: PosCount | None = Absent()
    """When it cannot: the fewest trials per world at which a valid bound's ceiling would exceed the
    certified epsilon (``test_bound`` says which); null when it can, or when no count up to the
    configuration's limit can."""
    test_bound: Literal["clopper-pearson", "gdp-bound"] | None = Absent()
    """The bound that decides ``can_test``: clopper-pearson where its ceiling exceeds the certified
    epsilon, else gdp-bound where that one's does (noise mode only, where it is valid; never an
    estimate); when the attack cannot test, the one that would at ``size_to_test``. Absent in older
    reports (there: clopper-pearson)."""


class EstimateInterval(_Section):
    """A point estimate and its two-sided interval (``Estimates.confidence``); inf only as the
    upper end of an epsilon whose worlds are nearly separated."""

    point: ExtNonNeg
    lower: ExtNonNeg
    upper: ExtNonNeg


class EffectSize(_Section):
    """(mean U - mean R) / pooled s.d. of an attack's scores, with a studentized bootstrap interval
    (``Estimates.confidence``, ``n_bootstrap``, ``seed``): how far apart the worlds' scores lie in units
    of the trials' own spread. A distance, not a privacy number: it bounds nothing and is no epsilon.
    Positive where the unlearned world's scores are larger (for an attack of orientation "memory": toward
    under-unlearning), negative where smaller; the point is +-inf only when both worlds' scores are
    constant, an end of the interval also at a handful of trials (resamples without spread)."""

    point: ExtFloat
    lower: ExtFloat
    upper: ExtFloat
    meaning: Literal["a distance in units of the trials' own spread; bounds nothing"]


class Estimates(_Section):
    """How much the attack's scores separate the worlds, and which way (:mod:`attacks.estimates`):
    estimates with intervals, never bounds. They rank methods; the bound tests the certificate."""

    kind: Literal["estimate"]
    auroc: EstimateInterval
    """DeLong interval around the AUROC (world U positive)."""
    tpr_at_fpr: dict[Str, EstimateInterval | None]
    """TPR at each low FPR ("0.01", "0.001") with a bootstrap interval; null: cannot estimate."""
    tpr_min_negatives: dict[Str, PosCount]
    """Retrained-world trials each FPR needs before its TPR is estimated."""
    epsilon: EstimateInterval | None
    """null when it cannot be estimated (fewer than 2 trials in a world, or no test to read)."""
    epsilon_method: Literal["gdp", "trade-off"]
    """gdp: mu-hat of the Gaussian trade-off curve (its shape test accepted); trade-off: the
    empirical test chosen on half the trials and read on the other half."""
    delta: Delta
    direction: Literal["under-unlearning", "over-unlearning", "undetermined", "not-oriented"]
    """under-unlearning: the unlearned model is closer to the original than retraining is (AUROC
    interval above 0.5); over-unlearning: farther (below 0.5); not-oriented: the attack's score
    cannot tell which way."""
    orientation: Literal["memory", "worlds"]
    confidence: OpenUnit
    n_bootstrap: PosCount
    seed: Seed
    n_trials: Pair
    note: Str
    effect_size: EffectSize | None = Absent()
    """The score gap in units of the trials' spread (absent in older reports): it orders methods that the
    AUROC and epsilon estimates leave at the trial ceiling, as a distance, never as a leak."""


class AttackResult(_Section):
    """One attack: its bound from the released models' scores, and its own facts."""

    title: Text
    description: Text
    bound: EpsilonBound
    details: OpenDict
    """Open: what this attack reports beyond its bound (e.g. the population MIA's AUROCs,
    relearn-time summaries, the white-box distance)."""
    estimates: Estimates | None = Absent()
    """Estimates with intervals next to the bound (absent in older reports)."""


class TrialSizing(_Section):
    """Who chose the trial count and why (:mod:`audit.trial_budget`). In noise mode, unless the user chose,
    the count is sized by cost: the smallest of the bound's plateau (from the release's mu, known before any
    trial), the count a pilot's measured cost per trial fits in ``budget_s``, and the memory. The count depends
    on the machine's speed only through the budget: rerun with ``--trials`` at ``n_per_world`` (and the seed)
    for the same trials, bounds and verdict anywhere."""

    chosen_by: Literal["user", "target-ceiling", "mode-default", "cost"]
    """user: config.trials; target-ceiling: the fewest reaching config.target_ceiling; mode-default: the
    mode's constant (retrain and rerun modes); cost: sized by the rule above (noise mode)."""
    why: Text
    """One sentence, shown in the CLI and HTML reports."""
    stopped_by: Literal["plateau", "decided", "budget", "memory", "cap"] | None = Absent()
    """cost only: what ended the doubling: the bound's plateau, the decision (the predicted bound above the
    certified epsilon by a margin), the budget, the memory, or the cap of doublings."""
    budget_s: PosFloat | None = Absent()
    """cost only: config.trial_budget, seconds the sized attack stage may take by the pilot's rate."""
    clock: Literal["process-cpu", "wall"] | None = Absent()
    """cost only, with a pilot: this process's CPU time (local executor) or wall time (workers)."""
    pilot_trials: PosCount | None = Absent()
    """cost only, with a pilot: trials per world of the pilot (the attack stage at the floor count)."""
    pilot_s: NonNegFloat | None = Absent()
    """cost only, with a pilot: the pilot's measured seconds on ``clock`` (after an untimed run of 16 trials
    that pays the attacks' first use in the process)."""
    seconds_per_trial: NonNegFloat | None = Absent()
    """cost only, with a pilot: pilot_s / pilot_trials (fixed costs counted per trial: an upper estimate)."""
    predicted_s: NonNegFloat | None = Absent()
    """cost only, with a pilot: n_per_world x seconds_per_trial."""
    release_mu: ExtNonNeg | None = Absent()
    """cost only: ||theta_U - theta_R|| / sigma, the Gaussian release's mu (the realized epsilon's)."""
    predicted_bound: NonNegFloat | None = Absent()
    """cost only: the best attack's Clopper-Pearson bound predicted at this count (a sizing aid, not a bound)."""
    plateau_trials: PosCount | None = Absent()
    """cost only: the first count of floor x 2^k whose doubling adds less than ``plateau_gain`` to the
    predicted bound, or whose predicted bound exceeds the certified epsilon by the margin."""
    plateau_gain: PosFloat | None = Absent()


class Trials(_Section):
    """The released models the attacks scored: N per world."""

    mode: Literal["noise", "retrain", "rerun"]
    mode_reason: Text
    """Why this mode: the randomness an adversary faces (output noise, or training randomness)."""
    n_trials: PosCount
    seed: Seed
    sigma: ExtNonNegNoNan
    path: Literal["noise", "vmap", "loop"]
    seed_scheme: Text
    dim: PosCount
    device: Text
    dtype: Literal["float64", "float32"]
    spread_unlearned: NonNegFloat
    """Root-mean-square distance of the unlearned world's releases from that world's own noiseless model (the
    audit's U(A(D), D, Z): in noise mode the centre of the releases, so about sigma * sqrt(d))."""
    spread_retrained: NonNegFloat
    ceiling: ExtNonNegNoNan
    """The largest bound a perfectly separating attack could prove with these trials (default strategy)."""
    sized_for_ceiling: ExtPosNoNan | None
    """The target ceiling the trial count was sized for; null when the count was given."""
    n_per_world: PosCount
    root_seed: Seed
    confidence: OpenUnit
    """The level at which every attack's bound holds together (so the best one does too)."""
    per_attack_confidence: OpenUnit
    """Each bound's own level: 1 - (1 - confidence)/(2k) for k attacks with two statements each (Bonferroni)."""
    delta: Delta
    sizing: TrialSizing | None = Absent()
    """How the trial count was chosen (absent in older reports)."""


class Comparison(_Section):
    """Certified >= realized >= empirical: the audit's central check."""

    certified_epsilon: ExtNonNegNoNan | None
    """null when no certificate was issued (nothing can then be violated); 0 for an exact certificate."""
    realized_epsilon: ExtNonNeg
    empirical_epsilon_lower: dict[AttackName, ExtNonNegNoNan]
    best_empirical_epsilon: ExtNonNegNoNan
    best_attack: AttackName | None
    certificate_violated: Bool
    gaussian_epsilon_lower: dict[AttackName, ExtNonNegNoNan]
    """GDP lower bounds (Clopper-Pearson on mu) of the attacks whose trade-off passed the
    Gaussian goodness-of-fit test: valid under the Gaussian hypothesis only."""
    best_gaussian_attack: AttackName | None
    best_gaussian_epsilon_lower: ExtNonNegNoNan | None
    gaussian_above_certified: Bool
    """The best GDP lower bound exceeds the certified epsilon (evidence under the Gaussian hypothesis)."""
    realized_below_empirical: Bool
    ordering_holds: Bool | None
    """null when no certificate was issued."""
    gdp_bound_epsilon_lower: dict[AttackName, ExtNonNegNoNan] | None = Absent()
    """Noise mode only: every attack's GDP bound (valid there: the release is the Gaussian mechanism
    on two fixed models), which can refute the certificate like the Clopper-Pearson bound."""
    best_gdp_bound_attack: AttackName | None = Absent()
    best_gdp_bound_epsilon_lower: ExtNonNegNoNan | None = Absent()
    violated_by: Literal["clopper-pearson", "gdp-bound"] | None = Absent()
    """Which bound refuted the certificate (the Clopper-Pearson one when both did); null when none did."""


class PositiveControl(_Section):
    """The same attacks on the original model A(D) against the retrained one: their power."""

    epsilon_lower: dict[AttackName, ExtNonNegNoNan]
    auroc: dict[AttackName, Probability]
    best_attack: AttackName | None
    best_epsilon_lower: ExtNonNegNoNan
    has_power: Bool
    """False when no attack proves anything about the original model: a pass then means nothing."""


class TrialCost(_Section):
    """What the trials would take, estimated before they ran from the audit's own run: only where every
    trial is trainings run one at a time (retrain mode, a method without batched training: the caller's
    code); batched trials cost far less than the audit's single timing suggests, and none is estimated."""

    seconds_per_training: NonNegFloat
    """The slower of the audit's own learning on D and retraining on D minus Z (timings.learn_s, retrain_s;
    with production weights nothing is learned and learn_s is about 0)."""
    seconds_per_unlearning: NonNegFloat
    """The audit's own unlearning (timings.unlearn_s)."""
    trainings: Count
    """Two per model still to make (learning and retraining) over the trials and shadow models; those read
    back from the run directory are not counted."""
    unlearnings: Count
    """One per model still to make."""
    workers: PosCount
    estimated_s: NonNegFloat
    """(trainings x seconds_per_training + unlearnings x seconds_per_unlearning) / workers."""
    time_budget_s: PosFloat | None
    """config.time_budget: a run estimated over it was refused before its trials (null: no budget)."""


class Execution(_Section):
    """Where the trials and shadow models ran (audit.executors); the scores do not depend on it."""

    executor: Literal["local", "processes", "ray"]
    workers: PosCount
    shard_size: PosCount
    """Trials per shard (a multiple of the block of models computed together)."""
    shards: PosCount
    resumed: list[Text]
    """Shards read back from the run directory instead of computed, e.g. trials[0:64)."""
    run_directory: Text | None
    """The run directory (resume), or null."""
    cost: TrialCost | None = Absent()
    """The trials' estimated cost (absent where it is not estimated: batched or noise-mode trials)."""


class ProductionModel(_Section):
    """Where the production model (``original=``/``--original``) sits among the trials' original
    models A(D) (fresh trainings by the same ``train``): its mean loss on the training set D against
    theirs. ``z`` is on the logarithm of the loss (a training loss spans orders of magnitude). An
    outlier (|z| > ``z_limit``; by Chebyshev at most 1/z_limit² of any population lies that far
    out) is not modelled by the trials (finding ``original-outlier``)."""

    loss: ExtFloat
    """The production model's mean loss on D (eval mode)."""
    trials_mean: ExtFloat
    trials_std: ExtNonNeg
    trials_min: ExtFloat
    trials_max: ExtFloat
    z: ExtFloat
    """(log loss - mean of the trials' log losses) / their standard deviation; 0 or ±inf when the
    trials' losses are all equal."""
    percentile: Probability
    """The fraction of the trials' original models with a lower loss."""
    z_limit: PosFloat
    outlier: Bool


class Attacks(_Section):
    trials: Trials
    attacks: dict[AttackName, AttackResult]
    """One entry per attack that ran, by name (built-in or plug-in)."""
    comparison: Comparison
    positive_control: PositiveControl
    execution: Execution | None = None
    """Where the trials ran (absent from reports written before sharded execution)."""
    production: ProductionModel | None = Absent()
    """Present when the audited release is the production model (``original=``), in retrain mode."""


class Reproducibility(_Section):
    """The determinism check of the caller's ``train`` (before the trials): two trainings on the
    first ``records`` records of D with one seed and one θ_0, compared bit for bit."""

    records: PosCount
    seed: Seed
    """The seed both calls received (the audit's own run's ``train`` call seed)."""
    equal: Bool
    max_abs_difference: ExtNonNeg
