"""One audit: fit → certify → unlearn → retrain → compare, as a single library call.

``run(config)`` is silent; it reports progress through an optional callback
``progress(stage: str, done: int, total: int)`` that the CLI adapts to a rich progress bar.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import secrets
import time
from collections.abc import Callable
from datetime import datetime, timezone

import numpy as np
import torch
from torch import Tensor

from audit.attacking import AttackContext, run_attacks
from audit.config import AuditConfig
from audit.datasets import AuditData, load_dataset, select_forget
from audit.report import AuditReport, environment
from certify.errors import InvalidInput
from certify.mechanisms import epsilon_for, sigma_for
from unlearners.base import Unlearner, get_method
from unlearners.models import build_model
from unlearners.objective import Objective, default_init
from unlearners.smoothness import model_constants

Progress = Callable[[str, int, int], None]
STAGES = ("data", "learn", "unlearn", "retrain", "certify", "ledger", "utility", "tradeoff", "trials", "attacks")


def run(config: AuditConfig, progress: Progress | None = None, *, salt: bytes | None = None) -> AuditReport:
    """Run one audit and return its report.

    Parameters
    ----------
    config:
        A validated :class:`AuditConfig` (validated again here: a library caller may have
        mutated it).
    progress:
        Optional callback ``progress(stage, done, total)``; stages are :data:`STAGES`.
    salt:
        Secret salt (≥ 16 bytes) of the deletion-request commitment. ``None`` draws 32 random
        bytes; read them back from ``report.commitment_salt`` (never serialised) to open the
        commitment later or to reproduce the report byte for byte.

    Returns
    -------
    AuditReport
        Configuration, dataset facts, certificate, utility, realized ε, tradeoff curve,
        timings, seeds and environment.
    """
    config.validate()
    started = _now()
    salt = _check_salt(salt)
    tick = progress or (lambda stage, done, total: None)
    seeds = config.seeds()
    device = _device(config.device)
    dtype = getattr(torch, config.dtype)
    timings: dict[str, float] = {}

    tick("data", 0, 1)
    data = load_dataset(config.dataset, seed=seeds["data"], max_train=config.max_train,
                        **_dataset_options(config))
    forget_np = _select_forget(data, config, seeds["forget"])
    X, y = _tensor(data.X_train, dtype, device), torch.as_tensor(data.y_train, device=device)
    forget = torch.as_tensor(forget_np, device=device)
    requests = _requests(forget, config.requests, seeds["forget"])
    n, m = int(X.shape[0]), int(forget.numel())
    tick("data", 1, 1)

    model = build_model(config.model, X.shape[1], data.n_classes,
                        **({"hidden": config.hidden} if config.model == "mlp" else {}))
    objective = Objective(model.to(device=device, dtype=dtype))
    theta0 = default_init(objective, torch.Generator().manual_seed(seeds["init"]), dtype).to(device)
    method = _build_method(config, objective, seeds, forget=forget)

    tick("learn", 0, 1)
    t0 = time.perf_counter()
    theta_orig = method.fit(X, y, theta0)
    timings["learn_s"] = time.perf_counter() - t0
    tick("learn", 1, 1)

    if config.sigma_budget is not None:
        method.rewind = method.rewind_for_sigma(config.sigma_budget, m, config.epsilon,
                                                config.delta, config.mechanism)

    tick("unlearn", 0, 1)
    t0 = time.perf_counter()
    if len(requests) > 1:
        releases = method.serve_requests(requests, config.epsilon, config.delta, config.mechanism)
        theta_unl = releases[-1][0]
    else:
        theta_unl = method.unlearn(forget)
    timings["unlearn_s"] = time.perf_counter() - t0
    tick("unlearn", 1, 1)

    tick("retrain", 0, 1)
    t0 = time.perf_counter()
    theta_ret = method.retrain(forget)
    timings["retrain_s"] = time.perf_counter() - t0
    timings["speedup_vs_retrain"] = timings["retrain_s"] / max(timings["unlearn_s"], 1e-9)
    tick("retrain", 1, 1)

    tick("certify", 0, 1)
    certificate = (releases[-1][1] if len(requests) > 1
                   else method.certify(m, config.epsilon, config.delta, config.mechanism))
    distance = float(torch.linalg.vector_norm(theta_unl - theta_ret))
    realized = _realized(certificate.sigma, config.delta, distance, certificate.sensitivity,
                         certificate.epsilon)
    recovery = _checkpoint_recovery(method, theta_orig)
    tick("certify", 1, 1)

    ledger = None
    if len(requests) > 1:
        t0 = time.perf_counter()
        ledger = _ledger(method, requests, releases, config, theta_ret, tick)
        timings["ledger_s"] = time.perf_counter() - t0

    tick("utility", 0, 1)
    keep = torch.ones(n, dtype=torch.bool, device=device)
    keep[forget] = False
    splits = {
        "retain": (X[keep], y[keep]),
        "forget": (X[forget], y[forget]),
        "test": (_tensor(data.X_test, dtype, device), torch.as_tensor(data.y_test, device=device)),
    }
    noise_gen = torch.Generator().manual_seed(seeds["noise"])
    models = {"original": theta_orig, "unlearned": theta_unl, "retrained": theta_ret}
    utility = {name: _utility(objective, theta, splits, certificate.sigma, config.noise_draws, noise_gen)
               for name, theta in models.items()}
    unseen = (_tensor(data.X_unseen, dtype, device), torch.as_tensor(data.y_unseen, device=device))
    utility["loss_histograms"] = _loss_histograms(
        objective, models, {"forget": splits["forget"], "retain": splits["retain"], "unseen": unseen})
    tick("utility", 1, 1)

    curve = _tradeoff_curve(method, config, objective, forget, m, splits["test"], noise_gen, tick)

    attack_results = None
    # σ = ∞: no finite noise certifies the run. A certificate whose noise is inside training
    # (σ = 0, e.g. DP-SGD) cannot be tested by noise-mode trials: they would all be the same
    # model. (Uncertified methods are still attacked: their noiseless release against the
    # retrained one is exactly what an empirical audit measures.)
    noiseless = (certificate.valid and certificate.sigma == 0 and certificate.sensitivity > 0
                 and config.trial_mode == "noise")
    attacks_skipped = bool(config.attacks) and (not math.isfinite(certificate.sigma) or noiseless)
    if config.attacks and not attacks_skipped:
        ctx = AttackContext(
            objective=objective, method=method,
            method_factory=lambda: _build_method(config, objective, seeds, rewind=getattr(method, "rewind", None),
                                                 forget=forget),
            init=lambda g: default_init(objective, g, dtype).to(device),
            X=X, y=y, forget=forget,
            X_unseen=_tensor(data.X_unseen, dtype, device), y_unseen=torch.as_tensor(data.y_unseen, device=device),
            theta_original=theta_orig, theta_unlearned=theta_unl, theta_retrained=theta_ret,
            sigma=certificate.sigma, delta=config.delta, certified_epsilon=certificate.epsilon,
            realized_epsilon=realized["epsilon"], smoothness=_smoothness(method, certificate, X, y, theta_orig),
            certificate_valid=certificate.valid,
        )
        t0 = time.perf_counter()
        attack_results = run_attacks(
            ctx, attacks=config.attacks, trials=config.trials, mode=config.trial_mode,
            shadow_models=config.shadow_models, confidence=config.confidence,
            relearn_max_steps=config.relearn_max_steps, seed=seeds["attacks"], tick=tick)
        timings["attacks_s"] = time.perf_counter() - t0

    findings = _findings(certificate, realized, utility, attack_results, config.trial_mode)
    if ledger is not None:
        findings += _ledger_findings(ledger)
    if attacks_skipped:
        findings.append({"severity": "warning", "code": "attacks-skipped",
                         "message": "the release adds no output noise, so noise-mode trials would all "
                                    "be the same model; the attacks were skipped (use --trial-mode "
                                    "retrain to attack the randomness inside training)" if noiseless else
                                    "no finite noise certifies this run, so there is no released "
                                    "model to attack; the attacks were skipped"})
    return AuditReport(
        config=config.to_dict(),
        dataset={**data.describe(), "forget_size": m, "source": data.source,
                 "preprocessing": data.preprocessing},
        deletion_request=_commitment(data, forget_np, salt),
        certificate=certificate.to_dict(),
        realized=realized,
        utility=utility,
        tradeoff=curve,
        checkpoint_recovery=recovery,
        parameters={"dimension": objective.dim, "norm_original": _norm(theta_orig),
                    "norm_unlearned": _norm(theta_unl), "norm_retrained": _norm(theta_ret),
                    "sha256_original": _tensor_sha(theta_orig), "sha256_unlearned": _tensor_sha(theta_unl),
                    "sha256_retrained": _tensor_sha(theta_ret)},
        method={"name": method.name, "title": method.title, "paper": method.paper,
                "certified": method.certified, "hyperparameters": method.hyperparameters()},
        timings=timings,
        seeds={"root": config.seed, **seeds},
        environment=environment(device),
        findings=findings,
        attacks=attack_results,
        ledger=ledger,
        started_at=started,
        commitment_salt=salt,
    )


# ----------------------------------------------------------------------------------------
def _device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise InvalidInput("device", "'cpu' or 'auto' on a machine without CUDA", name)
    return torch.device(name)


def _tensor(a: np.ndarray, dtype: torch.dtype, device: torch.device) -> Tensor:
    return torch.as_tensor(np.ascontiguousarray(a), dtype=dtype, device=device)


def _dataset_options(config: AuditConfig) -> dict:
    opts = {}
    if config.label_column is not None:
        opts["label_column"] = config.label_column
    if config.group_column is not None:
        opts["group_column"] = config.group_column
    feature_map = dict(config.feature_map)
    if config.pca_components is not None:
        feature_map["pca_components"] = int(config.pca_components)
    if feature_map:
        opts["feature_map"] = feature_map
    return opts


_FORGET_FIELDS = {"count": "forget_count", "fraction": "forget_fraction",
                  "classes": "forget_class", "n_groups": "forget_groups", "groups": "forget_groups"}


def _select_forget(data: AuditData, config: AuditConfig, seed: int) -> np.ndarray:
    """Select Z; errors name the configuration field the user set, not the loader's argument."""
    options = _forget_options(config)
    try:
        return select_forget(data, seed=seed, **options)
    except InvalidInput as exc:
        used = _FORGET_FIELDS[next(iter(options))]
        field = used if exc.field in ("forget", *options) else exc.field
        raise InvalidInput(field, exc.allowed, exc.got, exc.hint) from None


