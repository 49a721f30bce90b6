"""DP-SGD (Opacus) as an unlearning baseline: train privately, delete nothing.

Learning A is DP-SGD (Abadi, Chu, Goodfellow, McMahan, Mironov, Talwar & Zhang, "Deep Learning
with Differential Privacy", CCS 2016, Algorithm 1) through Opacus's ``PrivacyEngine``
(Yousefpour et al. 2021, "Opacus: User-Friendly Differential Privacy Library in PyTorch"):
Poisson sampling at rate q, per-sample gradients clipped to norm C, Gaussian noise of std z·C
added to their sum, T steps of SGD. The noise multiplier z is calibrated so that the accountant
(PRV, Gopi, Lee & Wutschitz 2021, by default; RDP, Mironov 2017 / Mironov, Talwar & Zhang 2019,
on request) gives ε ≤ ``target_epsilon`` at ``target_delta`` for one record.

Unlearning U is the identity: U(A(D), D, Z) = A(D). Whatever A(D) reveals about Z it revealed
before the request, and no more than DP-SGD allows for datasets that differ in the m deleted
records: the deletion guarantee is **group privacy** for m records
(:mod:`certify.bounds.group`), which grows with m. The certificate states that ε, not the
record-level target. No noise is added to the released parameters (σ = 0): the privacy is
inside training, so the realized ε and the output-noise attacks do not test this certificate.

A's hyperparameters are fixed by ``fit`` from n = |D| (q = 1/⌈n/B⌉, Opacus's convention; T =
epochs/q; z; the gradient normaliser q·n) and reused unchanged by ``retrain`` on D \\ Z, so that
both worlds run the same mechanism, which is what the DP guarantee compares.
"""

from __future__ import annotations

import contextlib
import copy
import math
import warnings
from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor

from certify.bounds.group import dpsgd_group_epsilon, dpsgd_rdp_epsilon
from certify.certificate import Certificate, Constant, issue
from certify.errors import Choice, Integer, InvalidInput, Optional, Real, require_probability
from certify.params import Param
from unlearners.base import Capabilities, Precision, Unlearner, Worlds
from unlearners.batched import chunk_size
from unlearners.dpsgd_batched import (
    PER_SAMPLE_ELEMENTS,
    Mechanism,
    epoch_randomness,
    gap_budget,
    run_keys,
    train_batched,
)
from unlearners.modelcheck import STATELESS
from unlearners.objective import Objective
from unlearners.training import ROW_BLOCK

ACCOUNTANTS = ("prv", "rdp")
#: Calibrated noise multipliers by (target_epsilon, target_delta, q, T, accountant).
_NOISE_MULTIPLIERS: dict[tuple, float] = {}
DEFAULT_ETA = 0.5
"""SGD step size when ``eta`` is None. The update is η·(sum of clipped gradients + noise)/(q·n),
an average of vectors of norm ≤ C, so η = 0.5 moves θ by at most about C/2 per step: a common
order of magnitude for DP-SGD on small models (Adult, logistic regression: test accuracy is flat
for η between 0.1 and 2)."""


