"""What the audit measures besides attacks: the realized ε, utility, loss histograms, the tradeoff.

Each function returns its report section (:mod:`audit.report.schema`) directly.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import Tensor

from audit.config import NOISE_TRIALS
from audit.evaluation import Scores, accuracy_se, score
from audit.report import schema
from audit.trials import noise_draws
from certify.mechanisms import epsilon_for
from unlearners.base import Unlearner
from unlearners.objective import Objective

Tick = Callable[[str, int, int], None]
_TOL = 1e-9


def realized(
    sigma: float,
    delta: float,
    distance: float,
    sensitivity: float | None,
    certified: float | None,
    no_op_distance: float | None = None,
) -> schema.Realized:
    """The ε this very deletion spends: the Gaussian mechanism with Δ = ||θ_U − θ_R|| at σ; and,
    given ``no_op_distance`` = ||θ_original − θ_R||, the ε that releasing the original model (doing
    nothing) would spend at the same σ."""
    eps = _gaussian_epsilon(sigma, delta, distance)
    return schema.Realized(
        distance_unlearned_retrained=distance,
        sensitivity_bound=sensitivity,
        bound_slack=None if sensitivity is None else ((sensitivity / distance) if distance > 0 else math.inf),
        epsilon=eps,
        mechanism="analytic",
        exceeds_certified=bool(certified is not None and eps > certified * (1 + _TOL)),
        bound_violated=bool(sensitivity is not None and distance > sensitivity * (1 + _TOL)),
        no_op_distance=no_op_distance,
        no_op_epsilon=None if no_op_distance is None else _gaussian_epsilon(sigma, delta, no_op_distance),
    )


def _gaussian_epsilon(sigma: float, delta: float, distance: float) -> float:
    """ε at δ of N(θ, σ²I) against N(θ', σ²I) with ||θ − θ'|| = ``distance`` (analytic Gaussian mechanism)."""
    if distance == 0:
        return 0.0
    if sigma == 0 or not math.isfinite(sigma):
        return math.inf if sigma == 0 else 0.0
    return epsilon_for(sigma, delta, distance, "analytic")


def released_scores(
    objective: Objective, theta: Tensor, sigma: float, draws: int, gen: torch.Generator, noisy_splits: dict
) -> dict[str, Scores]:
    """``draws`` releases θ + N(0, σ²I) of one model (one block from ``gen``), scored on each
    split of ``noisy_splits`` (records already subsampled and cast, :mod:`audit.evaluation`); empty
    when σ is 0 or not finite."""
    if not 0 < sigma < math.inf:
        return {}
    thetas = noise_draws(theta, sigma, draws, gen)
    return {split: score(objective, thetas, Xs, ys) for split, (Xs, ys) in noisy_splits.items()}


def model_utility(
    passes: dict, sigma: float, released: dict[str, Scores], populations: dict[str, int], dtype: torch.dtype
) -> schema.ModelUtility:
    """Accuracy and loss of one model per split, noiseless (``passes``: split -> per-record loss and
    correct, :func:`audit.evaluation.outputs`) and released (mean ± std over the draws' ``released``
    scores, with the standard error of the mean accuracy over ``populations`` records)."""
    out = {}
    for split, (per_loss, right) in passes.items():
        n = int(right.numel())
        entry: dict[str, Any] = {"accuracy": int(right.sum()) / n, "loss": float(per_loss.sum(dtype=torch.float64)) / n}
        if split in released:
            scores = released[split]
            entry.update(
                noisy_accuracy_mean=float(scores.accuracy.mean()),
                noisy_accuracy_std=_std(scores.accuracy),
                noisy_loss_mean=float(scores.loss.mean()),
                noisy_loss_std=_std(scores.loss),
                noisy_records=int(scores.hits.numel()),
                noisy_accuracy_se=accuracy_se(scores, populations[split]),
            )
        elif math.isfinite(sigma):
            entry.update(
                noisy_accuracy_mean=entry["accuracy"],
                noisy_accuracy_std=0.0,
                noisy_loss_mean=entry["loss"],
                noisy_loss_std=0.0,
            )
        out[split] = schema.SplitUtility(**entry)
    draws = int(next(iter(released.values())).accuracy.numel()) if released else 0
    return schema.ModelUtility(
        **out, noise_draws=draws, noisy_dtype=str(dtype).removeprefix("torch.") if released else None
    )


def _std(values: Tensor) -> float:
    """The draws' standard deviation (0 for one draw, where torch's would be NaN)."""
    return float(values.std()) if values.numel() > 1 else 0.0


def unlearned_vs_retrained(
    objective: Objective, unlearned: Tensor, retrained: Tensor, test: tuple[Tensor, Tensor]
) -> schema.UnlearnedVsRetrained:
    """The two noiseless models record by record on the test split, with an exact one-sided
    binomial (McNemar) test of "the unlearned model is the wrong one more often"."""
    X, y = test
    return agreement(objective.predict(unlearned, X) == y, objective.predict(retrained, X) == y)


def agreement(u_right: Tensor, r_right: Tensor) -> schema.UnlearnedVsRetrained:
    """:func:`unlearned_vs_retrained` from each model's per-record correctness on the test split."""
    from scipy.special import bdtrc  # scipy.stats (binomtest) costs 0.6 s to import; this is its exact tail

    b = int((r_right & ~u_right).sum())
    c = int((u_right & ~r_right).sum())
    # binomtest(b, b + c, 0.5, alternative="greater").pvalue = P[Bin(b + c, 1/2) >= b] = bdtrc(b - 1, ...)
    p = float(bdtrc(b - 1, b + c, 0.5)) if b > 0 else 1.0
    return schema.UnlearnedVsRetrained(
        n=int(u_right.numel()),
        unlearned_wrong_retrained_right=b,
        retrained_wrong_unlearned_right=c,
        accuracy_gap=(b - c) / int(u_right.numel()),
        p_value=min(1.0, p),
    )