def _requests(forget: Tensor, n_requests: int, seed: int) -> list[Tensor]:
    """Split Z into the requests served one after another, in a seeded random order."""
    if n_requests > forget.numel():
        raise InvalidInput("requests", f"at most the number of forgotten records ({forget.numel()})", n_requests)
    if n_requests == 1:
        return [forget]
    order = torch.randperm(forget.numel(), generator=torch.Generator().manual_seed(seed)).to(forget.device)
    return list(forget[order].chunk(n_requests))


def _forget_options(config: AuditConfig) -> dict:
    if config.forget_count is not None:  # per request
        return {"count": int(config.forget_count) * int(config.requests)}
    if config.forget_fraction is not None:
        return {"fraction": float(config.forget_fraction)}
    if config.forget_class is not None:
        return {"classes": [int(config.forget_class)]}
    return {"n_groups": int(config.forget_groups)}


def _build_method(config: AuditConfig, objective: Objective, seeds: dict[str, int],
                  rewind: int | None = None, forget: Tensor | None = None) -> Unlearner:
    cls = get_method(config.method)
    options = {"steps": config.steps, "eta": config.eta, "horizon": config.horizon,
               "constants": dict(config.constants), "seed": seeds["estimators"],
               "target_epsilon": config.epsilon, "target_delta": config.delta}
    rewind = config.resolved_rewind() if rewind is None else rewind
    options["rewind"] = config.steps if rewind is None else rewind
    accepted = set(inspect.signature(cls.__init__).parameters) - {"self", "objective"}
    kwargs = {k: v for k, v in options.items() if k in accepted and v is not None}
    unknown = sorted(set(config.method_options) - accepted)
    if unknown:
        raise InvalidInput("method_options", f"options of {config.method} ("
                           + ", ".join(sorted(accepted)) + ")", unknown)
    kwargs.update(config.method_options)
    if kwargs.get("deletable") == "forget" and forget is not None:
        # declare exactly the audited forget set deletable (known in advance, as in the
        # Hessian-free authors' large-model runs): the statistics of no other record are kept
        kwargs["deletable"] = forget.tolist()
    return cls(objective, **kwargs)