@contextlib.contextmanager
def _one_thread():
    """Run DP-SGD's steps on one CPU thread, then restore the setting.

    A step touches one Poisson batch of a small model: intra-op threads only add
    synchronisation, which oversubscribed cores turn into a 20-fold slowdown (Adult, 4020 steps
    on a busy 2-core machine: 7.6 s on one thread, 138 s on two).
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


class DPSGD(Unlearner):
    """DP-SGD training with Opacus; deletion is a no-op certified by group privacy.

    Options: ``epochs`` (T = epochs·⌈n/B⌉ noisy steps), ``batch_size`` B (capped at n; q =
    1/⌈n/B⌉), ``clip`` C (Opacus ``max_grad_norm``), ``eta`` (None: :data:`DEFAULT_ETA`),
    ``accountant`` (``prv`` or ``rdp``: calibrates z and reports the record-level ε),
    ``target_epsilon`` and ``target_delta`` (the record-level (ε, δ) DP-SGD is calibrated for;
    the audit feeds its requested ε, δ) and ``seed`` (of the sampling and the noise, mixed with θ_0).

    Certificate
    -----------
    Kind ``training-noise``: ``epsilon`` = the group ε for the m deleted records at the requested
    δ (the guarantee the deletion has), no output noise, no parameter-space bound; constants: the
    accountant's record-level ε, the group ε and its route, z, q, T, C.
    """

    name = "dpsgd"
    title = "DP-SGD (Opacus): deletion as a no-op, certified by group privacy"
    paper = (
        "Abadi et al., 'Deep Learning with Differential Privacy' (CCS 2016), Algorithm 1, via Opacus; "
        "group privacy: Vadhan 2017, Lemma 2.2, and Mironov 2017, 'Renyi Differential Privacy', Proposition 2"
    )
    certified = True
    precision = Precision(
        True,
        "the accountant alone: the noise multiplier z, the sampling rate q = 1/ceil(n/B),"
        " the step count T and the clipping norm C, all Python floats (float32 clipping "
        "and noise carry the floating-point caveat of Opacus's own float32 training)",
    )
    model_requirements = frozenset({STATELESS})
    assumptions = (
        "add/remove adjacency: D \\ Z is D with the m deleted records removed",
        "Opacus's accountant bounds the Poisson-subsampled Gaussian mechanism correctly (PRV: an upper "
        "bound within its numerical error budget)",
        "sampling and noise come from counter-based Philox streams keyed by (seed, theta_0) "
        "(unlearners.dpsgd_batched), not a floating-point-hardened sampler (as Opacus with secure_mode=False)",
    )
    deviations = (
        "unlearning does nothing: the record-level guarantee is turned into a group guarantee for the "
        "m deleted records, which grows with m and may exceed the requested epsilon",
        "the group bound is not tight (classic chaining or RDP group privacy, whichever is smaller)",
        "Poisson rate q = 1/ceil(n/B) (Opacus's convention) and the summed clipped gradient divided by the "
        "fixed expected batch size q*n, both fixed at fit time and reused for the retrain",
        "Poisson sampling by geometric gaps between sampled records (about q*n words a step) instead of Opacus's "
        "one uniform per record and step: the same distribution up to the rounding of a logarithm",
        "retrain-mode trials train with a batched re-implementation of Opacus's step (unlearners.dpsgd_batched), "
        "equal to Opacus on the same batches and noise up to summation order (about 1e-16 per step)",
    )
    capabilities = Capabilities(batched_training=True)

    hyperparameters = (
        Param("epochs", 30, Integer(1), "passes over the data"),
        Param("batch_size", 256, Integer(1), "expected batch size B (capped at n)"),
        Param("clip", 1.0, Real(gt=0), "per-sample gradient clipping norm C"),
        Param("eta", None, Optional(Real(gt=0), f"for {DEFAULT_ETA}"), "SGD step size"),
        Param("accountant", "prv", Choice(ACCOUNTANTS), "Opacus accountant that calibrates z"),
        Param("target_epsilon", 1.0, Real(gt=0), "record-level epsilon DP-SGD is calibrated for", audit="epsilon"),
        Param("target_delta", 1e-5, Real(gt=0, lt=1), "record-level delta DP-SGD is calibrated for", audit="delta"),
        Param("seed", 0, Integer(0), "seed of the sampling and the noise (mixed with theta_0)"),
    )

    def __init__(self, objective: Objective, **options: Any):
        super().__init__(objective, **options)
        _check_opacus_supports(objective.model)
        self._epsilon_cache: dict[float, tuple[float, str]] = {}

    # -- A ---------------------------------------------------------------------------------
    def _fit(self, X: Tensor, y: Tensor, theta0: Tensor) -> Tensor:
        """Calibrate z for (target_epsilon, target_delta), then run DP-SGD on D from θ_0."""
        self.theta0_ = theta0.clone()
        n = int(X.shape[0])
        self.batch_size_ = min(self.batch_size, n)
        self.steps_per_epoch_ = math.ceil(n / self.batch_size_)
        self.sample_rate_ = 1.0 / self.steps_per_epoch_
        self.steps_ = self.epochs * self.steps_per_epoch_
        self.normaliser_ = self.sample_rate_ * n  # expected batch size, the same for the retrain
        self.eta_ = DEFAULT_ETA if self.eta is None else self.eta
        self.noise_multiplier_ = self._calibrate()
        self.keys_ = run_keys(self.seed, theta0)
        self._epsilon_cache = {}
        self.theta_, self.history_ = self._train(X, y)
        self.epsilon_spent_ = self.epsilon_one_record(self.target_delta)
        return self.theta_

    def _retrain(self, forget: Tensor) -> Tensor:
        """DP-SGD on D \\ Z with fit's q, z, T, normaliser, θ_0 and seeds."""
        return self._train(*self.retained(forget))[0]

    def _unlearn(self, forget: Tensor) -> Tensor:
        """The identity: A(D) is released unchanged (its guarantee covers the deleted records)."""
        return self.theta_.clone()

    def _calibrate(self) -> float:
        """z for (target_epsilon, target_delta) at (q, T); remembered for the process (a function of
        the key alone), as trials and their replicas refit many times."""
        from opacus.accountants.utils import get_noise_multiplier

        key = (self.target_epsilon, self.target_delta, self.sample_rate_, self.steps_, self.accountant)
        if key in _NOISE_MULTIPLIERS:
            return _NOISE_MULTIPLIERS[key]
        try:
            with warnings.catch_warnings():  # RDP warns about its order range while bracketing z
                warnings.simplefilter("ignore", UserWarning)
                z = float(
                    get_noise_multiplier(
                        target_epsilon=self.target_epsilon,
                        target_delta=self.target_delta,
                        sample_rate=self.sample_rate_,
                        steps=self.steps_,
                        accountant=self.accountant,
                    )
                )
        except ValueError:  # Opacus: "The privacy budget is too low." (z > 1e6)
            raise InvalidInput(
                "target_epsilon",
                "large enough for a noise multiplier <= 1e6 at this sample rate and number of steps",
                self.target_epsilon,
                hint="Raise target_epsilon or target_delta, or lower epochs.",
            ) from None
        _NOISE_MULTIPLIERS[key] = z
        return z

    def _train(self, X: Tensor, y: Tensor) -> tuple[Tensor, list[tuple[float, float, int]]]:
        """One DP-SGD run from θ_0 with Opacus, on the run's sampling and noise streams
        (:mod:`unlearners.dpsgd_batched`); returns θ_T and the accountant's history [(z, q, steps)]."""
        spec, n, dim = self._spec(), int(X.shape[0]), self.objective.dim

        def steps():
            for epoch in range(self.epochs):
                positions, normals = epoch_randomness(self.keys_, n, dim, spec, epoch)
                for row, xi in zip(positions, normals):
                    yield torch.from_numpy(row[row < n]).to(X.device), torch.from_numpy(xi)

        with _one_thread():
            return opacus_descent(self.objective, self.theta0_, X, y, spec, steps(), accountant=self.accountant)

    def _spec(self) -> Mechanism:
        """The mechanism fixed at fit: q, steps per epoch, epochs, C, z and the SGD step η/(q·n)."""
        return Mechanism(
            self.sample_rate_,
            self.steps_per_epoch_,
            self.epochs,
            self.clip,
            self.noise_multiplier_,
            self.eta_ / self.normaliser_,
        )

    def train_many(self, thetas0: Tensor, forget: Tensor, *, chunk: int | None = None) -> Worlds:
        """A, U (the identity) and the retrain of N runs from ``thetas0``, batched
        (:func:`~unlearners.dpsgd_batched.train_batched`): row i equals a replica's
        ``fit``/``unlearn``/``retrain`` from ``thetas0[i]`` on the same streams, up to rounding
        (Opacus sums the clipped gradients in another order).

        A model with a convolution runs Opacus per row instead (the replica's own calls, bit for
        bit the loop path): per-sample gradients of convolutions under two nested ``vmap`` cost more
        than Opacus's hooks (built-in CNN, 200 images: 0.31 s against 0.23 s per trial)."""
        forget = self.forget_indices(forget)
        X, y = self.X_, self.y_
        assert X is not None and y is not None  # forget_indices refuses an unfitted method
        if any(isinstance(m, torch.nn.modules.conv._ConvNd) for m in self.objective.model.modules()):
            worker = self.replica()
            rows = [(worker.fit(X, y, theta0), worker.retrain(forget)) for theta0 in thetas0]
            original, retrained = (torch.stack(column) for column in zip(*rows))
            return Worlds(original, original.clone(), retrained)
        keys = [run_keys(self.seed, theta0) for theta0 in thetas0]
        block = self._block(chunk)
        with _one_thread():
            original = train_batched(self.objective, X, y, thetas0, keys, self._spec(), block=block)
            retrained = train_batched(self.objective, *self.retained(forget), thetas0, keys, self._spec(), block=block)
        return Worlds(original, original.clone(), retrained)

    def _block(self, chunk: int | None) -> int:
        """Runs trained together: the rows batched gradient descent computes together (trial sets
        align their shards to them); where a full-batch gradient allows only one row (n records
        times the widest layer above :data:`~unlearners.batched.CHUNK_ELEMENTS`: the MLP on Adult),
        the largest power of two up to :data:`~unlearners.training.ROW_BLOCK` whose per-sample
        gradients fit :data:`~unlearners.dpsgd_batched.PER_SAMPLE_ELEMENTS`, as a DP-SGD step
        reads about q·n records, not n (the MLP on Adult: 16 rows, 0.30 s against 0.77 s per trial).
        One row there makes the audit's trial groups and shards 64 trials (``audit.trials``), which
        a power of two up to 16 divides, so a trial sits in the same block in any shard."""
        X = self.X_
        assert X is not None  # called by train_many, after fit
        rows = chunk_size(self.objective, X, ROW_BLOCK, chunk)
        if chunk is not None or rows > 1:
            return rows
        per_run = gap_budget(int(X.shape[0]), self.sample_rate_) * self.objective.dim
        rows = ROW_BLOCK
        while rows > 1 and rows * per_run > PER_SAMPLE_ELEMENTS:
            rows //= 2
        return rows

    # -- the guarantee -----------------------------------------------------------------------
    def epsilon_one_record(self, delta: float) -> float:
        """The trained model's record-level ε at δ from the accountant over the steps run.

        PRV cannot resolve very small δ (floating-point limits, far below any δ a user asks for,
        but the classic group route asks for them); there the RDP curve of the same run is used,
        also an upper bound (:meth:`record_level` says which).
        """
        return self.record_level(delta)[0]

    def record_level(self, delta: float) -> tuple[float, str]:
        """(ε, source) at δ: source ``"prv"`` or ``"rdp"``, the curve that gave ε."""
        from opacus.accountants import create_accountant

        self._check_fitted()
        delta = require_probability("delta", delta)
        if delta not in self._epsilon_cache:
            accountant = create_accountant(self.accountant)
            accountant.history = list(self.history_)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                try:
                    found = (float(accountant.get_epsilon(delta=delta)), self.accountant)
                except ValueError:
                    found = (dpsgd_rdp_epsilon(*self._mechanism(), delta), "rdp")
            self._epsilon_cache[delta] = found
        return self._epsilon_cache[delta]

    def _epsilon_bound(self, delta: float) -> float:
        """min(accountant, RDP curve): both bound the record-level ε at δ, so the smaller does too
        (the classic group route evaluates it at tiny δ₁, where the RDP curve is often tighter)."""
        return min(self.epsilon_one_record(delta), dpsgd_rdp_epsilon(*self._mechanism(), delta))

    def _mechanism(self) -> tuple[float, float, int]:
        """(z, q, T) of the run, read back from the accountant's history (one entry)."""
        (z, q, _), steps = self.history_[0], sum(int(h[2]) for h in self.history_)
        return float(z), float(q), steps

    def _certify(self, forget: Tensor, epsilon: float, delta: float, mechanism: str) -> Certificate:
        """Group privacy of the trained model for the deleted records at δ.

        ``epsilon`` is the request: the certificate's ε is the group ε, which a warning compares
        with the request when it is larger.
        """
        m = int(forget.numel())
        z, q, T = self._mechanism()
        one, source = self.record_level(delta)
        # m = 1 is the accountant's own number; larger groups may use the tighter of two valid curves
        curve = self.epsilon_one_record if m == 1 else self._epsilon_bound
        group = dpsgd_group_epsilon(m, delta, epsilon_of_delta=curve, noise_multiplier=z, sample_rate=q, steps=T)
        constants = [
            Constant(
                "epsilon_one_record",
                one,
                "analytic",
                f"record-level epsilon of the trained model at delta = {delta:g}: Opacus's "
                f"{source.upper()} accountant over the {T} noisy steps run",
                {"accountant": source, "requested_accountant": self.accountant},
            ),
            Constant("delta_group", delta, "enforced", f"delta of the guarantee for the m = {m} deleted records"),
            Constant(
                "noise_multiplier",
                z,
                "enforced",
                "z: gradient noise std / clipping norm, calibrated for "
                f"(target_epsilon, target_delta) = ({self.target_epsilon:g}, {self.target_delta:g})",
            ),
            Constant("sample_rate", q, "enforced", "Poisson sampling rate q = 1/ceil(n/B)"),
            Constant("steps", float(T), "enforced", "noisy SGD steps T"),
            Constant("clip", self.clip, "enforced", "per-sample gradient clipping norm C"),
            Constant("m", float(m), "enforced", "deleted records (the group size)"),
        ]
        if math.isfinite(group.epsilon):
            constants.insert(
                1,
                Constant(
                    "epsilon_group",
                    group.epsilon,
                    "analytic",
                    f"epsilon for the m = {m} deleted records: {group.formula}",
                    {
                        "route": group.route,
                        "classic_epsilon": group.classic_epsilon,
                        "delta_one_record": group.delta_one_record,
                        "rdp_group_epsilon": group.rdp_epsilon,
                        "rdp_group_order": group.rdp_order,
                    },
                ),
            )
        return issue(
            self.name,
            "training-noise",
            epsilon=epsilon,
            delta=delta,
            mechanism=mechanism,
            certified_epsilon=group.epsilon,
            theorem=(
                f"DP-SGD (Abadi et al. 2016) is ({one:.4g}, {delta:g})-DP per record ({source.upper()} "
                "accountant); unlearning is the identity, so the released A(D) and the retrained A(D \\ Z) "
                f"are one mechanism's outputs on datasets {m} records apart: group privacy, {group.formula}"
            ),
            constants=constants,
            assumptions=self.assumptions,
            warnings=self._warnings(m, epsilon, delta, one, group.epsilon, group.route),
        )

    def _warnings(self, m: int, epsilon: float, delta: float, one: float, group: float, route: str) -> list[str]:
        out = [
            f"deletion is a no-op: the released model is the DP-SGD model A(D) itself; the guarantee for "
            f"the m = {m} deleted records is DP-SGD's group privacy, epsilon = {group:.4g} at delta = "
            f"{delta:g} ({route})"
        ]
        if not math.isfinite(group):
            out.append(f"no finite group guarantee for m = {m} records at delta = {delta:g}: not issued")
        elif group > epsilon * (1 + 1e-9):
            out.append(
                f"the deletion guarantee for m = {m} records is epsilon_group = {group:.4g} > the requested "
                f"epsilon = {epsilon:g}: DP-SGD was calibrated for one record (accountant epsilon "
                f"{one:.4g}), and group privacy grows with m"
            )
        if (self.target_epsilon, self.target_delta) != (epsilon, delta):
            out.append(
                f"DP-SGD was calibrated for (target_epsilon, target_delta) = ({self.target_epsilon:g}, "
                f"{self.target_delta:g}), not the requested ({epsilon:g}, {delta:g})"
            )
        if self.epsilon_spent_ > self.target_epsilon * (1 + 1e-9):
            out.append(
                f"the accountant's epsilon {self.epsilon_spent_:.4g} exceeds target_epsilon {self.target_epsilon:g}"
            )
        return out

    def report_hyperparameters(self) -> dict:
        out = {
            "epochs": self.epochs,
            "batch_size": self.batch_size,
            "clip": self.clip,
            "eta": getattr(self, "eta_", self.eta),
            "eta_requested": self.eta,
            "accountant": self.accountant,
            "target_epsilon": self.target_epsilon,
            "target_delta": self.target_delta,
            "seed": self.seed,
            "secure_mode": False,
        }
        if getattr(self, "history_", None) is not None:
            z, q, T = self._mechanism()
            out.update(
                noise_multiplier=z,
                sample_rate=q,
                steps=T,
                batch_size_effective=self.batch_size_,
                expected_batch_size=self.normaliser_,
                epsilon_one_record=self.epsilon_spent_,
            )
        return out

    def _check_fitted(self) -> None:
        if getattr(self, "history_", None) is None:
            raise RuntimeError("DPSGD.fit must be called first")


