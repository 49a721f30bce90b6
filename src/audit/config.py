"""AuditConfig: every knob of one audit, declared once.

:data:`FIELDS` is the single declaration of the configuration: each field's name, default,
constraint (:mod:`certify.errors`; those reading the registries in
:mod:`audit.config_constraints`), help sentence, section and command-line spelling. Everything
else is derived from it: the :class:`AuditConfig` dataclass and its validation, the ``audit run``
flags with their defaults and choices in ``--help`` (:mod:`audit.cli`), the TOML keys, the
report's ``config`` block (:mod:`audit.report.schema`) and the command line the HTML page prints
to repeat an audit (:func:`command_line`).

Invalid values raise :class:`certify.errors.InvalidInput`, whose message names the field and
its allowed values; the CLI turns it into one sentence and exit code 2.
"""

from __future__ import annotations

import functools
import json
import shlex
from collections.abc import Mapping
from dataclasses import asdict, dataclass, make_dataclass
from dataclasses import field as dataclass_field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from audit.config_constraints import (
    CALLER_CODE,
    AttackNames,
    CodeRef,
    MethodName,
    ModelName,
    RayAddress,
    RequestId,
)
from audit.config_constraints import ray_endpoint as ray_endpoint  # imported from here by executors and tests
from audit.threads import ThreadCount
from certify.errors import (
    Anything,
    Choice,
    Integer,
    InvalidInput,
    ListOf,
    MappingOf,
    Optional,
    Real,
    Text,
)
from certify.mechanisms import MECHANISMS
from certify.params import Param

SECTIONS = ("method", "certificate", "data", "forget", "training", "run", "trials", "attacks")


@dataclass(frozen=True)
class Field(Param):
    """A configuration field: a :class:`~certify.params.Param` plus its command-line spelling.

    ``spelling``: ``value`` (``--name VALUE``), ``csv`` (``--name a,b``), ``pairs`` (repeatable
    ``flags[0] NAME=VALUE``, values read as JSON), ``keys`` (one flag per mapping key, e.g.
    ``--L`` and ``--G``). ``flags``: the flag names when they are not ``--name-with-dashes``.
    """

    spelling: str = "value"
    flags: tuple[str, ...] = ()

    @property
    def flag(self) -> str:
        return self.flags[0] if self.flags else "--" + self.name.replace("_", "-")


def _default_attacks() -> tuple[str, ...]:
    from attacks.registry import BUILTIN

    return tuple(BUILTIN)


#: Default grid of the privacy-utility frontier (audit.measurements.frontier): 0.1 to 10, about
#: three points a decade, the range the field reports certified unlearning at.
FRONTIER_EPSILONS = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)

#: Default trials per world: noise draws are cheap; a retrain-mode trial is three trainings.
NOISE_TRIALS, RETRAIN_TRIALS = 1000, 200


