"""The one table of finding codes: each code's severity, its effect on the verdict, its meaning.

:data:`CODES` is read by the rules that raise findings and by the verdict rule
(:mod:`audit.findings`, which exports these names too), the report schema, the HTML page and the CLI.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]
VERDICTS = ("consistent", "unusable", "not-certified", "violated")
"""From best to worst; the verdict is the worst effect of any finding. ``unusable``: the
certificate may hold, but the unlearned model failed (it departs from the retrained model, or
is itself no better than chance). A release that only the certifying noise brings to chance is a
warning (``released-at-chance``): the method did its job, the requested epsilon is what makes
the release useless, and the verdict stays about the certificate."""


@dataclass(frozen=True)
class FindingCode:
    """A kind of finding: its stable code, its severity, its effect on the verdict, its meaning."""

    code: str
    severity: Severity
    verdict: str
    meaning: str
    short: str
    """A few words for the headline (the page's banner, the CLI's first line): what a reader must
    know before anything else, e.g. "the released model is at chance"."""
    vacuous: bool = False
    """A pass that carries this finding proves little: the measurements could not have refuted
    the certificate, or the release is of no use. ``audit run --strict`` refuses such a pass
    (its own exit code) instead of exiting 0."""


CODES: dict[str, FindingCode] = {
    c.code: c
    for c in (
        FindingCode(
            "certificate-violated",
            "error",
            "violated",
            "an attack proves an epsilon above the certified one",
            short="an attack proves more than the certified epsilon",
        ),
        FindingCode(
            "bound-violated",
            "error",
            "violated",
            "the measured distance exceeds the certified sensitivity",
            short="the measured distance exceeds the certified sensitivity",
        ),
        FindingCode(
            "realized-exceeds-certified",
            "error",
            "violated",
            "the realized epsilon of this deletion exceeds the certified epsilon",
            short="the realized epsilon exceeds the certified epsilon",
        ),
        FindingCode(
            "certificate-not-issued",
            "error",
            "not-certified",
            "a condition of the theorem failed: no certificate is issued",
            short="a condition of the theorem failed: nothing is certified",
        ),
        FindingCode(
            "epsilon-above-request",
            "error",
            "not-certified",
            "the certificate holds, but at an epsilon above the one requested: the request is not certified",
            short="certified only at an epsilon above the one requested",
        ),
        FindingCode(
            "utility-departure",
            "error",
            "unusable",
            "the noiseless unlearned model is significantly and substantially less accurate than the "
            "retrained model: the unlearning failed",
            short="the unlearned model is much worse than retraining",
        ),
        FindingCode(
            "unlearned-at-chance",
            "error",
            "unusable",
            "the noiseless unlearned model is no better than always predicting the most frequent class, "
            "while the retrained model learned: the unlearning destroyed the model",
            short="the unlearning destroyed the model",
        ),
        FindingCode(
            "released-at-chance",
            "warning",
            "consistent",
            "the released model is no better than always predicting the most frequent class (the "
            "certifying noise destroys it, or no model learned): the certificate may hold, the release is "
            "of no use",
            short="the released model is at chance",
            vacuous=True,
        ),
        FindingCode(
            "no-theorem",
            "warning",
            "not-certified",
            "the method has no theorem: there is no certificate, only measurements",
            short="the method has no theorem: nothing is certified",
        ),
        FindingCode(
            "not-comparable",
            "warning",
            "consistent",
            "the guarantee comes from noise inside training, which output-noise measurements do not test",
            short="the measurements do not test this training-noise certificate",
            vacuous=True,
        ),
        FindingCode(
            "empirical-exceeds-realized",
            "warning",
            "consistent",
            "an attack's lower bound exceeds the realized epsilon: the auditor is inconsistent",
            short="the auditor is inconsistent (an attack exceeds the realized epsilon)",
        ),
        FindingCode(
            "conditional-constants",
            "warning",
            "consistent",
            "the certificate rests on estimated or assumed constants",
            short="the certificate rests on estimated or assumed constants",
        ),
        FindingCode(
            "utility-loss",
            "warning",
            "consistent",
            "the noise costs more than 2 test-accuracy points",
            short="the noise costs over 2 accuracy points",
        ),
        FindingCode(
            "attacks-skipped",
            "warning",
            "consistent",
            "the attacks could not be run meaningfully",
            short="the attacks were not run",
            vacuous=True,
        ),
        FindingCode(
            "degenerate-trials",
            "warning",
            "consistent",  # an error never comes with exit 0
            "the trials were refused: every released model of a world is the same, so nothing was measured",
            short="the trials were refused: nothing was measured",
            vacuous=True,
        ),
        FindingCode(
            "no-power",
            "warning",
            "consistent",
            "the positive control failed: the attacks cannot tell the original model from the retrained one, "
            "so their verdict on the unlearned model means nothing",
            short="the attacks had no power: they cannot see a deletion that did nothing",
            vacuous=True,
        ),
        FindingCode(
            "gaussian-above-certificate",
            "warning",
            "consistent",
            "under the Gaussian hypothesis (tested by goodness of fit), an attack's GDP lower bound exceeds the "
            "certified epsilon; the hypothesis-free bound does not",
            short="under a Gaussian hypothesis an attack exceeds the certificate",
        ),
        FindingCode(
            "one-run-violation",
            "error",
            "violated",
            "the one-run audit proves an epsilon above the one certified for deleting its canaries",
            short="the one-run audit proves more than the certified epsilon",
        ),
        FindingCode(
            "leak-measured",
            "warning",
            "not-certified",
            "an attack proves that the uncertified unlearned model is distinguishable from retraining",
            short="an attack tells the unlearned model from retraining",
        ),
        FindingCode(
            "budget-spent",
            "warning",
            "consistent",
            "the cumulative epsilon of the releases passed the budget: a retrain is due",
            short="the privacy budget is spent: a retrain is due",
        ),
        FindingCode(
            "no-op-passes",
            "warning",
            "consistent",
            "releasing the original model (not unlearning at all) at the same noise would also satisfy the "
            "certified epsilon: the noise, not the unlearning, provides the guarantee",
            short="the noise alone hides this deletion: a no-op would pass too",
            vacuous=True,
        ),
        FindingCode(
            "underpowered",
            "warning",
            "consistent",
            "a measurement's ceiling at its size is at or below the certified epsilon: it cannot test the "
            "certificate, so its lower bound says nothing about it",
            short="a measurement is too small to test the certified epsilon",
            vacuous=True,
        ),
        FindingCode(
            "one-run-no-power",
            "warning",
            "consistent",
            "the one-run audit's positive control failed: the game's original model (not unlearned), released "
            "at the same sigma, gives no bound above the certified epsilon, so the game could not have caught a "
            "deletion that did nothing and its bound on the unlearned model means nothing",
            short="the one-run audit could not have caught a deletion that did nothing",
            vacuous=True,
        ),
        FindingCode(
            "original-outlier",
            "warning",
            "consistent",
            "the production model (original=) sits outside the trials' population of original models: the "
            "trials, fresh trainings by the same code, do not model it, so the attacks' verdict on its "
            "deletion means little",
            short="the trials do not model the production model",
            vacuous=True,
        ),
        FindingCode(
            "not-reproducible",
            "warning",
            "consistent",
            "the caller's training gave two different models from one seed: the trials mix randomness sources "
            "the audit does not control, and cannot be reproduced from the recorded seeds",
            short="the training code is not reproducible from its seed",
            vacuous=True,
        ),
        FindingCode(
            "original-not-learned",
            "warning",
            "consistent",
            "the original model's noiseless test accuracy is not above always predicting the most frequent "
            "class (by the chance margin and a one-sided exact binomial test at the run's confidence): there is "
            "nothing learned to unlearn, and the attacks measure a model at chance; raise the steps or the step "
            "size",
            short="the original model did not learn",
            vacuous=True,
        ),
        FindingCode(
            "diagnostic-cut",
            "warning",
            "consistent",
            "a diagnostic (the knob's tradeoff curve, the checkpoint-recovery check) reached its budget "
            "(diagnostic_budget) and was cut short; no certificate depends on it",
            short="a diagnostic was cut short by its budget",
        ),
        FindingCode(
            "under-unlearning",
            "warning",
            "consistent",
            "an attack that proves a leak sees the unlearned model closer to the original model than retraining "
            "is: the deletion left the forgotten records' trace",
            short="under-unlearning: the unlearned model still looks like the original",
        ),
        FindingCode(
            "over-unlearning",
            "warning",
            "consistent",
            "an attack that proves a leak sees the unlearned model farther from the original model than "
            "retraining is (it looks less like it saw the forgotten records than a model that never did): the "
            "deletion is visible by its excess",
            short="over-unlearning: the unlearned model overshoots retraining",
        ),
    )
}
