"""Evaluation once (audit.evaluation): one pass gives accuracy and loss, the subsample's error is stated."""

import math

import torch

from audit.evaluation import EVAL_CHUNK, Scores, accuracy_se, noisy_dtype, outputs, score, subsample
from unlearners.models import build_model
from unlearners.objective import Objective, default_init

from synthetic import synthetic


def _problem(model="mlp", n=EVAL_CHUNK + 88):
    X, y = synthetic(n=n, d=4, classes=3, seed=3)
    obj = Objective(build_model(model, 4, 3).double())
    return obj, default_init(obj, torch.Generator().manual_seed(0)), X, y


def test_one_chunked_pass_gives_the_objectives_accuracy_and_loss():
    for model in ("logreg", "mlp"):
        obj, theta, X, y = _problem(model)
        thetas = torch.stack([theta, theta + 0.5 * torch.ones_like(theta)])
        s = score(obj, thetas, X, y)
        for i, t in enumerate(thetas):
            assert s.accuracy[i] == obj.accuracy(t, X, y)  # counts of 0/1 are exact
            assert math.isclose(s.loss[i], float(obj.loss(t, X, y)), rel_tol=1e-12)
        per_loss, right = outputs(obj, theta, X, y)
        assert torch.allclose(per_loss, obj.per_sample_loss(theta, X, y), rtol=1e-12)
        assert int(s.hits.max()) <= 2 and int(s.hits.sum()) == round(float(s.accuracy.sum()) * len(y))
        assert torch.equal(right, obj.predict(theta, X) == y)


def test_float32_scoring_stays_close_to_float64():
    obj, theta, X, y = _problem()
    s64, s32 = score(obj, theta.unsqueeze(0), X, y), score(obj, theta.unsqueeze(0), X.float(), y)
    assert abs(float(s64.accuracy[0] - s32.accuracy[0])) <= 2 / len(y)
    assert math.isclose(s64.loss[0], s32.loss[0], rel_tol=1e-5)


def test_standard_error_is_the_draws_alone_on_the_whole_split_and_grows_with_subsampling():
    acc = torch.tensor([0.5, 0.6, 0.7], dtype=torch.float64)
    hits = torch.tensor([3, 0, 1, 2, 3, 0, 3, 1, 2, 3])  # 10 records, 3 draws
    whole = accuracy_se(Scores(acc, acc, hits), population=10)
    assert math.isclose(whole, float(acc.std()) / math.sqrt(3))
    assert accuracy_se(Scores(acc, acc, hits), population=10_000) > whole
    assert accuracy_se(Scores(acc[:1], acc[:1], hits), population=10) == 0.0  # one draw, every record


def test_subsample_is_seeded_without_replacement_and_leaves_small_splits_alone():
    X, y = torch.arange(50.0).unsqueeze(1), torch.arange(50)
    assert subsample(X, y, 50, torch.Generator())[0] is X and subsample(X, y, None, torch.Generator())[0] is X
    a = subsample(X, y, 20, torch.Generator().manual_seed(1))
    b = subsample(X, y, 20, torch.Generator().manual_seed(1))
    assert torch.equal(a[0], b[0]) and len(set(a[1].tolist())) == 20 and torch.equal(a[0][:, 0].long(), a[1])


def test_releases_are_scored_in_float32_unless_the_model_pins_float64_buffers():
    obj, _, _, _ = _problem()
    assert noisy_dtype(obj, torch.float64) == torch.float32
    assert noisy_dtype(obj, torch.float32) == torch.float32
    norm = Objective(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3)).double())
    assert noisy_dtype(norm, torch.float64) == torch.float64
    carried = Objective(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3)).double(), with_buffers=True)
    assert noisy_dtype(carried, torch.float64) == torch.float32
