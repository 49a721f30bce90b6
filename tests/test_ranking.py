"""audit.ranking: the comparison's order by the estimates, on score sets of known separation: the
order follows the separation, a ceiling is named as one (not an order), overlapping neighbours get
the trial count that would separate them, and games that differ are ranked apart."""

from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np

from attacks.estimates import ScorePair
from audit.ranking import estimated_ranking, trials_to_separate
from audit.report.comparison import Leakage
from audit.report.schema import EstimateInterval, Estimates

DELTA = 1e-5


def _row(name: str, mu: float, mode: str = "retrain", *, n: int = 200, power: bool = True, seed: int = 0):
    rng = np.random.default_rng(seed)
    pair = ScorePair(rng.normal(mu, 1.0, n), rng.normal(0.0, 1.0, n), seed=seed, n_bootstrap=20)
    est = Estimates(**pair.estimates(DELTA).to_dict())
    return NS(name=name, leakage=NS(trial_mode=mode, estimates={"mia": est}, positive_control_has_power=power))


def test_known_separations_are_ordered_and_a_ceiling_is_not():
    rows = [_row("far", 12.0, seed=1), _row("none", 0.0, seed=2), _row("strong", 3.0, seed=3)]
    rows += [_row("mid", 1.0, seed=4), _row("farther", 20.0, seed=5)]
    ranking = estimated_ranking(rows)
    assert ranking.order[:3] == ["none", "mid", "strong"]
    assert set(ranking.at_ceiling) == {"far", "farther"} and "strong" not in ranking.at_ceiling
    pair = ranking.not_separable.index(sorted(["far", "farther"], key=ranking.order.index))
    assert ranking.trials_to_separate[pair] is None
    assert "far and farther are all at the trial ceiling" in ranking.sentence.replace(
        "farther and far", "far and farther"
    )
    assert "no trial count orders them by this estimate" in ranking.sentence
    assert ", at the trial ceiling, (mia" in ranking.sentence and "AUROC 1 [1, 1]" in ranking.sentence
    assert ranking.auroc["none"].lower <= 0.5 <= ranking.auroc["none"].upper


def test_trials_to_separate_scales_the_overlap_like_one_over_root_n():
    def iv(p, lo, hi):
        return EstimateInterval(point=p, lower=lo, upper=hi)

    # half-widths 0.8 + 0.8 over a gap of 1: (1.6)^2 = 2.56 times the trials
    assert trials_to_separate(iv(1.0, 0.2, 1.8), iv(2.0, 1.2, 2.8), 100) == 256
    assert trials_to_separate(iv(2.0, 1.2, 2.8), iv(1.0, 0.2, 1.8), 100) == 256  # either order
    assert trials_to_separate(iv(1.0, 0.5, 1.5), iv(1.0, 0.5, 1.5), 100) is None  # equal points
    assert trials_to_separate(iv(4.5, 4.4, float("inf")), iv(4.6, 4.5, float("inf")), 100) is None
    ranking = estimated_ranking([_row("a", 0.0, seed=6), _row("b", 0.3, seed=7)])
    assert ranking.not_separable and "trials per world would separate them" in ranking.sentence


def test_noise_and_rerun_rows_are_ranked_apart_from_retrain_mode():
    rows = [_row("finetune", 1.0, seed=8), _row("retrain", 0.0, seed=9)]
    rows += [_row("r2d", 0.5, "noise", seed=10), _row("noisy-ft", 2.0, "rerun", seed=11)]
    retrain, fixed = estimated_ranking(rows), estimated_ranking(rows, "fixed-training")
    assert set(retrain.order) == {"finetune", "retrain"} and retrain.trial_modes == ["retrain"]
    assert fixed.order == ["r2d", "noisy-ft"] and "not comparable with retrain mode" in fixed.rule
    assert Leakage(
        trial_mode="rerun",
        n_trials=10,
        best_empirical_epsilon=0.0,
        best_attack=None,
        auroc={},
        positive_control_has_power=True,
    )  # a rerun-mode row (noisy-ft) is a valid row


