"""The audit says when the unlearned model is no use, whatever its certificate: a noiseless
departure from the retrained model, a release at chance, and what the noise costs."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from audit.findings import CODES, DEPARTURE_POINTS, VERDICTS, utility_findings, verdict_of


def _utility(unlearned=0.90, released=0.89, retrained=0.90, chance=0.5, b=0, c=0, n=1000, p=1.0):
    split = lambda acc, noisy: NS(test=NS(accuracy=acc, noisy_accuracy_mean=noisy))  # noqa: E731
    return NS(
        unlearned=split(unlearned, released),
        retrained=split(retrained, retrained),
        test_chance_accuracy=chance,
        unlearned_vs_retrained=NS(
            n=n,
            unlearned_wrong_retrained_right=b,
            retrained_wrong_unlearned_right=c,
            accuracy_gap=(b - c) / n,
            p_value=p,
        ),
    )


def _codes(u, confidence=0.95):
    return [f["code"] for f in utility_findings(u, confidence)]


def test_a_useful_unlearned_model_raises_nothing():
    assert _codes(_utility()) == []


def test_a_diverged_unlearned_model_is_a_departure():
    u = _utility(unlearned=0.10, released=0.10, retrained=0.70, chance=0.11, b=620, c=20, p=1e-150)
    found = utility_findings(u, 0.95)
    assert [f["code"] for f in found] == ["utility-departure", "unlearned-at-chance"]
    assert "60.0 points below" in found[0]["message"]
    assert "the unlearning destroyed the model" in found[1]["message"]
    assert verdict_of(found) == "unusable"


@pytest.mark.parametrize(
    "gap_records, p, flagged",
    [
        (40, 0.01, False),  # 4 points: within what approximate unlearning may move
        (60, 0.20, False),  # 6 points but not significant on the disagreeing records
        (60, 0.001, True),
    ],
)
def test_departure_needs_both_size_and_significance(gap_records, p, flagged):
    u = _utility(unlearned=0.90 - gap_records / 1000, released=0.85, b=gap_records + 10, c=10, p=p)
    assert ("utility-departure" in _codes(u)) is flagged


def test_a_release_the_noise_destroys_is_at_chance_a_warning_not_a_failure():
    # the method did its job (noiseless = retrained); the requested epsilon makes the release useless
    u = _utility(unlearned=0.90, released=0.505, chance=0.5)
    found = utility_findings(u, 0.95)
    assert [f["code"] for f in found] == ["released-at-chance", "utility-loss"]
    assert "the noise that certifies it destroys it" in found[0]["message"]
    assert [f["severity"] for f in found] == ["warning", "warning"] and verdict_of(found) == "consistent"
    nothing_learned = _utility(unlearned=0.5, released=0.5, retrained=0.505, chance=0.5)
    found = utility_findings(nothing_learned)
    assert [f["code"] for f in found] == ["released-at-chance"] and "no model in this audit learned" in found[0][
        "message"
    ]


@pytest.mark.parametrize(
    "unlearned, retrained, flagged",
    [
        (0.505, 0.60, True),  # the retrained model learned, the unlearned one is at chance: U destroyed it
        (0.515, 0.60, False),  # above chance by more than the margin
        (0.505, 0.508, False),  # nothing learned at all: a setup problem, not the unlearning's failure
    ],
)
def test_an_unlearned_model_at_chance_fails_only_when_retraining_learned(unlearned, retrained, flagged):
    u = _utility(unlearned=unlearned, released=None, retrained=retrained, chance=0.5)
    assert ("unlearned-at-chance" in _codes(u)) is flagged


def test_no_release_no_release_findings():
    assert _codes(_utility(released=None)) == []


def test_unusable_ranks_between_consistent_and_not_certified():
    assert VERDICTS == ("consistent", "unusable", "not-certified", "violated")
    assert CODES["utility-departure"].verdict == CODES["unlearned-at-chance"].verdict == "unusable"
    assert CODES["released-at-chance"].verdict == "consistent"
    assert verdict_of([{"code": "utility-departure"}, {"code": "no-theorem"}]) == "not-certified"
    assert DEPARTURE_POINTS == 0.05


def test_mcnemar_p_value_equals_scipy_binomtest():
    """The report's one-sided exact test (computed from the binomial tail without importing
    scipy.stats) equals scipy.stats.binomtest(b, b + c, 1/2, alternative="greater")."""
    import torch
    from scipy.stats import binomtest
    from torch import nn

    from audit.measurements import unlearned_vs_retrained
    from unlearners.objective import Objective

    objective = Objective(nn.Linear(1, 1).double())
    X = torch.linspace(-1, 1, 200, dtype=torch.float64).reshape(-1, 1)
    y = (X[:, 0] > 0).long()
    retrained = torch.tensor([10.0, 0.0], dtype=torch.float64)  # right on every record
    for shift in (0.0, 0.05, 0.2, 0.6):  # the unlearned model is wrong on more records as it shifts
        unlearned = torch.tensor([10.0, -10.0 * shift], dtype=torch.float64)
        out = unlearned_vs_retrained(objective, unlearned, retrained, (X, y))
        b, c = out.unlearned_wrong_retrained_right, out.retrained_wrong_unlearned_right
        expected = binomtest(b, b + c, 0.5, alternative="greater").pvalue if b + c else 1.0
        assert out.p_value == pytest.approx(expected, rel=1e-12, abs=1e-300)
        assert (b > 0) == (shift > 0)


@pytest.mark.parametrize(
    "original, n, flagged",
    [
        (0.175, 300, False),  # the CNN: 0.175 against a 0.11 majority rate on 300 records is above chance
        (0.115, 300, True),  # within the margin
        (0.13, 100, True),  # 2 points above, but 13 of 100 right is likely at chance (p ~ 0.3)
        (0.13, 10_000, False),  # the same rate on 10,000 records is not chance
        (0.90, 1000, False),
    ],
)
def test_an_original_model_at_chance_is_flagged_by_margin_and_exact_test(original, n, flagged):
    from audit.findings import original_not_learned

    u = _utility(n=n, chance=0.11)
    u.original = NS(test=NS(accuracy=original))
    found = original_not_learned(u, 0.95)
    assert bool(found) is flagged
    if found:
        assert found[0]["code"] == "original-not-learned" and CODES["original-not-learned"].vacuous
        assert verdict_of(found) == "consistent" and f"{original:.4f}" in found[0]["message"]