# -- the declaration -------------------------------------------------------------------------------
FIELDS: tuple[Field, ...] = (
    Field("method", "r2d", MethodName(), "Unlearning method (see `audit methods`).", "method"),
    Field("epsilon", 1.0, Real(gt=0), "Target epsilon > 0 of the certificate.", "certificate"),
    Field("delta", 1e-5, Real(gt=0, lt=1), "Target delta in (0, 1).", "certificate"),
    Field(
        "mechanism",
        "analytic",
        Choice(MECHANISMS),
        "Gaussian calibration: analytic (every epsilon) or classic (epsilon <= 1).",
        "certificate",
    ),
    Field(
        "dataset",
        "adult",
        Text(),
        "adult | digits | idx:<dir> (MNIST-style IDX) | cifar10:<dir> | csv:<file> (caller: data passed to audit.run).",
        "data",
    ),
    Field(
        "model",
        "logreg",
        ModelName(),
        "Model: logreg (analytic constants), mlp, cnn (estimated), a plug-in, "
        "or module:<package.module or file.py>:<factory> (caller: passed to audit.run).",
        "training",
    ),
    Field("hidden", (64,), ListOf(Integer(1)), "MLP hidden widths, e.g. 64,64.", "training", spelling="csv"),
    Field(
        "pca_components",
        None,
        Optional(Integer(1), "for the dataset's default"),
        "Whitened PCA features (default: the dataset's).",
        "data",
    ),
    Field(
        "feature_map",
        {},
        MappingOf(Anything()),
        "Feature-map override KEY=VALUE (repeatable): normalize=[0.1307,0.3081], standardize, "
        "pca_components, whiten, row_norm.",
        "data",
        spelling="pairs",
        flags=("--feature",),
    ),
    Field(
        "forget_count",
        None,
        Optional(Integer(1)),
        "Forget this many random training records (per request; default 1).",
        "forget",
    ),
    Field("forget_fraction", None, Optional(Real(gt=0, le=0.5)), "Forget this fraction of the training set.", "forget"),
    Field("forget_class", None, Optional(Integer(0)), "Forget every record of this class.", "forget"),
    Field("forget_groups", None, Optional(Integer(1)), "Forget every record of this many random groups.", "forget"),
    Field(
        "forget_ids",
        None,
        Optional(Text()),
        "File of the ids of the records to forget, one per line (ids of --id-column, else source "
        "positions; caller: passed to audit.run).",
        "forget",
    ),
    Field(
        "forget_strategy",
        "random",
        Choice(("random", "outlying", "mislabelled")),
        "How the forget-count or forget-fraction records are picked: random, outlying (farthest from their class "
        "mean: the worst case) or mislabelled (random records given a wrong label: canaries).",
        "forget",
    ),
    Field("id_column", None, Optional(Text()), "CSV or DataFrame column holding each record's id.", "data"),
    Field("group_column", None, Optional(Text()), "CSV column holding user/group ids.", "data"),
    Field("label_column", None, Optional(Text()), "CSV column holding the label.", "data"),
    Field(
        "requests",
        1,
        Integer(1, 10_000),
        "Serve this many deletion requests one after another; the ledger records every release.",
        "forget",
    ),
    Field(
        "budget_epsilon",
        None,
        Optional(Real(gt=0)),
        "Cumulative epsilon budget over all releases; past it a retrain is due.",
        "forget",
    ),
    Field("steps", 100, Integer(1, 1_000_000), "T: full-batch gradient steps.", "training"),
    Field(
        "eta",
        None,
        Optional(Real(gt=0), "for the method's choice"),
        "Constant step size (default: horizon/(L*T)).",
        "training",
    ),
    Field(
        "horizon",
        None,
        Optional(Real(gt=0), "for 6, or T/2 for the built-in cnn (a step of 1/(2L))"),
        "eta*L*T when --eta is not given.",
        "training",
    ),
    Field("rewind", None, Optional(Integer(0)), "K: rewind steps (at most steps).", "training"),
    Field("rewind_fraction", None, Optional(Real(ge=0, le=1)), "K as a fraction of T (default 0.95).", "training"),
    Field(
        "sigma_budget",
        None,
        Optional(Real(gt=0)),
        "Smallest knob value (R2D: K) whose noise fits this sigma.",
        "training",
    ),
    Field("seed", 0, Integer(0, 2**63 - 1), "Root seed (all derived seeds are reported).", "run"),
    Field("device", "auto", Choice(("auto", "cpu", "cuda")), "Where parameters live.", "run"),
    Field(
        "dtype",
        "float64",
        Choice(("float64", "float32", "auto")),
        "Precision of training, noise draws and attacks: float64, float32, or auto (float32 for the methods "
        "whose certificate reads no trained quantity: dpsgd, retrain and the uncertified gradient baselines; "
        "float64 for the others). The environment records the dtype used and why.",
        "run",
    ),
    Field(
        "threads",
        "auto",
        ThreadCount(),
        "CPU threads for torch: auto (1 for small problems, else every available CPU) or a count.",
        "run",
    ),
    Field(
        "executor",
        "local",
        Choice(("local", "processes", "ray")),
        "Where trials and shadow models run: local (this process), processes (local worker processes) or ray "
        '(a Ray cluster: pip install "unlearn-audit[ray]").',
        "run",
    ),
    Field(
        "workers",
        None,
        Optional(Integer(1, 4096), "for every CPU (local: 1)"),
        "Worker processes, or a local Ray cluster's CPUs.",
        "run",
    ),
    Field(
        "ray_address",
        None,
        Optional(RayAddress(), "for a local cluster started for the run"),
        "Address of a running Ray cluster (with executor ray).",
        "run",
    ),
    Field(
        "shard_size",
        None,
        Optional(Integer(1, 10_000_000), "to choose"),
        "Trials per shard, rounded up to a multiple of the block computed together (1,024 in noise mode; the "
        "training group in retrain mode; 1 for your own --train/--unlearn code); results do not depend on it.",
        "run",
    ),
    Field(
        "resume",
        None,
        Optional(Text(), "for no run directory"),
        "Run directory: every finished shard is kept there and a rerun skips it (created if missing; refused "
        "if made by another configuration).",
        "run",
    ),
    Field("max_train", None, Optional(Integer(2)), "Cap on the training-set size.", "data"),
    Field("noise_draws", 20, Integer(1, 10_000), "Noise draws for released-model utility.", "run"),
    Field(
        "utility_records",
        2000,
        Optional(Integer(10, 10_000_000), "for every record"),
        "Records of a split the released (noisy) models are scored on: a seeded random subsample of a larger "
        "split, its standard error reported.",
        "run",
    ),
    Field("curve_points", 11, Integer(2, 101), "Points on the tradeoff curve of the method's knob.", "run"),
    Field(
        "frontier",
        FRONTIER_EPSILONS,
        ListOf(Real(gt=0, le=100), min_len=0, distinct=True),
        "Epsilons of the privacy-utility frontier: released test accuracy of the unlearned model at each "
        "(comma-separated, or none).",
        "certificate",
        spelling="csv",
    ),
    Field(
        "constants",
        {},
        MappingOf(Real(gt=0), keys=("L", "G")),
        "Override the smoothness L or the gradient bound G (provenance assumed).",
        "training",
        spelling="keys",
    ),
    Field(
        "method_options",
        {},
        MappingOf(Anything()),
        "Method option NAME=VALUE (repeatable; see `audit methods --json`).",
        "method",
        spelling="pairs",
        flags=("--option", "-o"),
    ),
    Field(
        "attacks",
        _default_attacks(),
        AttackNames(),
        "Comma-separated attacks (or none); `audit methods --json` lists them.",
        "attacks",
        spelling="csv",
    ),
    Field(
        "trials",
        None,
        Optional(
            Integer(10, 10_000_000),
            f"for {NOISE_TRIALS}+ in noise mode (sized by cost: --trial-budget), {RETRAIN_TRIALS} in retrain mode",
        ),
        "Released models per world scored by the attacks.",
        "trials",
    ),
    Field(
        "target_ceiling",
        None,
        Optional(Real(gt=0, le=15)),
        "Size the trials so a perfect attack could prove this epsilon (decides the trial count).",
        "trials",
    ),
    Field(
        "trial_mode",
        "auto",
        Choice(("auto", "noise", "retrain", "rerun")),
        "auto (noise if the release adds output noise, rerun for noisy-ft, else retrain), noise (fresh noise per "
        "trial), retrain (training randomness redrawn per trial) or rerun (noisy-ft's noisy run redrawn from the "
        "fixed A(D) and A(D \\ Z)).",
        "trials",
    ),
    Field(
        "shadow_models",
        16,
        Integer(2, 4096),
        "Shadow models (an independent trial set of the same game) for attacks that need them.",
        "attacks",
    ),
    Field("confidence", 0.95, Real(gt=0, lt=1), "Confidence of the epsilon lower bounds.", "trials"),
    Field(
        "one_run_canaries",
        None,
        Optional(Integer(10, 1_000_000), "for no one-run audit"),
        "Canary pairs of the one-run audit (Steinke et al. 2023, adapted to deletion): one held-out mislabelled "
        "record of each pair is trained on and then deleted.",
        "attacks",
    ),
    Field(
        "one_run_whitebox_canaries",
        None,
        Optional(Integer(10, 1_000_000), "for no white-box one-run audit"),
        "Canary pairs of the white-box one-run audit: isotropic random records, one of each pair trained on and "
        "then deleted, scored by the release's alignment with each canary's gradient and bounded with the f-DP "
        "one-run analysis (Mahloujifar et al. 2025), on a copy apart from the forget set's audit.",
        "attacks",
        flags=("--one-run-whitebox",),
    ),
    Field("relearn_max_steps", 100, Integer(1, 100_000), "Cap on relearn-time fine-tuning steps.", "attacks"),
    Field(
        "request_id",
        None,
        Optional(RequestId(), "for no request id"),
        "Your id of the deletion request (e.g. a ticket number): recorded in the report and its signed claims.",
        "forget",
    ),
    Field(
        "timing_repeats",
        3,
        Integer(1, 100),
        "Times the unlearning and the retraining are each timed, each on a copy of the trained method (fewer "
        "once the runs took 10 s together): the report's times are the medians, every repeat listed.",
        "run",
    ),
    Field(
        "train",
        None,
        Optional(CodeRef("train"), "for the method's own training"),
        "Your pipeline's training: module:<package.module or file.py>:<function> called as "
        "fn(model, dataset, generator) -> model (with --unlearn).",
        "method",
    ),
    Field(
        "unlearn",
        None,
        Optional(CodeRef("unlearn"), "for a registered method"),
        "Your pipeline's unlearning: module:<package.module or file.py>:<function> called as "
        "fn(model, forget, retain, generator) -> model (with --train; not with --method).",
        "method",
    ),
    Field(
        "original",
        None,
        Optional(Text(), "to train the original model with train"),
        "The model your pipeline trained: a state dict saved with torch.save(model.state_dict(), PATH) "
        "(caller: original= passed to audit.run); unlearn runs on it (with --train and --unlearn).",
        "method",
    ),
    Field(
        "time_budget",
        None,
        Optional(Real(gt=0), "for no limit"),
        "Seconds the trials may take: a run estimated over it (from the audit's own learn/unlearn/retrain "
        "times, where trials are trainings run one at a time) is refused before its trials.",
        "run",
    ),
    Field(
        "diagnostic_budget",
        1.0,
        Real(gt=0, le=1000),
        "Work each diagnostic may do, in trainings of the audited model: the tradeoff curve (a refitting "
        "knob: one training per value; R2D: K/T per rewind replayed) and R2D's checkpoint-recovery check "
        "(gradients over D, T per training). A diagnostic cut short says so (finding diagnostic-cut); "
        "no certificate depends on one.",
        "run",
    ),
    Field(
        "trial_budget",
        5.0,
        Real(gt=0, le=86_400),
        "Noise mode without --trials: seconds the attack stage may take, predicted from a pilot of 1000 trials "
        "(its seconds per trial, fixed costs included, so the stage takes less); the count doubles from 1000 "
        "until this budget, the bound's plateau or the memory stops it (recorded in the report; rerun with "
        "--trials at the recorded count for the same bounds on any machine).",
        "trials",
    ),
)
FIELD = {f.name: f for f in FIELDS}