def chance_accuracy(y: Tensor) -> float:
    """The majority-class rate: the accuracy of always predicting the most frequent class."""
    return float(torch.bincount(y).max()) / int(y.numel())


def loss_histograms(per_record: dict, bins: int = 40) -> schema.LossHistograms:
    """Per-record loss histograms (shared bin edges) of each noiseless model on each split, from
    ``per_record``: model -> split -> per-record losses (the utility stage's passes).

    Counts, not losses, go into the report: the distribution is what an auditor compares, and
    raw per-record values of the forget set would themselves be personal data.
    """
    losses = {name: {split: v.detach().cpu().numpy() for split, v in per.items()} for name, per in per_record.items()}
    top = max(float(np.quantile(v, 0.995)) for per in losses.values() for v in per.values())
    edges = np.linspace(0.0, max(top, 1e-12), bins + 1)
    counts = {
        name: {
            split: [int(c) for c in np.histogram(np.clip(v, 0, edges[-1]), bins=edges)[0]] for split, v in per.items()
        }
        for name, per in losses.items()
    }
    return schema.LossHistograms(
        edges=[float(e) for e in edges],
        counts=counts,  # type: ignore[arg-type]  # pydantic validates the nested dict into HistogramCounts
        note="losses above the last edge are counted in the last bin",
    )


def tradeoff(
    method: Unlearner,
    forget: Tensor,
    *,
    epsilon: float,
    delta: float,
    mechanism: str,
    points: int,
    objective: Objective,
    test: tuple[Tensor, Tensor],
    retrained: Tensor,
    refit: Callable[[Unlearner], object],  # its return value is not used
    gen: torch.Generator,
    tick: Tick,
    budget: float = math.inf,
    own: tuple[Tensor, object] | None = None,
) -> schema.Tradeoff | None:
    """The knob–σ–ε curve of the method's declared knob (None without one), within ``budget``
    trainings of work (:func:`budgeted_values`).

    ``own``: the audit's unlearned model and certificate at the value it used, reused as that
    value's row (a single request; None otherwise); a value whose unlearning is the retrain
    (:meth:`Unlearner.knob_is_retrain`, R2D's K = T) reuses ``retrained``. A knob that does not refit is evaluated from
    the fitted state against the retrain in hand; a knob that refits builds a replica per value,
    fits it (``refit``), and retrains it. No certificate depends on the curve.
    """
    knob = type(method).capabilities.knob
    if knob is None:
        return None
    # the value this run used: an option the fit resolved (HF's eta = 1/M when not given) is pinned
    used = {**method.options, **method.pinned_options()}[knob.option]
    cost = lambda v: 0.0 if method.knob_is_retrain(v) else method.knob_cost(v)  # noqa: E731
    values, left_out, work = budgeted_values(method.knob_grid(points), used, cost, budget, reuse=own is not None)
    fresh = [v for v in values if not (own is not None and v == used) and not method.knob_is_retrain(v)]
    swept = None if knob.refits else dict(zip(fresh, method.unlearn_sweep(forget, fresh) if fresh else []))
    rows = []
    for i, value in enumerate(values):
        tick("tradeoff", i, len(values))
        if own is not None and value == used:
            (theta, cert), reference = own, retrained
        elif method.knob_is_retrain(value):
            cert = method.certify(forget, epsilon, delta, mechanism, **{knob.option: value})
            theta, reference = retrained, retrained
        elif knob.refits:
            variant = method.replica(**{knob.option: value})
            refit(variant)
            theta, reference = variant.unlearn(forget), variant.retrain(forget)
            cert = variant.certify(forget, epsilon, delta, mechanism)
        else:
            cert = method.certify(forget, epsilon, delta, mechanism, **{knob.option: value})
            assert swept is not None  # built above whenever the knob does not refit, as here
            theta, reference = swept[value], retrained
        rows.append(_tradeoff_row(value, cert, theta, reference, objective, test, delta, gen))
    tick("tradeoff", len(values), len(values))
    extra = {"left_out": [float(v) for v in left_out]} if left_out else {}
    return schema.Tradeoff(knob=schema.Knob(**vars_of(knob)), chosen=float(used), rows=rows, work=float(work), **extra)