def test_a_row_without_power_is_ranked_only_where_it_still_shows_a_leak():
    rows = [_row("quiet", 0.0, power=False, seed=12), _row("loud", 3.0, power=False, seed=13), _row("x", 0.0, seed=14)]
    ranking = estimated_ranking(rows)
    assert "quiet" in ranking.not_ranked and set(ranking.order) == {"loud", "x"}


def test_the_page_shows_both_rankings_with_their_intervals_and_sentences():
    from audit.report.comparison_html import render_comparison_html

    rows = [_row("noop", 12.0, seed=15), _row("retrain", 0.0, seed=16), _row("neggrad", -12.0, seed=17)]
    rows += [_row("r2d", 0.5, "noise", seed=18), _row("noisy-ft", 2.0, "rerun", seed=19)]
    rows += [_row("quiet", 0.0, power=False, seed=20)]
    retrain, fixed = estimated_ranking(rows), estimated_ranking(rows, "fixed-training")
    doc = {
        "methods": [],
        "recommendation": {"excluded": {}, "eligible": []},
        "estimated_ranking": retrain.model_dump(mode="json"),
        "estimated_ranking_fixed_training": fixed.model_dump(mode="json"),
    }
    page = " ".join(render_comparison_html(doc).split())
    assert retrain.sentence.replace("≥", "&ge;") in page or retrain.sentence in page
    assert fixed.sentence in page and "Methods with fixed training, by estimated leakage" in page
    auroc = retrain.auroc["retrain"]
    assert f"[{auroc.lower:.3g}" in page or f"[{auroc.lower:.3f}" in page  # the AUROC interval column
    assert "(at the trial ceiling)</td>" in page and "<b>quiet</b>: not ranked" in page


def test_the_compare_summary_prints_each_ranking_sentence():
    from io import StringIO

    from rich.console import Console

    from audit.cli.compare import _summary

    rows = [_row("noop", 12.0, seed=21), _row("retrain", 0.0, seed=22)]
    rows += [_row("r2d", 0.5, "noise", seed=23), _row("noisy-ft", 2.0, "rerun", seed=24)]
    doc = NS(
        methods=[],
        not_applicable=[],
        epsilon=1.0,
        delta=1e-5,
        recommendation=NS(why="w", rule="r", method=None),
        estimated_ranking=estimated_ranking(rows),
        estimated_ranking_fixed_training=estimated_ranking(rows, "fixed-training"),
        measured_ranking=None,
    )
    out = StringIO()
    _summary(Console(file=out, width=10_000), doc)
    text = out.getvalue()
    assert f"estimates, not bounds: {doc.estimated_ranking.sentence}" in text
    assert f"estimates, not bounds: {doc.estimated_ranking_fixed_training.sentence}" in text


def _hand_row(name: str, eps: tuple[float, float, float], effect: float):
    """A row whose estimate is given: ε (point, lower, upper) and an effect size of ±0.5 around ``effect``."""
    from audit.report.schema_attacks import EffectSize

    est = Estimates(**_row(name, 0.0).leakage.estimates["mia"].model_dump())
    est = est.model_copy(
        update={
            "epsilon": EstimateInterval(point=eps[0], lower=eps[1], upper=eps[2]),
            "effect_size": EffectSize(
                point=effect, lower=effect - 0.5, upper=effect + 0.5, meaning=est.effect_size.meaning
            ),
        }
    )
    return NS(name=name, leakage=NS(trial_mode="retrain", estimates={"mia": est}, positive_control_has_power=True))