#: Fields of which at most (``rewind``, ``trial_count``) or exactly (``forget``) one may be set.
CHOSEN_ONE = {
    "forget": ("forget_count", "forget_fraction", "forget_class", "forget_groups", "forget_ids"),
    "rewind": ("rewind", "rewind_fraction", "sigma_budget"),
    "trial_count": ("trials", "target_ceiling"),
}


def _validate(self: Any) -> Any:
    """Check every field against its declaration, then the rules that tie fields together;
    raise :class:`InvalidInput` naming the first bad one."""
    for f in FIELDS:
        setattr(self, f.name, f.check(getattr(self, f.name)))
    chosen = [n for n in CHOSEN_ONE["forget"] if getattr(self, n) is not None]
    if len(chosen) > 1:
        raise InvalidInput("forget", "exactly one of " + ", ".join(CHOSEN_ONE["forget"]), chosen)
    if not chosen:
        self.forget_count = 1
    rewinds = [n for n in CHOSEN_ONE["rewind"] if getattr(self, n) is not None]
    if len(rewinds) > 1:
        raise InvalidInput("rewind", "at most one of " + ", ".join(CHOSEN_ONE["rewind"]), rewinds)
    if not rewinds:
        self.rewind_fraction = 0.95
    sized = [n for n in CHOSEN_ONE["trial_count"] if getattr(self, n) is not None]
    if len(sized) > 1:  # the ceiling would silently override the count: say so instead
        raise InvalidInput(
            "trial_count",
            "at most one of " + ", ".join(CHOSEN_ONE["trial_count"]),
            sized,
            hint="The target ceiling chooses the number of trials itself.",
        )
    if self.rewind is not None and self.rewind > self.steps:
        raise InvalidInput("rewind", f"an integer in [0, steps={self.steps}]", self.rewind)
    if self.mechanism == "classic" and self.epsilon > 1:
        raise InvalidInput(
            "epsilon",
            "<= 1 with the classic Gaussian mechanism",
            self.epsilon,
            hint="Use --mechanism analytic for epsilon > 1.",
        )
    if "pca_components" in self.feature_map and self.pca_components is not None:
        raise InvalidInput(
            "feature_map", "pca_components set once (here or as pca_components)", self.feature_map["pca_components"]
        )
    if self.ray_address is not None and self.executor != "ray":
        raise InvalidInput("ray_address", "used only with executor = ray", self.ray_address)
    if self.executor == "local" and self.workers not in (None, 1):
        raise InvalidInput("workers", "1 or unset with executor = local (use processes or ray for more)", self.workers)
    if self.budget_epsilon is not None and self.requests == 1:
        raise InvalidInput(
            "budget_epsilon", "used with requests > 1 (the ledger composes several releases)", self.budget_epsilon
        )
    if _caller_code(self):
        return self
    _one_source(self)
    if self.sigma_budget is not None:
        from unlearners.registry import get_method

        knob = get_method(self.method).capabilities.knob
        if knob is None or not knob.sigma_budget:
            raise InvalidInput(
                "sigma_budget",
                "used only with a method whose knob has a sigma budget search (e.g. r2d)",
                self.sigma_budget,
            )
    return self