def _ledger(method: Unlearner, requests: list[Tensor], releases: list, config: AuditConfig,
            retrained_all: Tensor, tick) -> dict:
    """Record every release of the sequence with its measured distance to retraining
    (``retrained_all``, the retrain without every request, is the last release's reference)."""
    from certify.ledger import PrivacyLedger

    book = PrivacyLedger(delta=config.delta, budget_epsilon=config.budget_epsilon)
    for k, (theta, certificate) in enumerate(releases, start=1):
        tick("ledger", k - 1, len(releases))
        union = torch.cat(requests[:k])
        retrained = retrained_all if k == len(releases) else method.retrain(union)
        distance = float(torch.linalg.vector_norm(theta - retrained))
        realized = _realized(certificate.sigma, config.delta, distance, certificate.sensitivity,
                             certificate.epsilon)
        book.record_certificate(certificate, forget_total=int(union.numel()), distance=distance,
                                realized_epsilon=realized["epsilon"], label=f"request {k}")
    tick("ledger", len(releases), len(releases))
    return book.to_dict()


def _bound_violated(distance: float, sensitivity: float, where: str = "") -> dict:
    return {"severity": "error", "code": "bound-violated",
            "message": f"{where}||theta_U - theta_R|| = {distance:.6g} exceeds the certified "
                       f"sensitivity {sensitivity:.6g}"}