def budgeted_values(
    grid: list, used, cost: Callable[[object], float], budget: float, reuse: bool
) -> tuple[list, list, float]:
    """The knob values the curve evaluates, those the budget leaves out, and the work spent.

    With ``reuse``, the value the audit used joins the grid, free (its models are reused). The rest are taken
    farthest-first (the one furthest, in grid positions, from every value already taken; ties to the
    smaller value), so a cut curve still spans the grid; a value whose ``cost`` (trainings) would
    take the total over ``budget`` is left out. Deterministic: the same grid and budget give the
    same curve on every machine.
    """
    values = sorted(set(grid) | {used}) if reuse else sorted(set(grid))
    taken = {values.index(used)} if reuse else set()
    remaining, left_out, spent = set(range(len(values))) - taken, [], 0.0
    while remaining:
        i = max(sorted(remaining), key=lambda j: min((abs(j - k) for k in taken), default=0))
        remaining.discard(i)
        c = float(cost(values[i]))
        if spent + c <= budget * (1 + _TOL):
            spent += c
            taken.add(i)
        else:
            left_out.append(values[i])
    return [values[i] for i in sorted(taken)], sorted(left_out), spent


def _tradeoff_row(
    value,
    cert,
    theta: Tensor,
    reference: Tensor,
    objective: Objective,
    test: tuple[Tensor, Tensor],
    delta: float,
    gen: torch.Generator,
) -> schema.TradeoffRow:
    sens = cert.sensitivity if cert.sensitivity is not None else math.inf
    distance = float(torch.linalg.vector_norm(theta - reference))
    row = {
        "value": float(value),
        "sensitivity": sens,
        "sigma": cert.sigma,
        "distance": distance,
        "test_accuracy_noiseless": float(objective.accuracy(theta, *test)),
    }
    if math.isfinite(cert.sigma):
        draws = [objective.accuracy(Unlearner.release(theta, cert.sigma, gen), *test) for _ in range(5)]
        row["test_accuracy_released"] = float(torch.stack(draws).mean())
        row["realized_epsilon"] = realized(cert.sigma, delta, distance, None, None).epsilon
    return schema.TradeoffRow(**row)