def opacus_descent(
    objective: Objective,
    theta0: Tensor,
    X: Tensor,
    y: Tensor,
    spec: Mechanism,
    steps: Iterable[tuple[Tensor, Tensor]],
    *,
    accountant: str,
) -> tuple[Tensor, list]:
    """DP-SGD through Opacus's ``PrivacyEngine`` from θ_0, one step per (batch indices, ξ) of
    ``steps``: Opacus computes the per-sample gradients, clips and sums them and keeps the
    accountant; the noise it adds is z·C·ξ (its ``add_noise`` with ξ in place of its own
    ``torch.normal`` draw). Returns θ_T and the accountant's history [(z, q, steps)]."""
    from opacus import PrivacyEngine
    from opacus.optimizers.optimizer import _check_processed_flag, _mark_as_processed
    from opacus.utils.uniform_sampler import UniformWithReplacementSampler

    # Opacus trains in training mode (the objective evaluates in evaluation mode: the two differ
    # only for dropout, which the model check reports, as BatchNorm is refused up front)
    net = copy.deepcopy(objective.model).to(device=theta0.device, dtype=theta0.dtype).train()
    start = objective.unflatten(theta0)
    with torch.no_grad():  # θ_0 into the module
        for name, p in net.named_parameters():
            p.copy_(start[name])
    # the loader only tells make_private q = 1/len(loader) (its accountant's rate); batches come from ``steps``
    sampler = UniformWithReplacementSampler(
        num_samples=int(X.shape[0]), sample_rate=spec.sample_rate, steps=spec.steps_per_epoch
    )
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_sampler=sampler)
    with warnings.catch_warnings():  # secure_mode=False, hook notices: documented
        warnings.simplefilter("ignore", UserWarning)
        engine = PrivacyEngine(accountant=accountant, secure_mode=False)
        optimizer = torch.optim.SGD(net.parameters(), lr=spec.lr)
        model, optimizer, _ = engine.make_private(
            module=net,
            optimizer=optimizer,
            data_loader=loader,
            noise_multiplier=spec.noise_multiplier,
            max_grad_norm=spec.clip,
            loss_reduction="sum",
            poisson_sampling=False,
        )
        noise: list[Tensor] = []

        def add_noise() -> None:  # DPOptimizer.add_noise, with the stream's ξ as the standard normals
            for p, xi in zip(optimizer.params, noise[0].split(objective.numels)):
                _check_processed_flag(p.summed_grad)
                p.grad = (p.summed_grad + spec.noise_std * xi.view_as(p.summed_grad)).view_as(p)
                _mark_as_processed(p.summed_grad)

        optimizer.add_noise = add_noise
        for idx, xi in steps:
            noise[:] = [xi.to(device=theta0.device, dtype=theta0.dtype)]
            optimizer.zero_grad()
            objective.loss_of_outputs(model(X[idx]), y[idx]).sum().backward()
            optimizer.step()
    theta = objective.flatten({name: p.detach() for name, p in net.named_parameters()})
    return theta, [tuple(h) for h in engine.accountant.history]


def _check_opacus_supports(model: torch.nn.Module) -> None:
    """Opacus's own ``ModuleValidator`` on the model, before any work: a layer it cannot train
    with per-sample clipping (BatchNorm mixes the records of a batch) is one sentence naming it."""
    from opacus.validators import ModuleValidator

    probe = copy.deepcopy(model).train()
    errors = [e for e in ModuleValidator.validate(probe, strict=False) if "training mode" not in str(e)]
    if errors:
        first = str(errors[0]).split(". ")[0]
        raise InvalidInput(
            "model",
            "a module whose layers Opacus can train with per-sample gradient clipping "
            "(DP-SGD), e.g. GroupNorm instead of BatchNorm",
            f"{len(errors)} unsupported: {first}",
            hint="opacus.validators.ModuleValidator.fix(model) replaces them.",
        )
