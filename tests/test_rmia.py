"""attacks.rmia: RMIA (Zarifzadeh et al. 2024) on the unlearning game, online and offline."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.special import log_softmax

from attacks.registry import attack_names, get_attack
from attacks.rmia import (
    A_GRID,
    RMIA,
    LogProbs,
    RMIAOffline,
    log_prob_true_label,
    rmia_attack,
    rmia_example_scores,
    rmia_reference,
    tune_offline_a,
)
from attacks.roc import auroc
from audit.config import AuditConfig
from certify.errors import InvalidInput
from test_lira import unlearning_game

# ----------------------------------------------------------------------------------------------
# known values on tiny arrays

L = np.log
# two reference models per side, one forget record x, two population records z
REF_IN = LogProbs(L([[0.8], [0.6]]), L([[0.5, 0.3], [0.5, 0.3]]))
REF_OUT = LogProbs(L([[0.5], [0.3]]), L([[0.5, 0.2], [0.5, 0.4]]))
TARGET = LogProbs(L([[0.66]]), L([[0.55, 0.39]]))


def test_online_known_values():
    ref = rmia_reference(REF_IN, REF_OUT, mode="online")
    # Pr(x) = (0.7 + 0.4)/2, Pr(z) = ((0.5, 0.3) + (0.5, 0.3))/2
    np.testing.assert_allclose(np.exp(ref.log_px), [0.55])
    np.testing.assert_allclose(np.exp(ref.log_pz), [0.5, 0.3])
    assert (ref.n_in, ref.n_out, ref.offline_a) == (2, 2, None)
    # LR(x) = 0.66/0.55 = 1.2, LR(z) = (1.1, 1.3): x dominates one z of two at γ = 1
    assert rmia_example_scores(TARGET, ref).tolist() == [[0.5]]
    assert rmia_example_scores(TARGET, ref, gamma=1.05).tolist() == [[0.5]]  # 1.2/1.1 = 1.09
    assert rmia_example_scores(TARGET, ref, gamma=1.1).tolist() == [[0.0]]
    assert rmia_example_scores(TARGET, ref, gamma=0.9).tolist() == [[1.0]]  # 1.2/1.3 = 0.92


def test_offline_known_values():
    ref = rmia_reference(None, REF_OUT, mode="offline", offline_a=0.5)
    # Pr = ((1 + a)·mean_out + 1 − a)/2: x: (1.5·0.4 + 0.5)/2; z: (1.5·(0.5, 0.3) + 0.5)/2
    np.testing.assert_allclose(np.exp(ref.log_px), [0.55])
    np.testing.assert_allclose(np.exp(ref.log_pz), [0.625, 0.475])
    # LR(z) = (0.88, 0.821): LR(x)/LR(z) = (1.36, 1.46)
    assert rmia_example_scores(TARGET, ref).tolist() == [[1.0]]
    assert rmia_example_scores(TARGET, ref, gamma=1.4).tolist() == [[0.5]]
    np.testing.assert_allclose(np.exp(rmia_reference(None, REF_OUT, mode="offline", offline_a=1.0).log_px), [0.4])
    np.testing.assert_allclose(np.exp(rmia_reference(None, REF_OUT, mode="offline", offline_a=0.0).log_px), [0.7])


def test_log_prob_true_label_matches_softmax_and_sigmoid():
    rng = np.random.default_rng(0)
    z, y = rng.normal(0.0, 3.0, (4, 6, 3)), rng.integers(0, 3, 6)
    np.testing.assert_allclose(log_prob_true_label(z, y), log_softmax(z, axis=-1)[:, np.arange(6), y], atol=1e-12)
    zb, yb = np.array([-800.0, 0.0, 2.0]), np.array([1, 0, 0])
    np.testing.assert_allclose(log_prob_true_label(zb, yb, one_logit=True), [-800.0, np.log(0.5), -np.log1p(np.e**2)])


# ----------------------------------------------------------------------------------------------
# properties on simulated log-probabilities


def _world(rng, n, base_x, base_z, shift=0.0, exposed=None):
    """log p_y of n models: logits N(base, 1) per record plus a per-model offset (a model's overall
    confidence, which the population records calibrate away); forget records shifted by ``shift``
    (only record ``exposed`` when given)."""
    offset = rng.normal(0.0, 0.5, (n, 1))
    bump = np.zeros_like(base_x) + shift
    if exposed is not None:
        bump = np.where(np.arange(base_x.size) == exposed, shift, 0.0)
    fx = rng.normal(base_x + bump, 1.0, (n, base_x.size)) + offset
    fz = rng.normal(base_z, 1.0, (n, base_z.size)) + offset
    return LogProbs(
        log_prob_true_label(fx, np.ones(base_x.size, int), one_logit=True),
        log_prob_true_label(fz, np.ones(base_z.size, int), one_logit=True),
    )


def _game(seed, shift, m=8, n_z=200, s=16, n=200, exposed=None):
    rng = np.random.default_rng(seed)
    base_x, base_z = rng.normal(1.0, 1.5, m), rng.normal(1.0, 1.5, n_z)
    u = lambda k: _world(rng, k, base_x, base_z, shift, exposed)  # noqa: E731
    r = lambda k: _world(rng, k, base_x, base_z)  # noqa: E731
    return u(s), r(s), u(n), r(n)


@pytest.mark.parametrize("mode", ["online", "offline"])
def test_identical_worlds_are_at_chance(mode):
    values = [rmia_attack(*_game(seed, 0.0), mode=mode).roc.auroc for seed in range(3)]
    assert abs(np.mean(values) - 0.5) < 0.05


@pytest.mark.parametrize("mode", ["online", "offline"])
def test_a_planted_separation_is_found(mode):
    r = rmia_attack(*_game(1, 2.0), mode=mode)
    assert r.roc.auroc > 0.97
    assert r.scores_unlearned.shape == (200,) and r.example_scores_unlearned.shape == (200, 8)
    np.testing.assert_allclose(r.example_scores_unlearned.mean(axis=1), r.scores_unlearned)
    assert np.all((r.example_scores_retrained >= 0) & (r.example_scores_retrained <= 1))
    assert np.all(r.example_aurocs > 0.6)
    d = json.loads(json.dumps(r.to_dict()))
    assert d["mode"] == mode and d["n_population"] == 200 and d["gamma"] == 1.0
    if mode == "offline":
        assert d["offline_a"] in A_GRID and len(d["offline_a_aurocs"]) == len(A_GRID)


def test_the_exposed_record_ranks_first():
    from attacks.exposure import per_record_exposure

    r = rmia_attack(*_game(2, 2.5, m=12, exposed=7))
    e = per_record_exposure(r.example_scores_unlearned, r.example_scores_retrained, delta=1e-5)
    # p_y = sigmoid(φ) flattens near 1, so one record's probability ratio is a weaker test than
    # its logit would be; the planted record still comes first, well ahead of the rest
    assert e["top"][0]["record"] == 7 and e["top"][0]["auroc"] > 0.75 and e["top"][1]["auroc"] < 0.6
    assert e["top"][0]["epsilon_lower"] > 0 and abs(e["auroc_quantiles"]["median"] - 0.5) < 0.08


def test_offline_a_is_chosen_on_the_shadows_only():
    ref_in, ref_out, u, r = _game(3, 1.0)
    a, table = tune_offline_a(ref_in, ref_out)
    assert a in A_GRID and table[f"{a:g}"] == max(table.values())
    assert rmia_attack(ref_in, ref_out, u, r, mode="offline").reference.offline_a == a
    _, _, u2, r2 = _game(4, 0.0)  # other trials: same shadows, same a
    assert rmia_attack(ref_in, ref_out, u2, r2, mode="offline").reference.offline_a == a
    fixed = rmia_attack(ref_in, ref_out, u, r, mode="offline", offline_a=0.7)
    assert fixed.reference.offline_a == 0.7 and fixed.a_aurocs is None
    # without "in" shadows the reference implementation's default is used
    assert rmia_attack(None, ref_out, u, r, mode="offline").reference.offline_a == 0.3


def test_population_records_cancel_a_model_wide_confidence_factor():
    # Pr(x|θ)/Pr(z|θ) is all the score reads of θ: a model whose p_y is c times another's on
    # every record scores the same, which is what makes scores comparable across models.
    ref_in, ref_out, u, _ = _game(5, 0.0, n=20)
    ref = rmia_reference(ref_in, ref_out)
    scaled = LogProbs(u.forget + np.log(0.3), u.population + np.log(0.3))
    np.testing.assert_array_equal(rmia_example_scores(scaled, ref), rmia_example_scores(u, ref))


# ----------------------------------------------------------------------------------------------
# validation


def test_invalid_inputs_name_the_field():
    ref_in, ref_out, u, r = _game(6, 0.0, n=3, s=3)
    cases = [
        (lambda: rmia_attack(ref_in, ref_out, u, r, gamma=0.0), "gamma"),
        (lambda: rmia_attack(ref_in, ref_out, u, r, mode="both"), "mode"),
        (lambda: rmia_attack(ref_in, ref_out, u, r, mode="offline", offline_a=1.5), "offline_a"),
        (lambda: rmia_attack(ref_in, ref_out, u, r, mode="offline", offline_a="tuned"), "offline_a"),
        (lambda: rmia_attack(None, ref_out, u, r), "ref_in"),
        (lambda: rmia_attack(ref_in, ref_out, LogProbs(u.forget[:, :2], u.population), r), "unlearned.forget"),
        (lambda: rmia_attack(ref_in, ref_out, u, LogProbs(r.forget, r.population[:2])), "retrained.population"),
        (lambda: rmia_attack(ref_in, ref_out, u, LogProbs(-r.forget, r.population)), "retrained.forget"),
        (lambda: rmia_attack(ref_in, ref_out, u, {"forget": 0}), "retrained"),
        (lambda: rmia_attack(ref_in, LogProbs(ref_out.forget * np.nan, ref_out.population), u, r), "ref_out.forget"),
        (lambda: tune_offline_a(ref_in, LogProbs(ref_out.forget[:1], ref_out.population[:1])), "ref_out.forget"),
        (lambda: rmia_example_scores(u, "reference"), "reference"),
    ]
    for call, field in cases:
        with pytest.raises(InvalidInput) as err:
            call()
        assert err.value.field == field


# ----------------------------------------------------------------------------------------------
# end to end through the Attack classes, on a real (tiny) model


@pytest.mark.parametrize("attack", [RMIA, RMIAOffline])
def test_attacks_flag_a_no_op_unlearning_and_not_retraining(attack):
    assert get_attack(attack.name) is attack and attack.needs == {"shadows"}
    flagged = attack().run(unlearning_game(True))
    assert auroc(flagged.scores_unlearned, flagged.scores_retrained) > 0.95
    d = flagged.details
    assert d["mode"] == attack.mode and d["targets"] == 5 and d["population_records"] == 100
    assert d["per_record"]["records"] == 5 and d["most_exposed_auroc"] > 0.8
    assert d["most_exposed_epsilon_lower"] > 0
    if attack is RMIAOffline:
        assert d["offline_a"] in A_GRID
    json.dumps(d)
    honest = attack().run(unlearning_game(False, seed=1))
    assert abs(auroc(honest.scores_unlearned, honest.scores_retrained) - 0.5) < 0.12


def test_population_is_a_seeded_subset_and_must_exist():
    inputs = unlearning_game(True, n=6, shadows=4)
    small = type(inputs)(**{**inputs.__dict__, "settings": {"rmia_population": 10}})
    a, b = RMIA().run(small), RMIA().run(small)
    assert a.details["population_records"] == 10 and np.array_equal(a.scores_unlearned, b.scores_unlearned)
    empty = type(inputs)(**{**inputs.__dict__, "X_unseen": inputs.X_unseen[:0], "y_unseen": inputs.y_unseen[:0]})
    with pytest.raises(InvalidInput) as err:
        RMIA().run(empty)
    assert err.value.field == "X_unseen"


def test_registered_but_not_run_by_default():
    assert {"rmia", "rmia-offline", "lira-offline"} <= set(attack_names())
    default = AuditConfig().attacks
    assert not {"rmia", "rmia-offline", "lira-offline"} & set(default)
    assert AuditConfig(attacks="ulira,rmia,lira-offline").attacks == ("ulira", "rmia", "lira-offline")