def frontier(
    method: Unlearner,
    certificate,
    forget: Tensor,
    theta: Tensor,
    *,
    epsilons: tuple[float, ...],
    delta: float,
    mechanism: str,
    objective: Objective,
    test: tuple[Tensor, Tensor],
    draws: int,
    gen: torch.Generator,
    noiseless: float | None = None,
    known: tuple[float, Scores] | None = None,
    population: int | None = None,
) -> schema.Frontier | schema.FrontierNotApplicable:
    """Released test accuracy of the unlearned model ``theta`` at each ε of ``epsilons``.

    ``test`` is the set the releases are scored on (the utility stage's subsample, cast); the
    utility stage's passes are reused: ``noiseless`` (the unlearned model's test accuracy) and
    ``known`` = (σ, scores) of its releases at the certificate's σ, for the ε whose σ is that one.
    ``population``: the test split's size, for the standard error of a subsample.

    One trained and unlearned model serves every ε: only the noise changes. σ at each ε is the
    method's own certificate there (``method.certify``, the function that issued the run's
    certificate: for a fixed Δ, σ scales like 1/ε), so the point at the requested ε carries the
    report's σ. A release without output noise has no such curve: training noise (DP-SGD) needs
    one training per ε, and a method without a valid certificate has no σ to scale.
    """
    reruns = method is not None and type(method).capabilities.reruns
    if certificate.kind == "training-noise" and reruns and certificate.valid:
        return _rerun_frontier(
            method,
            forget,
            epsilons=epsilons,
            delta=delta,
            mechanism=mechanism,
            objective=objective,
            test=test,
            draws=draws,
            gen=gen,
        )
    if certificate.kind == "training-noise":
        return schema.FrontierNotApplicable(
            applicable=False,
            reason=(
                "the noise is added in training (DP-SGD): every epsilon needs a training of its own, not one "
                "trained model with more or less output noise"
            ),
        )
    if certificate.kind == "none" or not certificate.valid:
        why = (
            "the method carries no certificate"
            if certificate.kind == "none"
            else "the certificate is not issued (" + "; ".join(certificate.warnings[:1]) + ")"
        )
        return schema.FrontierNotApplicable(applicable=False, reason=f"{why}: there is no sigma for any epsilon")
    usable = [e for e in epsilons if not (mechanism == "classic" and e > 1)]
    left_out = sorted(set(epsilons) - set(usable))
    if not usable:
        return schema.FrontierNotApplicable(
            applicable=False,
            reason=(
                "the classic Gaussian mechanism calibrates epsilon <= 1 only, and every frontier epsilon is above 1"
            ),
        )
    X, y = test
    population = int(y.numel()) if population is None else population
    if noiseless is None:
        noiseless = float(score(objective, theta.unsqueeze(0), X, y).accuracy[0])
    points = []
    for eps in sorted(usable):
        sigma = float(method.certify(forget, eps, delta, mechanism).sigma)
        if not math.isfinite(sigma):
            continue
        if sigma == 0:  # the release is the noiseless model
            points.append(
                schema.FrontierPoint(
                    epsilon=float(eps),
                    sigma=0.0,
                    test_accuracy_mean=noiseless,
                    test_accuracy_std=0.0,
                    test_accuracy_se=0.0,
                )
            )
            continue
        if known is not None and sigma == known[0]:
            scores = known[1]
        else:
            scores = score(objective, noise_draws(theta, sigma, draws, gen), X, y)
        points.append(
            schema.FrontierPoint(
                epsilon=float(eps),
                sigma=sigma,
                test_accuracy_mean=float(scores.accuracy.mean()),
                test_accuracy_std=_std(scores.accuracy),
                test_accuracy_se=accuracy_se(scores, population),
            )
        )
    if not points:
        return schema.FrontierNotApplicable(applicable=False, reason="no finite noise certifies any frontier epsilon")
    note = (
        f"test accuracy of U(A(D), D, Z) + N(0, sigma^2 I) over {draws} noise draws at each epsilon; sigma is "
        f"the method's certificate at that epsilon and delta = {delta:g}"
    )
    if int(y.numel()) < population:
        note += (
            f"; the released models are scored on {int(y.numel())} of the {population} test records (a seeded "
            "random subsample: test_accuracy_se states its error)"
        )
    if certificate.kind == "exact":
        note += "; an exact method releases the noiseless model at every epsilon"
    if left_out:
        note += "; left out: epsilon " + ", ".join(f"{e:g}" for e in left_out) + " (classic mechanism: epsilon <= 1)"
    return schema.Frontier(
        applicable=True,
        delta=float(delta),
        mechanism=mechanism,  # type: ignore[arg-type]  # one of MECHANISMS (the config checked it); pydantic checks again
        noise_draws=int(draws),
        test_accuracy_noiseless=noiseless,
        points=points,
        note=note,
        test_records=int(y.numel()),
    )