def _ledger_findings(ledger: dict) -> list[dict]:
    findings = []
    for release in ledger["releases"]:
        if release["distance"] > release["sensitivity"] * (1 + 1e-9):
            findings.append(_bound_violated(release["distance"], release["sensitivity"],
                                            f"release {release['index']}: "))
    if ledger["retrain_due"]:
        findings.append({"severity": "warning", "code": "budget-spent",
                         "message": "; ".join(w for w in ledger["warnings"] if "budget" in w)
                         or "the cumulative epsilon exceeds the budget: retrain from scratch"})
    return findings


def _realized(sigma: float, delta: float, distance: float, sensitivity: float, certified: float) -> dict:
    """The ε this very deletion spends: the Gaussian mechanism with Δ = ||θ_U − θ_R||."""
    if distance == 0:
        eps = 0.0
    elif sigma == 0 or not math.isfinite(sigma):
        eps = math.inf if sigma == 0 else 0.0
    else:
        eps = epsilon_for(sigma, delta, distance, "analytic")
    return {
        "distance_unlearned_retrained": distance,
        "sensitivity_bound": sensitivity,
        "bound_slack": (sensitivity / distance) if distance > 0 else math.inf,
        "epsilon": eps,
        "mechanism": "analytic",
        "exceeds_certified": bool(eps > certified * (1 + 1e-9)),
        "bound_violated": bool(distance > sensitivity * (1 + 1e-9)),
    }


def _utility(objective: Objective, theta: Tensor, splits: dict, sigma: float, draws: int,
             gen: torch.Generator) -> dict:
    out: dict[str, dict] = {}
    noisy = [Unlearner.release(theta, sigma, gen) for _ in range(draws)] if sigma > 0 and math.isfinite(sigma) else []
    for split, (Xs, ys) in splits.items():
        entry = {"accuracy": float(objective.accuracy(theta, Xs, ys)),
                 "loss": float(objective.loss(theta, Xs, ys))}
        if noisy:
            accs = torch.stack([objective.accuracy(t, Xs, ys) for t in noisy])
            losses = torch.stack([objective.loss(t, Xs, ys) for t in noisy])
            entry.update(noisy_accuracy_mean=float(accs.mean()), noisy_accuracy_std=float(accs.std()),
                         noisy_loss_mean=float(losses.mean()), noisy_loss_std=float(losses.std()))
        elif math.isfinite(sigma):
            entry.update(noisy_accuracy_mean=entry["accuracy"], noisy_accuracy_std=0.0,
                         noisy_loss_mean=entry["loss"], noisy_loss_std=0.0)
        out[split] = entry
    out["noise_draws"] = len(noisy)
    return out


