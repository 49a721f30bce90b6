"""What an audit concludes: the rules that raise findings and the verdict.

Every finding has a code from :data:`CODES` (the one table, in :mod:`audit.finding_codes`); the
code fixes its severity and what it does to the verdict, so the verdict rule (:func:`verdict_of`)
exists once and the report schema, the HTML page and the CLI read the same table. The rules take
the audit's results as objects with attributes (certificate, realized, utility, comparison), so
this module imports no report model.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from audit.finding_codes import CODES, VERDICTS

UTILITY_LOSS_POINTS = 0.02
#: How far (test-accuracy points) a noiseless unlearned model may fall below the retrained one
#: before the departure is a failure (when it is also significant by the exact test below).
DEPARTURE_POINTS = 0.05
#: A released model within this many points of the majority-class rate is at chance.
CHANCE_MARGIN = 0.01
_TOL = 1e-9


def finding(code: str, message: str) -> dict[str, str]:
    """One finding of a known code (its severity comes from the table)."""
    return {"severity": CODES[code].severity, "code": code, "message": message}


def verdict_of(findings: Iterable[Any]) -> str:
    """``violated`` if a finding refutes the certificate, ``not-certified`` if none was issued,
    else ``consistent`` (findings as dicts or objects with a ``code``)."""
    codes = [f["code"] if isinstance(f, dict) else f.code for f in findings]
    effects = [CODES[c].verdict for c in codes if c in CODES]
    return max(effects, key=VERDICTS.index, default="consistent")


@dataclass(frozen=True)
class Named:
    """One finding code as the headline names it: its severity and its few words."""

    code: str
    severity: str
    short: str


@dataclass(frozen=True)
class Headline:
    """What the first screen says (the page's banner, the CLI's first line), derived once by
    :func:`headline`: the verdict, then every finding code in a few words, errors first."""

    verdict: str
    named: tuple[Named, ...]

    def count(self, severity: str) -> int:
        return sum(n.severity == severity for n in self.named)

    @property
    def tally(self) -> str:
        """``1 error, 2 warnings`` (empty when nothing is named)."""
        parts = [
            f"{k} {severity}{'s' if k != 1 else ''}" for severity in ("error", "warning") if (k := self.count(severity))
        ]
        return ", ".join(parts)

    @property
    def caution(self) -> bool:
        """A ``consistent`` verdict that a finding qualifies: shown amber, never green."""
        return self.verdict == "consistent" and bool(self.named)

    @property
    def vacuous(self) -> tuple[str, ...]:
        """The codes that make a ``consistent`` verdict a pass that proves little (``--strict``)."""
        if self.verdict != "consistent":
            return ()
        return tuple(n.code for n in self.named if n.code in CODES and CODES[n.code].vacuous)

    def text(self, word: str | None = None) -> str:
        """``CONSISTENT — 1 warning: the attacks had no power: …`` (``word`` replaces the verdict's)."""
        word = word or self.verdict.upper().replace("-", " ")
        if not self.named:
            return word
        return f"{word} — {self.tally}: " + "; ".join(n.short for n in self.named)


def headline(verdict: str | None, findings: Iterable[Any]) -> Headline:
    """The headline of an audit: ``verdict`` (derived from the findings when None) and each finding
    code once, errors before warnings, in the order found (findings as dicts or objects). A code
    this version does not know is named by its code."""
    rows = [(f["code"], f["severity"]) if isinstance(f, dict) else (f.code, f.severity) for f in findings]
    if verdict is None:
        verdict = verdict_of({"code": code} for code, _ in rows)
    named: dict[str, Named] = {}
    for code, severity in rows:
        known = CODES.get(code)
        named.setdefault(code, Named(code, known.severity if known else severity, known.short if known else code))
    order = sorted(named.values(), key=lambda n: n.severity != "error")
    return Headline(verdict, tuple(order))


def bound_violated(distance: float, sensitivity: float, where: str = "") -> dict[str, str]:
    return finding(
        "bound-violated",
        f"{where}||theta_U - theta_R|| = {distance:.6g} exceeds the certified sensitivity {sensitivity:.6g}",
    )


def certificate_findings(
    certificate: Any,
    realized: Any,
    utility: Any,
    comparison: Any = None,
    trial_mode: str = "noise",
    confidence: float | None = None,
    requested_epsilon: float | None = None,
) -> list[dict[str, str]]:
    """Errors and warnings about the certificate. Nothing can be *violated* when nothing was
    certified: a method without a theorem gives ``no-theorem``, a failed condition
    ``certificate-not-issued``, and the measurements stand on their own. A valid certificate
    whose ε is above ``requested_epsilon`` (DP-SGD's group privacy for m records: ε = 1 asked,
    11.2 certified for 1 % of Adult) does not certify the request: ``epsilon-above-request``."""
    kind = certificate.kind
    useful = utility_findings(utility, confidence)
    if kind == "none":
        return [
            finding(
                "no-theorem",
                f"no certificate: {certificate.method} has no theorem; " + certificate.theorem.removeprefix("none: "),
            )
        ] + useful
    if not certificate.valid:
        return [
            finding("certificate-not-issued", "No certificate is issued: " + "; ".join(certificate.warnings))
        ] + useful
    findings = []
    if (
        requested_epsilon is not None
        and certificate.epsilon is not None
        and certificate.epsilon > requested_epsilon * (1 + _TOL)
    ):
        findings.append(
            finding(
                "epsilon-above-request",
                f"the certificate states epsilon {certificate.epsilon:.4g}, above the requested {requested_epsilon:.4g} "
                f"(at delta {certificate.delta:.3g}): the deletion is certified, but not at the epsilon asked for",
            )
        )
    if kind == "training-noise" and (comparison is None or trial_mode == "noise"):
        # The guarantee rests on noise inside training (DP-SGD, Guo et al.'s loss perturbation),
        # which output-noise trials do not redraw: only retrain-mode trials test it.
        findings.append(
            finding(
                "not-comparable",
                "the certificate adds no output noise (its noise is inside "
                "training), so the realized epsilon and noise-draw attacks do not test it; "
                "the measurements are reported for information",
            )
        )
        return findings + useful
    if comparison is not None:
        findings += _comparison_findings(comparison, trial_mode, confidence)
    if realized.bound_violated:
        findings.append(bound_violated(realized.distance_unlearned_retrained, certificate.sensitivity))
    if realized.exceeds_certified:
        findings.append(
            finding(
                "realized-exceeds-certified",
                f"realized epsilon {realized.epsilon:.6g} exceeds the certified epsilon {certificate.epsilon:.6g}",
            )
        )
    if realized.no_op_epsilon is not None and realized.no_op_epsilon <= certificate.epsilon * (1 + _TOL):
        findings.append(
            finding(
                "no-op-passes",
                f"at this sigma ({certificate.sigma:.4g}), not unlearning at all would also satisfy epsilon = "
                f"{certificate.epsilon:.4g}: releasing the original model, {realized.no_op_distance:.4g} from the "
                f"retrained one, spends epsilon {realized.no_op_epsilon:.4g} (the same Gaussian mechanism, delta "
                f"{certificate.delta:.3g}). The noise, not the unlearning, provides the guarantee, and no attack on "
                "this release could refute it",
            )
        )
    if certificate.conditional:
        findings.append(finding("conditional-constants", "The certificate rests on estimated or assumed constants."))
    return findings + useful


def _comparison_findings(comparison: Any, trial_mode: str, confidence: float | None) -> list[dict[str, str]]:
    """What the attacks' comparison with the certificate says: a violation (by the GDP bound or
    the Clopper-Pearson one), a Gaussian reading above it, an auditor inconsistent with the
    realized epsilon."""
    out = []
    level = f"{100 * confidence:.0f}%" if confidence is not None else "the stated"
    if comparison.certificate_violated and comparison.violated_by == "gdp-bound":
        out.append(
            finding(
                "certificate-violated",
                f"CERTIFICATE VIOLATED: the {comparison.best_gdp_bound_attack} attack's GDP bound proves epsilon >= "
                f"{comparison.best_gdp_bound_epsilon_lower:.4g} at {level} confidence (jointly over every attack "
                f"run), above the certified epsilon {comparison.certified_epsilon:.4g}; valid because the release "
                "is the Gaussian mechanism on two fixed models (noise mode). The Clopper-Pearson bound is "
                f"{comparison.best_empirical_epsilon:.4g}",
            )
        )
    elif comparison.certificate_violated:
        out.append(
            finding(
                "certificate-violated",
                f"CERTIFICATE VIOLATED: the {comparison.best_attack} attack proves epsilon >= "
                f"{comparison.best_empirical_epsilon:.4g} at {level} confidence (jointly over every attack run), "
                f"above the certified epsilon {comparison.certified_epsilon:.4g}",
            )
        )
    elif comparison.gaussian_above_certified:
        out.append(
            finding(
                "gaussian-above-certificate",
                f"if the {comparison.best_gaussian_attack} attack's trade-off is Gaussian (its goodness-of-fit test "
                f"accepted it), its scores prove epsilon >= {comparison.best_gaussian_epsilon_lower:.4g} at {level} "
                f"confidence, above the certified epsilon {comparison.certified_epsilon:.4g}; the Clopper-Pearson "
                f"bound, which assumes nothing, is {comparison.best_empirical_epsilon:.4g}: look at this deletion "
                "closely",
            )
        )
    if comparison.realized_below_empirical and trial_mode == "noise" and not comparison.certificate_violated:
        out.append(
            finding(
                "empirical-exceeds-realized",
                f"the {comparison.best_attack} attack's lower bound {comparison.best_empirical_epsilon:.4g} "
                f"exceeds the realized epsilon {comparison.realized_epsilon:.4g}: the auditor is inconsistent",
            )
        )
    return out


def utility_findings(utility: Any, confidence: float | None = None) -> list[dict[str, str]]:
    """Whether the unlearned model is any use: its noiseless accuracy against the retrained
    model's (``utility-departure``), the noiseless unlearned model against chance
    (``unlearned-at-chance``), the released model against chance (``released-at-chance``),
    and what the noise costs (``utility-loss``)."""
    out = []
    test, versus = utility.unlearned.test, utility.unlearned_vs_retrained
    level = 0.95 if confidence is None else confidence
    if versus.accuracy_gap > DEPARTURE_POINTS and versus.p_value < 1 - level:
        out.append(
            finding(
                "utility-departure",
                f"the noiseless unlearned model's test accuracy {test.accuracy:.4f} is {100 * versus.accuracy_gap:.1f} "
                f"points below the retrained model's {utility.retrained.test.accuracy:.4f} (on the "
                f"{versus.unlearned_wrong_retrained_right + versus.retrained_wrong_unlearned_right} test records where "
                f"they disagree, one-sided exact binomial p = {versus.p_value:.2g}): unlearning approximates retraining "
                f"by a small step, and more than {100 * DEPARTURE_POINTS:.0f} points means it failed (a diverged or "
                "destroyed model)",
            )
        )
    chance = utility.test_chance_accuracy
    learned = utility.retrained.test.accuracy > chance + CHANCE_MARGIN
    if learned and test.accuracy <= chance + CHANCE_MARGIN:
        out.append(
            finding(
                "unlearned-at-chance",
                f"the noiseless unlearned model's test accuracy {test.accuracy:.4f} is no better than always predicting "
                f"the most frequent class ({chance:.4f}), while the retrained model reaches "
                f"{utility.retrained.test.accuracy:.4f}: the unlearning destroyed the model",
            )
        )
    released = test.noisy_accuracy_mean
    if released is not None and released <= chance + CHANCE_MARGIN and test.accuracy > chance + CHANCE_MARGIN:
        out.append(
            finding(
                "released-at-chance",
                f"the released model's test accuracy {released:.4f} is no better than always predicting the most "
                f"frequent class ({chance:.4f}): the noise that certifies it destroys it (a larger epsilon, more "
                "training records or a larger knob buys utility)",
            )
        )
    elif not learned and test.accuracy <= chance + CHANCE_MARGIN:
        out.append(
            finding(
                "released-at-chance",
                f"no model in this audit learned: the unlearned ({test.accuracy:.4f}) and the retrained "
                f"({utility.retrained.test.accuracy:.4f}) models are at the most frequent class's rate "
                f"({chance:.4f}); raise the steps or the step size",
            )
        )
    if released is not None and test.accuracy - released > UTILITY_LOSS_POINTS:
        out.append(
            finding(
                "utility-loss",
                f"noise costs {100 * (test.accuracy - released):.2f} test-accuracy points "
                "(see the tradeoff curve for larger knob values)",
            )
        )
    return out


def ledger_findings(ledger: dict) -> list[dict[str, str]]:
    out = []
    for release in ledger["releases"]:
        sensitivity = release["sensitivity"]
        if (
            release["distance"] is not None
            and math.isfinite(sensitivity)
            and release["distance"] > sensitivity * (1 + _TOL)
        ):
            out.append(bound_violated(release["distance"], sensitivity, f"release {release['index']}: "))
    if ledger["retrain_due"]:
        out.append(
            finding(
                "budget-spent",
                "; ".join(w for w in ledger["warnings"] if "budget" in w)
                or "the cumulative epsilon exceeds the budget: retrain from scratch",
            )
        )
    return out


def measurement_findings(attacks: Any, confidence: float, no_op_passes: bool = False) -> list[dict[str, str]]:
    """What the attacks' positive control and, for a method without a certificate, the attacks
    themselves say: ``no-power`` when no attack tells A(D) from A(D \\ Z), ``leak-measured``
    when an attack proves the uncertified unlearned model distinguishable from retraining,
    ``underpowered`` when the attacks' ceiling cannot exceed the certified ε.

    With ``no_op_passes`` (the no-op's own realized ε is within the certificate) ``no-power`` is
    not raised: a control that sees nothing is then what the noise guarantees, not a weak audit,
    and "more trials" would not help; ``no-op-passes`` says the true thing."""
    out = []
    control, comparison, level = attacks.positive_control, attacks.comparison, f"{100 * confidence:.0f}%"
    out += underpowered_attacks(attacks)
    if not control.has_power and not no_op_passes:
        aurocs = ", ".join(f"{name} {value:.3f}" for name, value in control.auroc.items())
        out.append(
            finding(
                "no-power",
                f"no attack proves anything about the original model against the retrained one (every bound "
                f"is 0 at {level}; AUROC {aurocs}): with these trials and this model the audit cannot see a deletion "
                "that did nothing, so the unlearned model's empirical epsilon means nothing (more trials, a "
                "forget set of outlying records, or a model that memorises)",
            )
        )
    if comparison.certified_epsilon is None and comparison.best_empirical_epsilon > 0:
        out.append(
            finding(
                "leak-measured",
                f"the {comparison.best_attack} attack proves epsilon >= "
                f"{comparison.best_empirical_epsilon:.4g} at {level} confidence (jointly over every attack): the unlearned "
                f"model is distinguishable from retraining (the original model: epsilon >= {control.best_epsilon_lower:.4g})",
            )
        )
    return out + direction_findings(attacks)


def direction_findings(attacks: Any) -> list[dict[str, str]]:
    """``under-unlearning`` / ``over-unlearning``: which way the attacks whose bound (the
    Clopper-Pearson one, or the GDP bound where it is valid) exceeds what the certificate allows (0
    without one) point, read from their AUROC intervals. The bound is
    two-sided (a leak either way); these words are not. An attack whose score cannot tell which
    way (orientation "worlds"), or whose interval contains 0.5, names neither."""
    allowed = attacks.comparison.certified_epsilon or 0.0
    by_direction: dict[str, list[str]] = {}
    for name, r in attacks.attacks.items():
        est = getattr(r, "estimates", None)  # reports written before the estimates carry none
        if est is None or est.direction not in ("under-unlearning", "over-unlearning"):
            continue
        gdp = valid_gdp_bound(r.bound)  # a valid bound in noise mode only; older reports have none
        proven = max(r.bound.epsilon_lower, gdp.epsilon_lower if gdp is not None else 0.0)
        if proven > allowed * (1 + _TOL):
            by_direction.setdefault(est.direction, []).append(
                f"{name} (AUROC {est.auroc.point:.3f}, interval [{est.auroc.lower:.3f}, {est.auroc.upper:.3f}])"
            )
    words = {
        "under-unlearning": "closer to the original model than retraining is",
        "over-unlearning": "farther from the original model than retraining is",
    }
    # the direction is the finding's code (attacks.estimates.DIRECTIONS)
    return [
        finding(d, f"{', '.join(names)}: the unlearned model is {words[d]}; the epsilon bound counts a leak either way")
        for d, names in by_direction.items()
    ]


def underpowered_attacks(attacks: Any) -> list[dict[str, str]]:
    """``underpowered`` when no valid bound's ceiling at this trial count can exceed the certified ε
    (0 when nothing is certified; :func:`audit.sizing.attack_resolution` decides, in noise mode with
    the GDP bound too): one finding naming the attacks, the bounds and the count that could."""
    weak = {name: r.bound for name, r in attacks.attacks.items() if r.bound.can_test is False}
    if not weak:
        return []
    first = next(iter(weak.values()))
    size, gdp = first.size_to_test, [g.ceiling for b in weak.values() if (g := valid_gdp_bound(b)) is not None]
    by = f", with {BOUND_WORDS[first.test_bound or 'clopper-pearson']}" if gdp else ""
    could = (
        f"{size:,} trials per world could (--trials {size}){by}"
        if size is not None
        else "no trial count up to the configuration's limit could"
    )
    cp = f"{max(b.ceiling for b in weak.values()):.4g}"
    ceilings = f"ceilings: Clopper-Pearson {cp}, GDP bound {max(gdp):.4g}" if gdp else f"ceiling {cp}"
    return [
        finding(
            "underpowered",
            f"{', '.join(weak)}: {cannot_test(attacks.comparison.certified_epsilon)} with "
            f"{attacks.trials.n_per_world} trials per world{' by either bound' if gdp else ''} ({ceilings}: "
            f"no bound they give can exceed it); {could}",
        )
    ]


#: ``EpsilonBound.test_bound`` in words (:data:`audit.sizing.CLOPPER_PEARSON`, :data:`audit.sizing.GDP_BOUND`).
BOUND_WORDS = {"clopper-pearson": "the Clopper-Pearson bound", "gdp-bound": "the GDP bound"}


def valid_gdp_bound(bound: Any) -> Any:
    """An attack's GDP bound where it is valid (noise mode), else None (an estimate, or an older report)."""
    gdp = getattr(bound, "gdp_bound", None)
    return gdp if gdp is not None and gdp.kind == "bound" else None


def tested_by_gdp(ceiling: float, gdp_ceiling: float, target: float | str | None) -> str:
    """The words for an attack that only its valid GDP bound lets test ``target`` (``can_test`` true,
    ``test_bound`` "gdp-bound": the Clopper-Pearson ``ceiling`` is at or below it), in the report and the CLI."""
    return (
        f"tested by the GDP bound (ceiling {gdp_ceiling:.4g}); the Clopper-Pearson bound alone "
        f"{cannot_test(target)} at this size (ceiling {ceiling:.4g})"
    )


def cannot_test(target: float | str | None) -> str:
    """The words for a measurement whose ceiling is at or below ``target`` (the certified ε, as a
    number or its JSON form; None or 0 when nothing is certified)."""
    value = 0.0 if target is None else float(target)
    return "cannot measure any epsilon above 0" if value == 0 else f"cannot test epsilon = {value:.4g}"


def one_run_findings(one_run: dict) -> list[dict[str, str]]:
    """``underpowered`` when the one-run game's ceiling cannot exceed the certified ε (its bound is
    then below its own resolution), else ``one-run-violation`` when its bound exceeds it, else
    ``one-run-no-power`` when its positive control (the original model in the same game) does not
    exceed it either: the game could not have caught a deletion that did nothing."""
    if one_run.get("can_test") is False:
        size = one_run["size_to_test"]
        could = (
            f"{size:,} canary pairs could (--one-run-canaries {size}, {2 * size:,} held-out records)"
            if size is not None
            else "no number of canary pairs can: the one-run ceiling peaks below it "
            "at this delta (its 2m*delta term grows with m); the multi-run attacks can"
        )
        return [
            finding(
                "underpowered",
                f"one-run audit: {cannot_test(one_run['certified_epsilon'])} with "
                f"{one_run['m']} canary pairs (ceiling {one_run['ceiling']:.4g}: its "
                f"epsilon >= {one_run['epsilon_lower']:.4g} cannot exceed it whatever the "
                f"method does); {could}",
            )
        ]
    if not one_run.get("violation"):
        return [one_run_no_power(one_run)] if one_run_blind(one_run) else []
    return [
        finding(
            "one-run-violation",
            f"CERTIFICATE VIOLATED (one run): deleting {one_run['inserted']} canaries, "
            f"{one_run['v']} of {one_run['r']} guesses were right, which proves epsilon "
            f">= {one_run['epsilon_lower']:.4g} at {100 * one_run['confidence']:.0f}% "
            f"confidence, above the certified {one_run['certified_epsilon']:.4g}",
        )
    ]


def one_run_blind(one_run: dict) -> bool:
    """Whether a one-run result is ``one-run-no-power``: its ceiling could test the certificate and
    it proves no violation, but its positive control proves nothing beyond the certified ε either
    (a result recorded before the control existed has none and is not judged)."""
    control = one_run.get("control")
    return (
        control is not None
        and not control["has_power"]
        and one_run.get("can_test") is not False
        and not one_run.get("violation")
    )


def one_run_no_power(one_run: dict) -> dict[str, str]:
    """The one-run game's positive control proves nothing beyond the certified ε (0 without one)."""
    control, certified = one_run["control"], one_run["certified_epsilon"]
    above = f", not above the certified {certified:.4g}" if certified else ""
    return finding(
        "one-run-no-power",
        f"one-run audit: {cannot_catch_no_op(one_run['m'])}: the game's original "
        f"model (trained with the {one_run['inserted']} canaries and not unlearned), released at the same "
        f"sigma ({one_run['sigma']:.4g}) with the same noise draw, got {control['v']} of {control['r']} "
        f"guesses right, epsilon >= {control['epsilon_lower']:.4g}{above}; so the unlearned model's "
        f"epsilon >= {one_run['epsilon_lower']:.4g} says nothing about the unlearning (the one-run audit "
        "sees only a model that memorises single records; the multi-run attacks may see more)",
    )


def cannot_catch_no_op(pairs: int) -> str:
    """The words for a one-run game whose positive control failed (page, CLI and finding)."""
    return f"could not have caught a deletion that did nothing with {pairs:,} canary pairs on this model"


def original_outlier(production: Any) -> dict[str, str]:
    """The production model's loss on D is beyond ``z_limit`` standard deviations of the trials'."""
    return finding(
        "original-outlier",
        f"the production model's mean loss on the training set, {production.loss:.4g}, "
        f"is {production.z:+.3g} standard deviations (of the log loss) from the trials' original models "
        f"(mean {production.trials_mean:.4g}, range [{production.trials_min:.4g}, "
        f"{production.trials_max:.4g}], "
        f"{production.percentile:.0%} of them lower; limit |z| <= {production.z_limit:g}): the trials, "
        "fresh trainings by the same train function, do not model this model (trained otherwise, longer, "
        "or on other data?), so what the attacks measure says little about its deletion",
    )


def not_reproducible(check: Any) -> dict[str, str]:
    """The caller's ``train`` gave two models from one seed (:class:`schema.Reproducibility`)."""
    return finding(
        "not-reproducible",
        f"two trainings by your train function on the same {check.records} records "
        f"with one seed differ (largest parameter difference {check.max_abs_difference:.3g}): a trial is "
        "then not a pure function of its seed, the trials mix randomness the audit does not control, and "
        "no result can be reproduced from the recorded seeds; usual causes: a DataLoader without "
        "generator= or with workers not seeded from it, a generator seeded from the clock or os.urandom, "
        "a random source outside torch, numpy and random, or nondeterministic CUDA kernels "
        "(torch.use_deterministic_algorithms(True))",
    )


def degenerate_trials(reason: str) -> dict[str, str]:
    return finding(
        "degenerate-trials",
        f"the attacks were refused: {reason}; choose trial_mode auto or retrain "
        "(the training randomness), or a method that adds output noise",
    )


def attacks_skipped() -> dict[str, str]:
    return finding(
        "attacks-skipped",
        "no finite noise certifies this run, so there is no released model to attack; the attacks were skipped",
    )


def original_not_learned(utility: Any, confidence: float) -> list[dict[str, str]]:
    """``original-not-learned`` when the original model's test accuracy a on n records is not above
    the majority-class rate c: a <= c + CHANCE_MARGIN, or P[Bin(n, c) >= a·n] >= 1 − ``confidence``
    (the exact one-sided binomial tail: a model that learned nothing scores Bin(n, c)). The audit
    knows this right after the utility stage, before the attacks are spent on the model."""
    from scipy.special import bdtrc  # the exact tail, without scipy.stats' 0.6 s import

    test, chance = utility.original.test, utility.test_chance_accuracy
    n = utility.unlearned_vs_retrained.n
    right = round(test.accuracy * n)
    p = float(bdtrc(right - 1, n, chance)) if right > 0 else 1.0
    if test.accuracy > chance + CHANCE_MARGIN and p < 1 - confidence:
        return []
    return [
        finding(
            "original-not-learned",
            f"the original model's test accuracy {test.accuracy:.4f} on {n} records is not above the most "
            f"frequent class's rate {chance:.4f} (margin {CHANCE_MARGIN:g}; one-sided binomial p = {p:.2g}): "
            "the model learned nothing to unlearn, and the attacks measure a model at chance; raise the "
            "steps or the step size (the built-in cnn: see its recipe)",
        )
    ]


def diagnostic_findings(tradeoff: Any, recovery: Any, budget: float) -> list[dict[str, str]]:
    """``diagnostic-cut`` for a tradeoff curve that left grid values out, and for a checkpoint
    recovery that stopped before the K steps it was asked for (report objects, or None)."""
    cut = []
    if tradeoff is not None and getattr(tradeoff, "left_out", None):
        cut.append(
            f"the tradeoff curve of {tradeoff.knob.option} left out {len(tradeoff.left_out)} of "
            f"{len(tradeoff.rows) + len(tradeoff.left_out)} values ("
            + ", ".join(f"{v:g}" for v in tradeoff.left_out)
            + ")"
        )
    if recovery is not None and recovery.get("applicable") and recovery.get("steps", 0) < recovery.get("rewind", 0):
        cut.append(
            f"the checkpoint recovery recovered {recovery['steps']} of K = {recovery['rewind']} steps "
            f"({recovery['gradients']} gradients over D)"
        )
    if not cut:
        return []
    return [
        finding(
            "diagnostic-cut",
            "; ".join(cut) + f": diagnostic_budget = {budget:g} training(s) each "
            "(raise --diagnostic-budget for the whole diagnostic); no certificate depends on it",
        )
    ]


def whitebox_one_run_findings(section: dict) -> list[dict[str, str]]:
    """``one-run-violation`` when the white-box one-run audit's bound exceeds the certified ε (its
    reference test has no ceiling, so there is no ``underpowered`` case to name); nothing when it was
    skipped or stays below."""
    if "skipped" in section or not section.get("violation"):
        return []
    a = section["analysis"]
    which = (
        f"its largest canary alignment was {a['max_abs_z']:.4g} sigma from the reference A(D)"
        if a["epsilon_reference"] >= a["epsilon_guesses"]
        else f"{a['v']} of {a['r']} guesses were right"
    )
    return [
        finding(
            "one-run-violation",
            f"CERTIFICATE VIOLATED (white-box one run): deleting {section['inserted']} canaries, {which}, "
            f"which proves epsilon >= {section['epsilon_lower']:.4g} at {100 * section['confidence']:.0f}% "
            f"confidence, above the certified {section['certified_epsilon']:.4g}",
        )
    ]