def _caller_code(self: Any) -> bool:
    """Whether the caller's own code is audited (``train`` and ``unlearn``, method ``caller``);
    refuses the half-given or contradictory combinations. ``unlearn`` alone is refused rather
    than paired with a built-in training: the routine is audited on the model its own pipeline
    trains, and the retrained world must be trained the same way. A method whose guarantee does not
    depend on A (``Capabilities.any_training``: noisy-ft) takes ``train`` (and ``original``)
    without ``unlearn``: the method's own unlearning on the caller's training."""
    if self.unlearn is None and self.train is not None and _takes_any_training(self.method):
        return False
    if self.original is not None and self.unlearn is None:
        raise InvalidInput(
            "original",
            "used with train and unlearn (a registered method's theorem is about the "
            "model its own training makes, so it cannot adopt another)",
            self.original,
        )
    if (self.train is None) != (self.unlearn is None):
        given, missing = ("train", "unlearn") if self.unlearn is None else ("unlearn", "train")
        raise InvalidInput(
            missing,
            f"your pipeline's {missing} function too: {given} and {missing} are audited "
            "together (the retrained world runs the same training)",
            None,
        )
    if self.unlearn is None:
        if self.method == CALLER_CODE:
            raise InvalidInput(
                "method",
                "a registered method (see `audit methods`), or train and unlearn for your own code",
                self.method,
            )
        return False
    if self.method not in (FIELD["method"].default, CALLER_CODE):
        raise InvalidInput(
            "method", "left unset with unlearn (your unlearn function is the audited method)", self.method
        )
    for name in ("method_options", "constants"):
        if getattr(self, name):
            raise InvalidInput(name, "empty with unlearn (your code has no method options)", getattr(self, name))
    if self.sigma_budget is not None:
        raise InvalidInput("sigma_budget", "unset with unlearn (your code has no knob)", self.sigma_budget)
    return True