def _loss_histograms(objective: Objective, models: dict, splits: dict, bins: int = 40) -> dict:
    """Per-record loss histograms (shared bin edges) of each noiseless model on each split.

    Counts, not losses, go into the report: the distribution is what an auditor compares, and
    raw per-record values of the forget set would themselves be personal data.
    """
    losses = {name: {split: objective.per_sample_loss(theta, Xs, ys).detach().cpu().numpy()
                     for split, (Xs, ys) in splits.items()} for name, theta in models.items()}
    top = max(float(np.quantile(v, 0.995)) for per in losses.values() for v in per.values())
    edges = np.linspace(0.0, max(top, 1e-12), bins + 1)
    counts = {name: {split: np.histogram(np.clip(v, 0, edges[-1]), bins=edges)[0].tolist()
                     for split, v in per.items()} for name, per in losses.items()}
    return {"edges": edges.tolist(), "counts": counts,
            "note": "losses above the last edge are counted in the last bin"}


def _tradeoff_curve(method, config, objective, forget, m, test, gen, tick) -> list[dict]:
    """K–σ–ε: for rewinds across [0, T], the bound, the σ it needs, and what it buys."""
    if not hasattr(method, "sensitivity") or not getattr(method, "full_trajectory_", False):
        return []
    T = method.steps
    ks = sorted({int(round(i * T / (config.curve_points - 1))) for i in range(config.curve_points)}
                | {method.rewind})
    retrained = method.retrain(forget)
    rows = []
    for i, K in enumerate(ks):
        tick("tradeoff", i, len(ks))
        sens = method.sensitivity(m, K)
        sigma = sigma_for(config.epsilon, config.delta, sens, config.mechanism) if math.isfinite(sens) else math.inf
        theta = method.unlearn(forget, rewind=K)
        distance = float(torch.linalg.vector_norm(theta - retrained))
        row = {"rewind": K, "rewind_fraction": K / T, "sensitivity": sens, "sigma": sigma,
               "distance": distance, "test_accuracy_noiseless": float(objective.accuracy(theta, *test))}
        if math.isfinite(sigma):
            draws = [objective.accuracy(Unlearner.release(theta, sigma, gen), *test) for _ in range(5)]
            row["test_accuracy_released"] = float(torch.stack(draws).mean())
            row["realized_epsilon"] = (0.0 if distance == 0 else
                                       (epsilon_for(sigma, config.delta, distance, "analytic") if sigma > 0 else math.inf))
        rows.append(row)
    tick("tradeoff", len(ks), len(ks))
    return rows


def _checkpoint_recovery(method, theta_T: Tensor) -> dict | None:
    """Algorithm 3 check: recover θ_{T−K} from θ_T and measure the distance to the real one."""
    if not hasattr(method, "recover_checkpoint"):
        return None
    try:
        recovered, diag = method.recover_checkpoint(theta_T)
    except ValueError as exc:  # η ≥ 1/L: Algorithm 3 does not apply
        return {"applicable": False, "reason": str(exc)}
    true = method.checkpoint(method.steps - method.rewind)
    return {"applicable": True, "distance_to_checkpoint": float(torch.linalg.vector_norm(recovered - true)),
            "checkpoint_norm": _norm(true), **diag}


def _smoothness(method, certificate, X, y, theta) -> float:
    """L of the per-sample loss, for the relearn attack's fixed step 1/L."""
    try:
        return certificate.constant("L").value
    except KeyError:
        consts = model_constants(method.objective, X, y, [theta], generator=torch.Generator().manual_seed(0))
        return consts["L"].value


