"""One-run auditing of certified unlearning: canaries, one fit, one unlearning, one release.

The multi-run audit needs about a thousand trainings per world. This module adapts the one-run
audit of Steinke, Nasr & Jagielski (2023, :mod:`attacks.onerun`) to deletion: one fit, one
unlearning run and one release give an ε lower bound at confidence 1 − α. It is cheap and weak:
a first pass only on a model that memorises single records ("How strong it is" below).

The game
--------
The caller gives training data D, a pool of canary records (e.g. held-out records, optionally
mislabelled with :func:`mislabel` to make them memorable) and a method (A, U).

1. **Secrets.** S ∈ {−1, +1}^m, i.i.d. fair coins.

   * ``design="paired"`` (default). The 2m canaries are paired at random (a seeded permutation
     that does not depend on S). S_i = +1 inserts the first canary of pair i and S_i = −1 the
     second, so C₊(S) always has m records.
   * ``design="independent"`` (Steinke et al.'s original, as the issue suggests). Each of the m
     canaries is inserted iff S_i = +1, so |C₊(S)| ~ Bin(m, ½).

2. **One run.** A is fitted on D ∪ C₊(S), the inserted canaries are appended after D, and
   ``declare_deletable`` is called first when the method needs it. U then deletes exactly
   C₊(S), the certificate is issued for deleting exactly C₊(S), and the model is released with
   that certificate's σ. Canaries with S_i = −1 are never seen. Released:
   M(S) = U(A(D ∪ C₊), D ∪ C₊, C₊) + N(0, σ²I).
3. **Guesses.** Canary c is scored by the released model's logit-scaled confidence φ(c) on its
   own label (LiRA's statistic, :func:`attacks.lira_gaussians.logit_confidence`); higher means "seen in
   training". The score of pair i is φ(first) − φ(second), and the score of a lone canary is
   φ(c). The top k₊ scores are guessed +1, the bottom k₋ are guessed −1, and the others
   abstain. (k₊, k₋) is fixed before the run (``rule="pre-registered"``), or a small grid is
   fixed before the run and Bonferroni-corrected (``rule="bonferroni"``).
4. **Bound.** :func:`attacks.onerun.one_run_bound` with ``chained=True``, as shown below.
5. **Positive control.** The same game's original model A(D ∪ C₊), before unlearning, released
   with the same σ and the same noise draw, is scored by the same guesser with the same
   pre-registered counts and tie key: what a deletion that did nothing (``noop``, under this
   certificate) would have released in this very game. No extra training. The control has power
   when its bound exceeds the certified ε (0 without a certificate): only then could this game,
   at this size and on this model, have caught a deletion that did nothing. Without it a bound
   of 0 on the unlearned model means nothing (the finding ``one-run-no-power``).

Perfect unlearning makes M(S) = A(D) + N(0, σ²I) for every S: the release does not depend on S
at all, the guesses are coin flips, and the bound is 0 except with probability ≤ α. A method
that does not forget leaves the inserted canaries memorised, so they stand out.

What the certificate says about this game, and why the bound is chained
-----------------------------------------------------------------------
The certificate for deleting Z from D' claims that U(A(D'), D', Z) + N(0, σ²I) and
A(D' \\ Z) + N(0, σ²I) are (ε, δ)-indistinguishable. In the game, D' = D ∪ C₊(S) and
Z = C₊(S), so the retrained reference is A(D) + N(0, σ²I) =: R **for every S**. Steinke et
al.'s theorem needs the mechanism to be DP in S, that is, for two secrets S, S' that differ in
one coordinate. The certificate bounds such a pair only through R. Write P = M(S) and
P' = M(S'). If P ≈_(ε,δ) R and P' ≈_(ε,δ) R, then for every event E

    P(E) ≤ e^ε R(E) + δ ≤ e^ε (e^ε P'(E) + δ) + δ = e^{2ε} P'(E) + (1 + e^ε) δ,

so the pair is (2ε, (1 + e^ε)δ)-indistinguishable, and the same holds for *any* two secrets.
The δ of the pair depends on the ε under test, so ε_LB is not simply "the pair's bound
halved". It is the first crossing of ε ↦ p(2ε, (1 + e^ε)δ) = α, where p is Steinke et al.'s
p-value (``chained=True`` in :mod:`attacks.onerun`). ``epsilon_lower_pair`` = 2·ε_LB is the
pair-level bound at the pair's δ, ``delta_pair`` = (1 + e^{ε_LB})δ.

**Proven.** Fix D, the canaries, their pairing, the guess counts and α. Suppose H₀(ε) holds:
there is one distribution R such that, for every S ∈ {−1, +1}^m, M(S) and R are
(ε, δ)-indistinguishable, with M(S) computed with the *released* σ. Then

    P[ε_LB > ε] ≤ α,

where the probability is over S, the initial point, the method's own randomness and the
release noise. Proof: by the triangle inequality above, M is (2ε, (1 + e^ε)δ)-DP in S. The
guesses are post-processing of the release, using only the public canaries and a tie-breaking
key independent of S. Steinke et al.'s theorem then gives P[p(2ε, (1 + e^ε)δ) ≤ α] ≤ α, and
ε_LB > ε implies that event (first-crossing definition). With the Bonferroni rule the same
holds with α/G per candidate.

**Conditional: when the certificate implies H₀.** The certificate is issued for the forget set
C₊(S) that was actually deleted, which is a group of about m records. So the ε being bounded is
the certificate's ε for deleting that *group*, not a per-record ε (pitfall 5 of §2.12). The
certificate implies H₀(ε) with R = A(D) + N(0, σ²I) when three things hold:

(a) **One σ for every S.** The certificate calibrated for C₊(S) would give the same σ as the
    one released (or a smaller one: adding independent noise is post-processing).
    *Paired design:* |C₊(S)| = m and |D ∪ C₊(S)| = |D| + m for every S, so this holds whenever
    the certificate depends on the forget set only through sizes and on data-independent
    constants. That means the method does not declare ``data_dependent_certificate``, and the
    certificate is not ``conditional`` (no constant estimated from the data). Analytic
    constants computed from the training rows (a bound on ‖x‖) must also not change when one
    canary is swapped for its partner, which is true when canaries come from the domain the
    constants assume (e.g. unit-norm rows). ``covers_all_assignments`` reports the first two
    checks.
    *Independent design:* |C₊(S)| varies with S, and σ usually grows with |Z|, so secrets
    with more inserted canaries than the realised run are *not* covered by the released σ.
    ``covers_all_assignments`` is then False except for exact certificates, and the bound is
    a heuristic for output-noise certificates.
(b) **One reference for every S.** The learning algorithm A run on D must not depend on S.
    Options a method chooses from its training data (``Unlearner.pinned_options``, e.g. a
    step size from an estimated smoothness) must be fixed before S is drawn. Pass a method
    already fitted on data that does not involve the canaries (e.g. the audit's own D): the
    game runs ``method.replica()``, which reuses them. ``pinned_options`` lists them. An
    unfitted method chooses them on D ∪ C₊(S), and the note says so.
(c) **The certificate is issued.** A certificate of kind ``none`` (an uncertified baseline)
    states nothing. ε_LB is then only a measurement: any claim that every release of this game
    is (ε, δ)-close to one common reference is refuted for ε < ε_LB.

How strong it is
----------------
The bound is weak by construction. Two things limit it: the triangle inequality (a factor 2 on
ε and δ·(1 + e^ε)), and the ceiling of the one-run estimator
(:func:`attacks.onerun.one_run_ceiling` with ``chained=True``). At δ = 1e-5 that ceiling is 1.66
for m = 1 000 with 100 guesses and 2.68 with 1 000. Even an exactly calibrated Gaussian
mechanism audited with the optimal score gives at most about half its ε at m = 10 000 without
the chaining (see tests/test_onerun.py). The bound tests the *group* certificate, whose σ is
calibrated for |C₊| ≈ m deletions, so each canary's own signal is roughly 1/m of what σ
covers. It refutes gross failures on a model that memorises single records: an unlearning step
that does nothing, a sensitivity bound off by a large factor, a noise bug. On a model that cannot
memorise one record (the default 3-parameter Adult model) it refuted neither a no-op nor a σ
10⁷ times too small, even with 1,000 pairs (docs/attacks.md); its positive control (step 5), the same
game's original model, is not caught either, so the result says ``one-run-no-power`` instead of a
bare ε ≥ 0. It cannot confirm that a certificate is tight; the multi-run audit is for that.

With the default guesses the ceiling peaks (1.93 near m = 3 600 at δ = 1e-5, since the 2mδ term
grows with m), so some ε cannot be tested by any m. A result whose ceiling does not exceed the
certified ε records ``can_test = False`` and the m that could (:func:`pairs_to_test`).

Randomness
----------
Every random choice is a pure function of (seed, role), and of the index through the prefix
property. Role k uses ``numpy.random.SeedSequence(seed, spawn_key=(k,))`` (:data:`ROLES`): the
secrets, the pairing, the initial point, the release noise, the tie-breaking key and the
labels of :func:`mislabel`. The secrets are ``random(m) < ½`` of that stream, so the first m
secrets of a larger game are those of the smaller one. Torch generators are seeded with a
64-bit word of the role's stream, as in :mod:`audit.trials`. The positive control draws nothing
of its own: it is the same game (secrets, pairing, initial point, noise draw, tie key).

References
----------
.. [1] T. Steinke, M. Nasr and M. Jagielski, "Privacy Auditing with One (1) Training Run",
   NeurIPS 2023 (arXiv:2305.08846).
.. [2] J. Hayes, I. Shumailov, E. Triantafillou, A. Khalifa and N. Papernot, "Inexact Unlearning
   Needs More Careful Evaluations to Avoid a False Sense of Privacy", SaTML 2025 (the
   unlearned-versus-retrained game this adapts).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from attacks.lira_gaussians import logit_confidence
from attacks.onerun import OneRunBound, guess_rule, one_run_bound, one_run_ceiling
from audit.datasets.forget import mislabel_records
from audit.seeds import child_seed
from audit.sizing import exceeds, resolution, smallest_above
from certify.errors import (
    PROBABILITY,
    Integer,
    InvalidInput,
    require_choice,
    require_positive,
    require_probability,
)
from certify.mechanisms import MECHANISMS
from unlearners.base import Unlearner, check_training_data
from unlearners.batched import batched_logits

__all__ = [
    "DESIGNS",
    "MAX_PAIRS",
    "ROLES",
    "OneRunControl",
    "OneRunResult",
    "default_guesses",
    "mislabel",
    "one_run_audit",
    "pairs_to_test",
]

DESIGNS: tuple[str, ...] = ("paired", "independent")
"""How canaries are inserted (module docstring): one of each pair, or each one by a coin."""

#: spawn_key of each random role (module docstring, "Randomness").
ROLES: dict[str, int] = {"secrets": 0, "pairs": 1, "init": 2, "noise": 3, "ties": 4, "labels": 5}

SEED_SCHEME = (
    "numpy SeedSequence(seed, spawn_key=(role,)), roles "
    + ", ".join(f"{k}={v}" for k, v in ROLES.items())
    + "; secrets = random(m) < 1/2 (prefix-stable); torch generators seeded with generate_state(1, uint64)"
)


def _stream(seed: int, role: str) -> np.random.SeedSequence:
    return np.random.SeedSequence(int(seed), spawn_key=(ROLES[role],))


def _rng(seed: int, role: str) -> np.random.Generator:
    return np.random.default_rng(_stream(seed, role))


def _torch_generator(seed: int, role: str) -> torch.Generator:
    return torch.Generator().manual_seed(int(_stream(seed, role).generate_state(1, dtype=np.uint64)[0]))


def _tie_seed(seed: int) -> int:
    return int(_stream(seed, "ties").generate_state(1, dtype=np.uint64)[0] >> 1)


def default_guesses(m: int) -> tuple[int, int]:
    """The pre-registered default (k₊, k₋): 5 % of the m tests on each side, at least 1 each
    (r ≈ m/10, near the best fixed fraction for the Gaussian self-test at m = 1 000–10 000)."""
    m = Integer(1).check("m", m)
    k = max(1, round(0.05 * m))
    return (k, k) if 2 * k <= m else (1, 0)


#: The most tests :func:`pairs_to_test` considers (the config's own limit is 1,000,000; the ceiling
#: peaks long before: near 3,500 pairs at δ = 1e-5, 13,700 at δ = 1e-8).
MAX_PAIRS = 100_000


def pairs_to_test(target: float, delta: float, confidence: float = 0.95) -> int | None:
    """The fewest tests m (canary pairs in the paired design) whose ceiling, with the default
    guesses (:func:`default_guesses`) and the chained hypothesis at ``confidence``, exceeds
    ``target``; None when no m up to :data:`MAX_PAIRS` does (the ceiling peaks below it).

    Within a run of m with the same guess count the ceiling falls as m grows (the 2mδ term), so
    the answer is the first m of some run: the search is over the guess count k, whose ceiling
    rises and then falls (:func:`audit.sizing.smallest_above`)."""

    def first_m(k: int) -> int:  # the smallest m whose default guesses are (k, k)
        lo, hi = 1, 20 * k + 20
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if default_guesses(mid) >= (k, k) else (mid, hi)
        return hi

    def ceiling(k: int) -> float:
        return one_run_ceiling(first_m(k), 2 * k, delta, confidence=confidence, chained=True)

    k = smallest_above(ceiling, target, start=1, cap=default_guesses(MAX_PAIRS)[0])
    return None if k is None else first_m(k)


def mislabel(y: Tensor, n_classes: int, seed: int) -> Tensor:
    """Canary labels shifted by a random non-zero offset mod ``n_classes`` (role ``labels``):
    every canary gets a wrong label, so only a model that saw it predicts it."""
    c = Integer(2).check("n_classes", n_classes)
    if not isinstance(y, Tensor) or y.ndim != 1 or y.is_floating_point():
        raise InvalidInput("y", "a 1-D integer tensor of labels", tuple(getattr(y, "shape", ())))
    rng = _rng(Integer(0).check("seed", seed), "labels")
    labels = mislabel_records(y.cpu().numpy(), np.arange(y.shape[0]), c, rng)
    return torch.as_tensor(labels, device=y.device, dtype=y.dtype)


@dataclass(frozen=True)
class OneRunControl:
    """The game's positive control (module docstring, step 5): the original model, not unlearned,
    released with the game's σ and noise draw and guessed at as the unlearned one was.

    Attributes
    ----------
    v, r:
        Correct guesses and guesses (the game's counts, or the best of its Bonferroni grid).
    epsilon_lower:
        The bound those guesses give (chained, at the game's confidence).
    has_power:
        ``epsilon_lower`` exceeds the certified ε (0 without a certificate): this game could have
        caught a deletion that did nothing.
    """

    v: int
    r: int
    epsilon_lower: float
    has_power: bool


@dataclass(frozen=True)
class OneRunResult:
    """What one run of the deletion game showed (:func:`one_run_audit`).

    Attributes
    ----------
    design:
        ``"paired"`` or ``"independent"`` (:data:`DESIGNS`).
    m:
        Tests (coordinates of S): pairs, or canaries in the independent design.
    canaries:
        Canary records used (2m paired, m independent).
    inserted:
        |C₊|: canaries trained on and then deleted (the certificate's group size).
    r, v, k_plus, k_minus, rule:
        Guesses, correct guesses, the reported pair and how it was fixed (:class:`OneRunBound`).
    epsilon_lower:
        Lower bound on the certificate's ε for deleting C₊, at ``confidence`` (chained).
    epsilon_lower_pair, delta_pair:
        The same statement for two secrets: not (2·ε_LB, (1 + e^{ε_LB})·δ)-indistinguishable.
    ceiling:
        ``epsilon_lower`` had all r guesses been correct.
    confidence, delta:
        1 − α and the certificate's δ.
    sigma:
        The released noise (the certificate's σ for C₊; 0 for exact or uncertified releases).
    certificate_kind:
        The certificate's kind (``exact``, ``output-noise``, ``training-noise``, ``none``).
    certified_epsilon:
        The ε the certificate states for deleting C₊, or None when none is issued.
    violation:
        ``epsilon_lower > certified_epsilon`` (None without a certificate). Under H₀ it happens
        with probability ≤ 1 − confidence.
    can_test:
        Whether ``ceiling`` exceeds the certified ε (0 without a certificate: whether the game
        could show anything). When it does not, "ε ≥ 0" is below the game's resolution.
    size_to_test:
        When it cannot: the fewest tests m that could (:func:`pairs_to_test`, default guesses),
        or None when no m up to :data:`MAX_PAIRS` can.
    covers_all_assignments:
        Whether the certificate implies the hypothesis H₀ for every S (conditions (a) of the
        module docstring that can be checked); None without a certificate.
    pinned_options:
        Options the method chose from data before the game (reused by the replica).
    seed:
        The game's seed.
    note:
        What is proven and what is conditional, in words, for the report.
    bound:
        The estimator's record (:class:`attacks.onerun.OneRunBound`).
    control:
        The positive control (:class:`OneRunControl`): the same game on the original model.
    """

    design: str
    m: int
    canaries: int
    inserted: int
    r: int
    v: int
    k_plus: int
    k_minus: int
    rule: str
    epsilon_lower: float
    epsilon_lower_pair: float
    delta_pair: float
    ceiling: float
    confidence: float
    delta: float
    sigma: float
    certificate_kind: str
    certified_epsilon: float | None
    violation: bool | None
    can_test: bool
    size_to_test: int | None
    covers_all_assignments: bool | None
    pinned_options: tuple[str, ...]
    seed: int
    note: str
    bound: OneRunBound
    control: OneRunControl

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if k != "bound"}
        d["pinned_options"] = list(self.pinned_options)
        d["bound"] = self.bound.to_dict()
        d["seed_scheme"] = SEED_SCHEME
        return d


# -- validation -----------------------------------------------------------------------------
def _check_data(X: object, y: object, canaries_X: object, canaries_y: object, design: str) -> None:
    check_training_data(X, y)
    assert isinstance(X, Tensor)  # checked just above
    if (
        not isinstance(canaries_X, Tensor)
        or tuple(canaries_X.shape[1:]) != tuple(X.shape[1:])
        or canaries_X.ndim != X.ndim
    ):
        raise InvalidInput(
            "canaries_X",
            f"a tensor of shape (M, {', '.join(map(str, X.shape[1:]))}) like X's rows",
            tuple(getattr(canaries_X, "shape", ())),
        )
    if not isinstance(canaries_y, Tensor) or canaries_y.shape != (canaries_X.shape[0],):
        raise InvalidInput(
            "canaries_y",
            f"a 1-D tensor of {canaries_X.shape[0]} labels, one per canary",
            tuple(getattr(canaries_y, "shape", ())),
        )
    count = int(canaries_X.shape[0])
    if design == "paired" and (count < 2 or count % 2):
        raise InvalidInput("canaries_X", "an even number >= 2 of canaries (design='paired' uses them in pairs)", count)
    if count < 1:
        raise InvalidInput("canaries_X", "at least one canary", count)
    if not bool(torch.isfinite(canaries_X).all()):
        raise InvalidInput("canaries_X", "finite features", "NaN or infinite values")


def _guess_rule(k_plus: object, k_minus: object, grid: object, m: int) -> dict[str, Any]:
    if grid is None and k_plus is None and k_minus is None:
        k_plus, k_minus = default_guesses(m)
    elif grid is None and (k_plus is None or k_minus is None):
        raise InvalidInput("k_plus, k_minus", "both counts, or neither (the default 5 % of m each)", (k_plus, k_minus))
    guess_rule(m, k_plus=k_plus, k_minus=k_minus, grid=grid)  # type: ignore[arg-type]  # validates them: fail before any training
    return {"grid": grid} if grid is not None else {"k_plus": k_plus, "k_minus": k_minus}


# -- the game -------------------------------------------------------------------------------
def one_run_audit(
    method: Unlearner,
    X: Tensor,
    y: Tensor,
    canaries_X: Tensor,
    canaries_y: Tensor,
    init: Callable[[torch.Generator], Tensor],
    *,
    epsilon: float,
    delta: float,
    mechanism: str = "analytic",
    design: str = "paired",
    k_plus: int | None = None,
    k_minus: int | None = None,
    grid: Sequence[tuple[int, int]] | None = None,
    confidence: float = 0.95,
    seed: int = 0,
) -> OneRunResult:
    """Play the deletion game once and bound the certificate's ε from below (module docstring).

    Parameters
    ----------
    method:
        The audited method. The game runs ``method.replica()``, so pass it fitted on D (or on
        any data independent of the canaries) to fix the options it chooses from data.
    X, y:
        The training data D (n ≥ 2 records), on the device and in the dtype of the model.
    canaries_X, canaries_y:
        The canary pool: 2m records for ``design="paired"``, m for ``"independent"``, with the
        labels they are trained and scored with (see :func:`mislabel`). They must not be in D.
    init:
        θ₀ as a function of a CPU ``torch.Generator`` (drawn from the role ``init``).
    epsilon, delta, mechanism:
        The guarantee asked of the certificate for deleting C₊; σ is the certificate's.
    design:
        ``"paired"`` (default: |C₊| = m for every S) or ``"independent"``.
    k_plus, k_minus:
        Pre-registered guess counts (default :func:`default_guesses`), or
    grid:
        a small list of (k₊, k₋) fixed in advance, Bonferroni-corrected.
    confidence:
        1 − α.
    seed:
        Every random choice is a pure function of (seed, role).

    Returns
    -------
    OneRunResult

    Raises
    ------
    certify.errors.InvalidInput
        On bad input (naming the field), or when the certificate for C₊ needs infinite noise.
    """
    if not isinstance(method, Unlearner):
        raise InvalidInput("method", "an Unlearner instance", type(method).__name__)
    design = require_choice("design", design, DESIGNS)
    _check_data(X, y, canaries_X, canaries_y, design)
    if not callable(init):
        raise InvalidInput("init", "a function of a torch.Generator returning θ₀", type(init).__name__)
    epsilon = require_positive("epsilon", epsilon)
    delta = require_probability("delta", delta)
    mechanism = require_choice("mechanism", mechanism, MECHANISMS)
    confidence = PROBABILITY.check("confidence", confidence)
    seed = Integer(0).check("seed", seed)
    classes = max(2, int(method.objective.n_outputs))
    if (
        canaries_y.is_floating_point()
        or canaries_y.is_complex()
        or bool(((canaries_y < 0) | (canaries_y >= classes)).any())
    ):
        raise InvalidInput(
            "canaries_y", f"integer class labels in [0, {classes - 1}]", sorted(set(canaries_y.tolist()))[:5]
        )
    count = int(canaries_X.shape[0])
    m = count // 2 if design == "paired" else count
    rule = _guess_rule(k_plus, k_minus, grid, m)

    # secrets and which canaries go in
    secrets = np.where(_rng(seed, "secrets").random(m) < 0.5, 1, -1).astype(np.int8)
    if design == "paired":
        pairs = _rng(seed, "pairs").permutation(count).reshape(m, 2)
        inserted = np.sort(np.where(secrets == 1, pairs[:, 0], pairs[:, 1]))
    else:
        pairs = None
        inserted = np.flatnonzero(secrets == 1)
        if inserted.size == 0:  # probability 2**-m
            raise InvalidInput(
                "canaries_X",
                "enough canaries that the secrets insert at least one",
                count,
                hint="Every coin came up -1: use more canaries or design='paired'.",
            )
    cX = canaries_X.to(device=X.device, dtype=X.dtype)
    cy = canaries_y.to(device=y.device, dtype=y.dtype)
    n = int(X.shape[0])
    pinned = tuple(sorted(method.pinned_options())) if method.X_ is not None else ()

    # one fit, one unlearning run, one certificate, one release (and the control's release)
    game = method.replica()
    released, original, certificate = _run(game, X, y, cX, cy, inserted, n, init, seed, epsilon, delta, mechanism)
    certified = certificate.certified and certificate.epsilon is not None
    certified_epsilon = float(certificate.epsilon) if certified else None

    def bound_of(release: Tensor) -> OneRunBound:
        scores = _scores(game, release, cX, cy, pairs)
        return one_run_bound(
            scores, secrets, **rule, delta=delta, confidence=confidence, chained=True, tie_seed=_tie_seed(seed)
        )

    bound, control = bound_of(released), bound_of(original)
    covers = _covers(certificate, design, type(game).capabilities.data_dependent_certificate) if certified else None
    eps_lb = bound.epsilon_lower
    return OneRunResult(
        design=design,
        m=m,
        canaries=count,
        inserted=int(inserted.size),
        r=bound.r,
        v=bound.v,
        k_plus=bound.k_plus,
        k_minus=bound.k_minus,
        rule=bound.rule,
        epsilon_lower=eps_lb,
        epsilon_lower_pair=2.0 * eps_lb,
        delta_pair=min(1.0, (1.0 + math.exp(eps_lb)) * delta),
        ceiling=bound.ceiling,
        confidence=confidence,
        delta=delta,
        sigma=float(certificate.sigma),
        certificate_kind=certificate.kind,
        certified_epsilon=certified_epsilon,
        violation=(eps_lb > certified_epsilon) if certified_epsilon is not None else None,
        **resolution(bound.ceiling, certified_epsilon or 0.0, lambda t: pairs_to_test(t, delta, confidence)),
        covers_all_assignments=covers,
        pinned_options=pinned,
        seed=seed,
        note=_note(certificate, design, covers, pinned, method.X_ is not None, int(inserted.size), bound),
        bound=bound,
        control=OneRunControl(
            v=control.v,
            r=control.r,
            epsilon_lower=control.epsilon_lower,
            has_power=exceeds(control.epsilon_lower, certified_epsilon or 0.0),
        ),
    )


def _scores(game: Unlearner, release: Tensor, cX: Tensor, cy: Tensor, pairs: np.ndarray | None) -> np.ndarray:
    """The guesser's scores: logit-scaled confidence on the canaries' own labels, per pair the
    first's minus the second's."""
    with torch.no_grad():
        logits = batched_logits(game.objective, release.unsqueeze(0), cX)[0]
    phi = logit_confidence(
        logits.detach().to("cpu", torch.float64).numpy(), cy.to("cpu").numpy(), one_logit=game.objective.n_outputs == 1
    )
    return phi[pairs[:, 0]] - phi[pairs[:, 1]] if pairs is not None else phi


def _run(
    game: Unlearner,
    X: Tensor,
    y: Tensor,
    cX: Tensor,
    cy: Tensor,
    inserted: np.ndarray,
    n: int,
    init: Callable[[torch.Generator], Tensor],
    seed: int,
    epsilon: float,
    delta: float,
    mechanism: str,
) -> tuple[Tensor, Tensor, Any]:
    """Fit on D ∪ C₊, unlearn C₊, certify C₊, release with the certificate's σ; and the
    control: the original model released with the same σ and the same noise draw (role
    ``noise``), which is what a deletion that did nothing would release in this game."""
    idx = torch.as_tensor(inserted, dtype=torch.long, device=cX.device)
    X_train, y_train = torch.cat([X, cX[idx]]), torch.cat([y, cy[idx]])
    forget = torch.arange(n, n + int(inserted.size), device=X.device)
    if type(game).capabilities.deletable_before_training:
        game.declare_deletable(forget)
    original = game.fit(X_train, y_train, init(_torch_generator(seed, "init"))).clone()
    theta = game.unlearn(forget)
    certificate = game.certify(forget, epsilon, delta, mechanism)
    sigma = _finite_sigma(certificate)
    return (
        Unlearner.release(theta, sigma, _torch_generator(seed, "noise")),
        Unlearner.release(original, sigma, _torch_generator(seed, "noise")),
        certificate,
    )


def _finite_sigma(certificate: Any) -> float:
    sigma = float(certificate.sigma)
    if not math.isfinite(sigma):
        raise InvalidInput(
            "epsilon",
            "a guarantee the method can meet with finite noise for deleting the inserted canaries",
            certificate.epsilon,
            hint="The certificate for the canary group needs infinite noise: " + "; ".join(certificate.warnings[:2]),
        )
    return sigma


def _covers(certificate: Any, design: str, data_dependent: bool) -> bool:
    """Whether the certificate implies H₀ for every secret (the checkable part of (a))."""
    if certificate.kind == "exact":
        return True
    return design == "paired" and not data_dependent and not certificate.conditional


def _note(
    certificate: Any,
    design: str,
    covers: bool | None,
    pinned: tuple[str, ...],
    fitted: bool,
    inserted: int,
    bound: OneRunBound,
) -> str:
    fixed = "in advance" if bound.rule == "pre-registered" else f"by a Bonferroni grid of {len(bound.grid)}"
    parts = [
        f"One-run deletion game ({design} design, {bound.m} tests, {inserted} canaries inserted then deleted, "
        f"{bound.r} guesses fixed {fixed}). "
        "Proven: if every release of this game is (eps, delta)-indistinguishable from one common reference, "
        f"epsilon_lower exceeds eps with probability at most {1 - bound.confidence:.3g} "
        "(Steinke et al. 2023 applied to pairs of secrets, which are (2 eps, (1 + e^eps) delta)-indistinguishable "
        "by the triangle inequality).",
    ]
    if covers is None:
        why = (
            "The method issues no certificate"
            if certificate.kind == "none"
            else "The certificate was withdrawn (a condition of its theorem failed)"
        )
        parts.append(f"{why}: the number is a measurement, not a test of a claim.")
    else:
        parts.append(
            f"The certificate is for deleting the group of {inserted} canaries at once, so the bound "
            "concerns that group's epsilon, not a per-record epsilon."
        )
        if covers:
            parts.append(
                "It implies the hypothesis for every secret when its constants computed from the "
                "training rows do not change when one canary is swapped for its partner"
                if certificate.kind != "exact"
                else "Exact unlearning implies the hypothesis outright"
            )
            parts[-1] += "."
        else:
            parts.append(
                "Conditional: the released sigma was calibrated for this run's forget set only; "
                + (
                    "its size varies with the secrets (independent design), "
                    if design == "independent"
                    else "the certificate depends on the data or on estimated constants, "
                )
                + "so other secrets are covered only if their certificates need no more noise."
            )
    if not fitted:
        parts.append(
            "The method was not fitted before the game, so options it chooses from data were chosen "
            "on data containing the canaries: the reference A(D) is assumed not to depend on them."
        )
    elif pinned:
        parts.append("Options chosen from data before the game and reused: " + ", ".join(pinned) + ".")
    return " ".join(parts)


def pipeline_section(config: Any, method: Unlearner, inputs: Any, init: Any, seed: int) -> dict:
    """The one-run audit on ``one_run_canaries`` pairs of held-out records, mislabelled so that a
    model that keeps them memorises them (this module); a certificate that needs infinite
    noise for the canaries is recorded as skipped."""
    unseen = inputs.unseen
    pairs, available = int(config.one_run_canaries), int(unseen[0].shape[0])
    if 2 * pairs > available:
        raise InvalidInput(
            "one_run_canaries",
            f"at most {available // 2} (two held-out records per pair; {available} are held out of training)",
            pairs,
        )
    game_seed = child_seed(seed, "one-run")
    canaries_X = unseen[0][: 2 * pairs]
    n_outputs = max(2, int(inputs.objective.n_outputs))
    canaries_y = mislabel(unseen[1][: 2 * pairs], n_outputs, game_seed).to(unseen[1].device)
    try:
        result = one_run_audit(
            method,
            inputs.X,
            inputs.y,
            canaries_X,
            canaries_y,
            init,
            epsilon=config.epsilon,
            delta=config.delta,
            mechanism=config.mechanism,
            confidence=config.confidence,
            seed=game_seed,
        )
    except InvalidInput as exc:
        if exc.field in ("one_run_canaries", "canaries_X", "canaries_y"):
            raise
        return {"skipped": f"{exc.field}: {exc.allowed} (got {exc.got!r})"}
    return result.to_dict()