def _takes_any_training(method: str) -> bool:
    from unlearners.registry import get_method

    try:
        return get_method(method).capabilities.any_training
    except InvalidInput:  # an unknown method: refused where the method is checked
        return False


def _one_source(self: Any) -> None:
    """A method option the audit feeds from one of its own fields (``Param.audit``) is set by
    that field only: ``-o eta=0.2`` next to ``--eta 0.1`` would train with one value and record
    the other, so it is refused with the flag to use."""
    from unlearners.registry import get_method

    fed = {p.name: p.audit for p in get_method(self.method).hyperparameters if p.audit is not None}
    for name in sorted(set(self.method_options) & set(fed)):
        source = fed[name]
        flag = FIELD[source].flag if source in FIELD else ("--L/--G" if source == "constants" else source)
        raise InvalidInput(
            f"method_options.{name}",
            f"left to the audit setting it comes from (use {flag}; one source of truth per parameter)",
            self.method_options[name],
        )


def _resolved_rewind(self: Any) -> int | None:
    """K in steps, or None when it is derived from ``sigma_budget`` after training."""
    if self.rewind is not None:
        return int(self.rewind)
    if self.rewind_fraction is not None:
        return int(round(self.rewind_fraction * self.steps))
    return None


SEED_ROLES = ("data", "forget", "init", "estimators", "noise", "attacks")


def _seeds(self: Any) -> dict[str, int]:
    """Independent seeds for each random component, derived from the root seed."""
    children = np.random.SeedSequence(int(self.seed)).spawn(len(SEED_ROLES))
    return {n: int(c.generate_state(1, dtype=np.uint64)[0] >> 1) for n, c in zip(SEED_ROLES, children)}