def _findings(certificate, realized, utility, attack_results=None, trial_mode="noise") -> list[dict]:
    """Errors and warnings. Nothing can be *violated* when nothing was certified: an uncertified
    method or a failed theorem condition gives ``certificate-not-issued`` and the measurements
    stand on their own."""
    findings = []
    if not certificate.valid:
        findings.append({"severity": "error", "code": "certificate-not-issued",
                         "message": "No certificate is issued: " + "; ".join(certificate.warnings)})
        return findings + _utility_findings(utility)
    if certificate.sigma == 0 and certificate.sensitivity > 0:
        # The guarantee rests on noise inside training (e.g. Guo et al.'s loss perturbation),
        # which output-noise trials do not redraw: realized and empirical epsilon of the output
        # mechanism are not comparable with this certificate, so nothing is flagged as violated.
        findings.append({"severity": "warning", "code": "not-comparable",
                         "message": "the certificate adds no output noise (its noise is inside "
                                    "training), so the realized epsilon and the noise-draw attacks "
                                    "do not test it; the measurements are reported for information"})
        return findings + _utility_findings(utility)
    if attack_results is not None:
        cmp = attack_results["comparison"]
        if cmp["certificate_violated"]:
            findings.append({"severity": "error", "code": "certificate-violated",
                             "message": f"CERTIFICATE VIOLATED: the {cmp['best_attack']} attack proves "
                                        f"epsilon >= {cmp['best_empirical_epsilon']:.4g} at "
                                        f"{100 * attack_results['trials']['confidence']:.0f}% confidence, above "
                                        f"the certified epsilon {cmp['certified_epsilon']:.4g}"})
        elif cmp["realized_below_empirical"] and trial_mode == "noise":
            findings.append({"severity": "warning", "code": "empirical-exceeds-realized",
                             "message": f"the {cmp['best_attack']} attack's lower bound "
                                        f"{cmp['best_empirical_epsilon']:.4g} exceeds the realized epsilon "
                                        f"{cmp['realized_epsilon']:.4g}: the auditor is inconsistent"})
    if realized["bound_violated"]:
        findings.append(_bound_violated(realized["distance_unlearned_retrained"], certificate.sensitivity))
    if realized["exceeds_certified"]:
        findings.append({"severity": "error", "code": "realized-exceeds-certified",
                         "message": f"realized epsilon {realized['epsilon']:.6g} exceeds the certified "
                                    f"epsilon {certificate.epsilon:.6g}"})
    if certificate.conditional:
        findings.append({"severity": "warning", "code": "conditional-constants",
                         "message": "The certificate rests on estimated or assumed constants."})
    return findings + _utility_findings(utility)


def _utility_findings(utility) -> list[dict]:
    findings = []
    test_drop = _accuracy_drop(utility["unlearned"]["test"])
    if test_drop is not None and test_drop > 0.02:
        findings.append({"severity": "warning", "code": "utility-loss",
                         "message": f"noise costs {100 * test_drop:.2f} test-accuracy points "
                                    "(see the tradeoff curve for larger rewinds)"})
    return findings


def _accuracy_drop(entry: dict) -> float | None:
    if "noisy_accuracy_mean" not in entry:
        return None
    return entry["accuracy"] - entry["noisy_accuracy_mean"]


def _check_salt(salt: bytes | None) -> bytes:
    if salt is None:
        return secrets.token_bytes(32)
    if not isinstance(salt, (bytes, bytearray)) or len(salt) < 16:
        raise InvalidInput("salt", "at least 16 secret bytes", f"{len(salt) if isinstance(salt, (bytes, bytearray)) else type(salt).__name__}")
    return bytes(salt)


def _commitment(data: AuditData, forget: np.ndarray, salt: bytes) -> dict:
    """A hiding, binding commitment to *which* records were deleted, never the records.

    The identifiers are the records' positions in the dataset's source (stable across splits and
    seeds). Row numbers are a small space, so the salt must stay secret: whoever holds it can
    open the commitment (recompute it from the claimed identifiers); nobody else learns them.
    """
    rows = data.source_rows["train"][forget] if data.source_rows is not None else forget
    identifiers = sorted(int(r) for r in rows)
    message = salt + json.dumps(identifiers, separators=(",", ":")).encode()
    return {
        "scheme": "sha256(salt || JSON array of the sorted source-row identifiers, no spaces)",
        "identifier": "position of the record in the dataset source (0-based)",
        "commitment": hashlib.sha256(message).hexdigest(),
        "n_records": len(identifiers),
        "salt": "kept by the operator, not in this report",
    }


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _norm(t: Tensor) -> float:
    return float(torch.linalg.vector_norm(t))


def _tensor_sha(t: Tensor) -> str:
    return hashlib.sha256(t.detach().cpu().contiguous().numpy().tobytes()).hexdigest()


