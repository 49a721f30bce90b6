"""AuditConfig: every knob of one audit, validated at the boundary.

Invalid values raise :class:`certify.errors.InvalidInput`, whose message names the field and
its allowed values; the CLI turns it into one sentence and exit code 2.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from certify.errors import InvalidInput, require_positive, require_probability
from certify.mechanisms import MECHANISMS

MODELS = ("logreg", "mlp")
DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("float64", "float32")


@dataclass
class AuditConfig:
    """Configuration of one audit.

    Parameters
    ----------
    method:
        Registered unlearning method (``audit methods`` lists them).
    epsilon, delta:
        Target privacy of the certificate: ε > 0, δ ∈ (0, 1).
    mechanism:
        Gaussian noise calibration: ``analytic`` (Balle & Wang 2018; every ε) or ``classic``
        (Dwork & Roth; ε ≤ 1 only).
    dataset:
        ``adult`` (built in), ``digits``, ``idx:<dir>`` or ``csv:<file>``.
    model:
        ``logreg`` (closed-form constants) or ``mlp`` (estimated constants).
    hidden:
        Hidden layer widths of the MLP.
    pca_components:
        Override the dataset's number of whitened PCA features (None: the dataset's default,
        2 for Adult).
    feature_map:
        Overrides of the dataset's feature map by key (``normalize``, ``standardize``,
        ``pca_components``, ``whiten``, ``row_norm``; see :class:`audit.datasets.FeatureMap`),
        e.g. ``{"normalize": [0.1307, 0.3081], "row_norm": "none"}`` for the Hessian-free paper's
        MNIST pixels.
    forget_count, forget_fraction, forget_class, forget_groups:
        How the forget set Z is chosen; exactly one may be set (default: one random record,
        a single person's deletion request). With ``requests`` > 1, ``forget_count`` is the size
        of **each** request; a set chosen by fraction, class or groups is split into the requests.
    requests:
        Deletion requests served one after another (each of the forget-set size above); every
        release is recorded in the privacy ledger.
    budget_epsilon:
        Cumulative ε budget of the ledger over all releases (at ``delta``); past it a full
        retrain is due. None: no budget.
    steps:
        T, the full-batch gradient steps of learning and of the retrain.
    eta:
        Constant step size; ``None`` lets the method choose (R2D: η = horizon/(L·T)).
    horizon:
        R2D's ηLT when ``eta`` is None.
    rewind, rewind_fraction, sigma_budget:
        R2D's rewind K in steps, as a fraction of T, or the smallest K whose σ fits the budget;
        at most one may be set (default: 0.95·T; see the README on why certified R2D at
        ε = 1 needs a long replay).
    seed:
        Root seed; the data split, forget set, initial point, constant estimators and noise
        draws each get a seed derived from it, all recorded in the report.
    device, dtype:
        Where and in which precision parameters live (``auto`` picks CUDA when available).
    max_train:
        Optional cap on the training-set size (a deterministic subsample).
    noise_draws:
        Noise draws used to report the utility of released (noisy) models as mean ± std.
    curve_points:
        Rewind values on the K–σ–ε tradeoff curve.
    constants:
        User overrides for ``L`` and ``G`` (provenance ``assumed``).
    method_options:
        Method-specific hyperparameters by name (``audit methods --json`` lists each method's;
        e.g. ``{"l2": 1e-3}``); the method validates them.
    attacks:
        Attacks on the released models: any of ``mia``, ``ulira``, ``relearn``, ``whitebox``
        (empty: none).
    trials:
        Released models per world that the attacks score.
    trial_mode:
        ``noise``: a trial is a fresh noise draw on the same noiseless parameters (the method is
        deterministic given its seed); ``retrain``: a trial relearns from a new initial point.
    shadow_models:
        U-LiRA shadow datasets (each gives one "in" and one "out" shadow model).
    confidence:
        Confidence level of the Clopper–Pearson ε lower bounds.
    relearn_max_steps:
        Cap on the relearn-time fine-tuning.
    """

    method: str = "r2d"
    epsilon: float = 1.0
    delta: float = 1e-5
    mechanism: str = "analytic"
    dataset: str = "adult"
    model: str = "logreg"
    hidden: tuple[int, ...] = (64,)
    pca_components: int | None = None
    feature_map: dict[str, Any] = field(default_factory=dict)
    forget_count: int | None = None
    forget_fraction: float | None = None
    forget_class: int | None = None
    forget_groups: int | None = None
    group_column: str | None = None
    label_column: str | None = None
    requests: int = 1
    budget_epsilon: float | None = None
    steps: int = 100
    eta: float | None = None
    horizon: float = 6.0
    rewind: int | None = None
    rewind_fraction: float | None = None
    sigma_budget: float | None = None
    seed: int = 0
    device: str = "auto"
    dtype: str = "float64"
    max_train: int | None = None
    noise_draws: int = 20
    curve_points: int = 11
    constants: dict[str, float] = field(default_factory=dict)
    method_options: dict[str, Any] = field(default_factory=dict)
    attacks: tuple[str, ...] = ("mia", "ulira", "relearn", "whitebox")
    trials: int = 1000
    trial_mode: str = "noise"
    shadow_models: int = 16
    confidence: float = 0.95
    relearn_max_steps: int = 100

    def __post_init__(self) -> None:
        self.validate()

    # ------------------------------------------------------------------------------------
    def validate(self) -> AuditConfig:
        """Check every field; raise :class:`InvalidInput` naming the first bad one."""
        from unlearners.base import get_method

        get_method(self.method)
        self.epsilon = require_positive("epsilon", self.epsilon)
        self.delta = require_probability("delta", self.delta)
        _choice("mechanism", self.mechanism, MECHANISMS)
        if self.mechanism == "classic" and self.epsilon > 1:
            raise InvalidInput("epsilon", "<= 1 with the classic Gaussian mechanism", self.epsilon,
                               hint="Use --mechanism analytic for epsilon > 1.")
        if not isinstance(self.dataset, str) or not self.dataset:
            raise InvalidInput("dataset", "a dataset name or 'idx:<dir>' / 'csv:<file>'", self.dataset)
        _choice("model", self.model, MODELS)
        self.hidden = tuple(self.hidden)
        if not self.hidden or any(_int(h) is None or h < 1 for h in self.hidden):
            raise InvalidInput("hidden", "one or more positive integers", self.hidden)
        chosen = [n for n in ("forget_count", "forget_fraction", "forget_class", "forget_groups")
                  if getattr(self, n) is not None]
        if len(chosen) > 1:
            raise InvalidInput("forget", "exactly one of forget_count, forget_fraction, "
                               "forget_class, forget_groups", chosen)
        if not chosen:
            self.forget_count = 1
        if self.pca_components is not None and (_int(self.pca_components) is None or self.pca_components < 1):
            raise InvalidInput("pca_components", "an integer >= 1, or None for the dataset default",
                               self.pca_components)
        if not isinstance(self.feature_map, dict) or not all(isinstance(k, str) for k in self.feature_map):
            raise InvalidInput("feature_map", "a mapping from feature-map options to values", self.feature_map)
        self.feature_map = dict(self.feature_map)
        if "pca_components" in self.feature_map and self.pca_components is not None:
            raise InvalidInput("feature_map", "pca_components set once (here or as pca_components)",
                               self.feature_map["pca_components"])
        if _int(self.requests) is None or not 1 <= self.requests <= 10_000:
            raise InvalidInput("requests", "an integer in [1, 10000]", self.requests)
        if self.budget_epsilon is not None:
            self.budget_epsilon = require_positive("budget_epsilon", self.budget_epsilon)
            if self.requests == 1:
                raise InvalidInput("budget_epsilon", "used with requests > 1 (the ledger composes "
                                   "several releases)", self.budget_epsilon)
        if self.forget_count is not None and (_int(self.forget_count) is None or self.forget_count < 1):
            raise InvalidInput("forget_count", "an integer >= 1", self.forget_count)
        if self.forget_fraction is not None and not (0 < _float(self.forget_fraction) <= 0.5):
            raise InvalidInput("forget_fraction", "a number in (0, 0.5]", self.forget_fraction)
        if self.forget_class is not None and (_int(self.forget_class) is None or self.forget_class < 0):
            raise InvalidInput("forget_class", "a class label >= 0", self.forget_class)
        if self.forget_groups is not None and (_int(self.forget_groups) is None or self.forget_groups < 1):
            raise InvalidInput("forget_groups", "an integer >= 1 (number of groups to delete)", self.forget_groups)
        if _int(self.steps) is None or self.steps < 1 or self.steps > 1_000_000:
            raise InvalidInput("steps", "an integer in [1, 1000000]", self.steps)
        if self.eta is not None:
            self.eta = require_positive("eta", self.eta)
        self.horizon = require_positive("horizon", self.horizon)
        rewinds = [n for n in ("rewind", "rewind_fraction", "sigma_budget") if getattr(self, n) is not None]
        if len(rewinds) > 1:
            raise InvalidInput("rewind", "at most one of rewind, rewind_fraction, sigma_budget", rewinds)
        if not rewinds:
            self.rewind_fraction = 0.95
        if self.rewind is not None and (_int(self.rewind) is None or not 0 <= self.rewind <= self.steps):
            raise InvalidInput("rewind", f"an integer in [0, steps={self.steps}]", self.rewind)
        if self.rewind_fraction is not None and not (0 <= _float(self.rewind_fraction) <= 1):
            raise InvalidInput("rewind_fraction", "a number in [0, 1]", self.rewind_fraction)
        if self.sigma_budget is not None:
            self.sigma_budget = require_positive("sigma_budget", self.sigma_budget)
            if not hasattr(get_method(self.method), "rewind_for_sigma"):
                raise InvalidInput("sigma_budget", "used only with a method that rewinds (r2d)",
                                   self.sigma_budget)
        if _int(self.seed) is None or not 0 <= self.seed < 2**63:
            raise InvalidInput("seed", "an integer in [0, 2**63)", self.seed)
        _choice("device", self.device, DEVICES)
        _choice("dtype", self.dtype, DTYPES)
        if self.max_train is not None and (_int(self.max_train) is None or self.max_train < 2):
            raise InvalidInput("max_train", "an integer >= 2", self.max_train)
        if _int(self.noise_draws) is None or not 1 <= self.noise_draws <= 10_000:
            raise InvalidInput("noise_draws", "an integer in [1, 10000]", self.noise_draws)
        if _int(self.curve_points) is None or not 2 <= self.curve_points <= 101:
            raise InvalidInput("curve_points", "an integer in [2, 101]", self.curve_points)
        from audit.attacking import ATTACKS

        if isinstance(self.attacks, str):
            self.attacks = tuple(a for a in self.attacks.split(",") if a.strip() and a != "none")
        self.attacks = tuple(dict.fromkeys(a.strip() for a in self.attacks))
        for name in self.attacks:
            if name not in ATTACKS:
                raise InvalidInput("attacks", "a comma-separated subset of " + ", ".join(ATTACKS)
                                   + " (or 'none')", name)
        if _int(self.trials) is None or not 10 <= self.trials <= 10_000_000:
            raise InvalidInput("trials", "an integer in [10, 10000000]", self.trials)
        _choice("trial_mode", self.trial_mode, ("noise", "retrain"))
        if _int(self.shadow_models) is None or not 2 <= self.shadow_models <= 4096:
            raise InvalidInput("shadow_models", "an integer in [2, 4096]", self.shadow_models)
        self.confidence = require_probability("confidence", self.confidence)
        if _int(self.relearn_max_steps) is None or not 1 <= self.relearn_max_steps <= 100_000:
            raise InvalidInput("relearn_max_steps", "an integer in [1, 100000]", self.relearn_max_steps)
        if not isinstance(self.method_options, dict) or not all(isinstance(k, str) for k in self.method_options):
            raise InvalidInput("method_options", "a mapping from option names to values", self.method_options)
        self.method_options = dict(self.method_options)
        for name, value in dict(self.constants).items():
            if name not in ("L", "G"):
                raise InvalidInput("constants", "overrides for 'L' and/or 'G'", name)
            self.constants[name] = require_positive(f"constants.{name}", value)
        return self

    def resolved_rewind(self) -> int | None:
        """K in steps, or None when it is derived from ``sigma_budget`` after training."""
        if self.rewind is not None:
            return int(self.rewind)
        if self.rewind_fraction is not None:
            return int(round(self.rewind_fraction * self.steps))
        return None

    def seeds(self) -> dict[str, int]:
        """Independent seeds for each random component, derived from the root seed."""
        names = ("data", "forget", "init", "estimators", "noise", "attacks")
        children = np.random.SeedSequence(int(self.seed)).spawn(len(names))
        return {n: int(c.generate_state(1, dtype=np.uint64)[0] >> 1) for n, c in zip(names, children)}

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["hidden"] = list(self.hidden)
        d["attacks"] = list(self.attacks)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AuditConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise InvalidInput("config", "only known fields (" + ", ".join(sorted(known)) + ")", unknown)
        return cls(**d)


def _choice(field_name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise InvalidInput(field_name, "one of " + ", ".join(repr(a) for a in allowed), value)


def _int(x: Any) -> int | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, float) and math.isfinite(x) and x.is_integer():
        return int(x)
    return None


def _float(x: Any) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return math.nan
    return v