def _to_dict(self: Any) -> dict[str, Any]:
    d = asdict(self)
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in d.items()}


def _from_dict(cls: type, d: Mapping[str, Any]) -> Any:
    if not isinstance(d, Mapping):
        raise InvalidInput("config", "a mapping of configuration fields", type(d).__name__)
    return cls(**d)


def _only_known(names: Any) -> None:
    """Refuse names that are not configuration fields, naming them (and the field each most
    likely meant)."""
    import difflib

    unknown = sorted(set(names) - set(FIELD))
    if unknown:
        guesses = {u: difflib.get_close_matches(u, FIELD, n=1) for u in unknown}
        meant = ", ".join(f"{g[0]} instead of {u}" for u, g in guesses.items() if g)
        raise InvalidInput(
            "config",
            "only known fields (" + ", ".join(sorted(FIELD)) + ")",
            unknown,
            hint=f"Did you mean {meant}?" if meant else None,
        )


def _checked_init(generated: Any) -> Any:
    """The dataclass's own ``__init__`` behind the unknown-name check: ``AuditConfig(epsilonn=1)``
    raises InvalidInput as ``from_dict`` does, not Python's TypeError (``dataclasses.replace``
    goes through it too)."""

    @functools.wraps(generated)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        _only_known(kwargs)
        generated(self, *args, **kwargs)

    return __init__


def _default(f: Field) -> Any:
    if isinstance(f.default, (dict, list)):
        return dataclass_field(default_factory=lambda v=f.default: type(v)(v))  # type: ignore[misc]
    return dataclass_field(default=f.default)


def _docstring() -> str:
    lines = ["Configuration of one audit (declared in :data:`audit.config.FIELDS`).", "", "Parameters", "----------"]
    for f in FIELDS:
        lines += [f"{f.name}:", f"    {f.help} Allowed: {f.constraint.words}. Default: {f.default!r}."]
    return "\n".join(lines)


if TYPE_CHECKING:

    class AuditConfig:
        """What a type checker sees: the fields are declared in FIELDS and made by make_dataclass below."""

        __dataclass_fields__: ClassVar[dict[str, Any]]

        def __init__(self, **fields: Any) -> None: ...
        def __getattr__(self, name: str) -> Any: ...
        @classmethod
        def from_dict(cls, d: dict[str, Any]) -> AuditConfig: ...


AuditConfig = make_dataclass(  # type: ignore[misc, assignment]
    "AuditConfig",
    [(f.name, Any, _default(f)) for f in FIELDS],
    namespace={
        "__post_init__": lambda self: _validate(self),
        "validate": _validate,
        "resolved_rewind": _resolved_rewind,
        "seeds": _seeds,
        "to_dict": _to_dict,
        "from_dict": classmethod(_from_dict),
        "__doc__": _docstring(),
        "__module__": __name__,
    },
)
AuditConfig.__init__ = _checked_init(AuditConfig.__init__)  # type: ignore[method-assign]


# -- the command line that repeats an audit -----------------------------------------------------
def _flag_value(f: Field, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)  # round-trips exactly
    if f.spelling == "csv":
        return ",".join(str(v) for v in value) if value else "none"
    return str(value)


def command_line(config: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> str:
    """The ``audit run`` command that repeats an audit, from a report's ``config`` block.

    With ``defaults`` the flags whose value equals the default are left out (``--seed`` always
    stays). Unknown keys (from another version) are appended in sorted order.
    """
    parts = ["audit", "run"]
    keys = [f.name for f in FIELDS if f.name in config] + sorted(k for k in config if k not in FIELD)
    for key in keys:
        value = config[key]
        f = FIELD.get(key) or Field(key, None, Anything(), "")
        if value is None:
            continue
        if defaults is not None and key != "seed" and key in defaults and _same(defaults[key], value):
            continue
        if f.spelling == "keys":
            for name in sorted(value or {}):
                parts += [f"--{name}", _flag_value(f, value[name])]
        elif f.spelling == "pairs":
            for name in sorted(value or {}):
                parts += [f.flag, shlex.quote(f"{name}={json.dumps(value[name])}")]
        else:
            parts += [f.flag, shlex.quote(_flag_value(f, value))]
    return " ".join(parts)


def defaults() -> dict[str, Any]:
    """The default configuration, validated (as a report's config block writes it)."""
    return AuditConfig().to_dict()


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return list(a) == list(b)
    return a == b