def test_only_the_ceiling_is_ordered_by_effect_size_as_a_distance_with_its_overlaps_named():
    rows = [_row("none", 0.0, seed=25), _row("mid", 1.0, seed=26), _row("farther", 20.0, seed=27)]
    rows += [_row("over", -15.0, seed=28), _row("far", 12.0, seed=29), _row("far-too", 12.0, seed=30)]
    ranking = estimated_ranking(rows)
    assert ranking.order[:2] == ["none", "mid"]  # off the ceiling: the ε order
    assert set(ranking.effect_size) == {"far", "far-too", "over", "farther"}
    assert ranking.order[2:4] in (["far", "far-too"], ["far-too", "far"])
    assert ranking.order[4:] == ["over", "farther"]  # by magnitude: over-unlearning by 15 spreads is between
    assert ranking.effect_size["over"].upper < 0 and ranking.direction["over"] == "over-unlearning"
    assert ranking.effect_size_not_separable == [ranking.order[2:4]]
    assert "ordered by effect size, which measures distance, not leakage" in ranking.sentence
    assert f"not separable by it (intervals overlap): {ranking.order[2]} and {ranking.order[3]}." in ranking.sentence
    assert "no trial count orders them by this estimate" in ranking.sentence  # still no ε order there
    assert "measures distance, not leakage" in ranking.rule


def test_an_epsilon_separable_pair_is_never_reordered_by_effect_size():
    inf = float("inf")
    # a: off the ceiling, separable from b by ε (4.2 < 4.6) and far larger by effect size: it stays first
    rows = [_hand_row("a", (4.1, 4.0, 4.2), 90.0), _hand_row("b", (4.6, 4.6, inf), 60.0)]
    rows += [_hand_row("c", (4.7, 4.7, inf), 10.0)]
    ranking = estimated_ranking(rows)
    assert ranking.order == ["a", "c", "b"] and set(ranking.effect_size) == {"b", "c"}
    # x and z at the ceiling with y between them, separable from z by ε: no run, so nothing is reordered
    rows = [_hand_row("x", (3.9, 3.9, inf), 90.0), _hand_row("y", (4.3, 4.25, 4.35), 1.0)]
    rows += [_hand_row("z", (4.6, 4.6, inf), 10.0)]
    ranking = estimated_ranking(rows)
    assert ranking.order == ["x", "y", "z"] and ranking.effect_size is None
    assert "effect size" not in ranking.sentence
    # two runs at the ceiling with y, separable by ε, between them: each run ordered among itself, y stays
    rows = [_hand_row("p", (3.9, 3.9, inf), 50.0), _hand_row("q", (3.9, 3.9, inf), 10.0), rows[1]]
    rows += [_hand_row("r", (4.6, 4.6, inf), 90.0), _hand_row("s", (4.6, 4.6, inf), 5.0)]
    ranking = estimated_ranking(rows)
    assert ranking.order == ["q", "p", "y", "s", "r"]
    assert (
        "At the trial ceiling, q and p; s and r (each group among itself) are ordered by effect size"
        in ranking.sentence
    )


def test_the_page_and_the_summary_show_the_effect_size_order():
    from io import StringIO

    from rich.console import Console

    from audit.cli.compare import _summary
    from audit.report.comparison_html import render_comparison_html
    from audit.report.html import fmt

    ranking = estimated_ranking([_row("retrain", 0.0, seed=31), _row("noop", 20.0, seed=32), _row("ft", 12.0, seed=33)])
    assert ranking.order == ["retrain", "ft", "noop"]
    page = " ".join(
        render_comparison_html(
            {
                "methods": [],
                "recommendation": {"excluded": {}, "eligible": []},
                "estimated_ranking": ranking.model_dump(mode="json"),
            }
        ).split()
    )
    assert "effect size [interval] (a distance, not leakage)</th>" in page
    x = ranking.effect_size["noop"]
    assert f"{fmt(x.point)} [{fmt(x.lower)}, {fmt(x.upper)}] (mia)</td>" in page
    doc = NS(
        methods=[],
        not_applicable=[],
        epsilon=1.0,
        delta=1e-5,
        recommendation=NS(why="w", rule="r", method=None),
        estimated_ranking=ranking,
        estimated_ranking_fixed_training=None,
        measured_ranking=None,
    )
    out = StringIO()
    _summary(Console(file=out, width=10_000), doc)
    assert "ordered by effect size, which measures distance, not leakage" in out.getvalue()