def _rerun_frontier(
    method: Unlearner,
    forget: Tensor,
    *,
    epsilons: tuple[float, ...],
    delta: float,
    mechanism: str,
    objective: Objective,
    test: tuple[Tensor, Tensor],
    draws: int,
    gen: torch.Generator,
) -> schema.Frontier | schema.FrontierNotApplicable:
    """The frontier of a method whose release is a noisy run (``Capabilities.reruns``): at each ε
    the option the audit's ε feeds (``Param.audit == "epsilon"``) is set to it, so the method
    solves its own σ there, and ``draws`` runs from the same A(D) are released; the option is
    restored after. σ of a point is the certificate's constant ``sigma`` (the noise inside the
    run); the release itself adds none."""
    option = next((p.name for p in type(method).hyperparameters if p.audit == "epsilon"), None)
    if option is None:
        return schema.FrontierNotApplicable(
            applicable=False, reason=("the method's noisy run is calibrated by no option the audit's epsilon feeds")
        )
    start = method.rerun_starts(forget)[0]
    X, y = test[0].to(start.dtype), test[1]  # the sample may be cast for noisy scoring; a re-run is in the run's dtype
    before, points = method.options[option], []
    try:
        for eps in sorted(epsilons):
            method.set_option(option, float(eps))
            cert = method.certify(forget, eps, delta, mechanism)
            seeds = torch.randint(2**62, (draws,), generator=gen).tolist()
            runs, _ = method.rerun(start, forget, [torch.Generator().manual_seed(int(s)) for s in seeds])
            accs = torch.stack([objective.accuracy(theta, X, y) for theta in runs])
            sigma = next((c.value for c in cert.constants if c.name == "sigma"), 0.0)
            points.append(
                schema.FrontierPoint(
                    epsilon=float(eps),
                    sigma=float(sigma),
                    test_accuracy_mean=float(accs.mean()),
                    test_accuracy_std=float(accs.std()) if draws > 1 else 0.0,
                )
            )
    finally:
        method.set_option(option, before)
    note = (
        f"test accuracy of {draws} noisy runs from A(D) at each epsilon, each run's sigma solved by the method for "
        f"that epsilon and delta = {delta:g} (the noise is inside the run; the release adds none)"
    )
    return schema.Frontier(
        applicable=True,
        delta=float(delta),
        mechanism=mechanism,  # type: ignore[arg-type]  # one of MECHANISMS (the config checked it); pydantic checks again
        noise_draws=int(draws),
        test_accuracy_noiseless=float(objective.accuracy(start, X, y)),
        points=points,
        note=note,
    )


def parameters(objective: Objective, original: Tensor, unlearned: Tensor, retrained: Tensor) -> schema.Parameters:
    return schema.Parameters(
        dimension=objective.dim,
        norm_original=_norm(original),
        norm_unlearned=_norm(unlearned),
        norm_retrained=_norm(retrained),
        sha256_original=tensor_sha(original),
        sha256_unlearned=tensor_sha(unlearned),
        sha256_retrained=tensor_sha(retrained),
    )


def vars_of(obj) -> dict:
    from dataclasses import asdict

    return asdict(obj)


def _norm(t: Tensor) -> float:
    return float(torch.linalg.vector_norm(t))


def tensor_sha(t: Tensor) -> str:
    return hashlib.sha256(t.detach().cpu().contiguous().numpy().tobytes()).hexdigest()


def ledger_section(
    method: Unlearner,
    requests: list[Tensor],
    releases: list,
    config: Any,
    retrained_all: Tensor,
    tick,
    seed: int,
) -> dict:
    """Record every release of the sequence with its measured distance to retraining
    (``retrained_all``, the retrain without every request, is the last release's reference), and
    attack every pair of consecutive releases (:mod:`attacks.consecutive`)."""
    from attacks.consecutive import consecutive_release_bounds
    from certify.ledger import PrivacyLedger

    book = PrivacyLedger(delta=config.delta, budget_epsilon=config.budget_epsilon)
    references = []
    for k, (theta, certificate) in enumerate(releases, start=1):
        tick("ledger", k - 1, len(releases))
        union = torch.cat(requests[:k])
        retrained = retrained_all if k == len(releases) else method.retrain(union)
        references.append(retrained)
        distance = float(torch.linalg.vector_norm(theta - retrained))
        certified = certificate.epsilon if certificate.certified else None
        spent = realized(certificate.sigma, config.delta, distance, certificate.sensitivity, certified)
        book.record_certificate(
            certificate,
            forget_total=int(union.numel()),
            distance=distance,
            realized_epsilon=spent.epsilon,
            label=f"request {k}",
        )
    tick("ledger", len(releases), len(releases))
    ledger = book.to_dict()
    sigmas = [float(c.sigma) for _, c in releases]
    if all(math.isfinite(s) for s in sigmas):
        steps = len(releases) - 1  # every step's bound holds together at the audit's confidence
        ledger["consecutive"] = consecutive_release_bounds(
            [theta for theta, _ in releases],
            references,
            sigmas,
            n_trials=NOISE_TRIALS,
            delta=config.delta,
            confidence=1.0 - (1.0 - config.confidence) / max(1, steps),
            seed=seed,
            split="pareto-bonferroni",
            draws="projected",
        )
    return ledger
