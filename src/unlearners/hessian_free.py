"""Hessian-free online unlearning by recollected statistics (Qiao, Zhang, Tang & Wei 2024).

"Efficient Online Unlearning via Hessian-Free Recollection of Individual Data Statistics"
(arXiv:2404.01712, April 2024); the algorithm bodies lost in the paper's text are reconstructed
from the authors' code (``../shared/research/seed-004-hessian-free.md`` §2.2).

* Learning A (Stage I, Eq. 3): mini-batch SGD from θ_0 with per-sample clipping
  ĝ_i = ∇ℓ_i · min(1, C/||∇ℓ_i||), ℓ_i = f_{z_i} + (l2/2)||w||² (the code's per-record loss), and
  step sizes η_t = η q^t decayed per step (Lemma 1; the code's StepLR per batch):

      w_{t+1} = w_t − (η_t/|B_t|) Σ_{i∈B_t} ĝ_i(w_t).

* Statistics (Stage II, Eqs. 7–10), interleaved with training (no checkpoints): one vector
  a_i ∈ R^d per deletable record, by the affine recursion

      a_i ← (I − η_t H̄_t) a_i + 1[i ∈ B_t] (η_t/|B_t|) ĝ_i(w_t),    H̄_t = ∇² (mean ℓ over B_t) at w_t,

  with every (I − η_t H̄_t) a_i a Hessian-vector product (forward-over-reverse, batched with
  ``vmap`` over the approximators): never a Hessian. ``injection="before"`` is the authors'
  code ordering (inject, then multiply), O(η²) apart.
* Unlearning (Stage III): w^{-U} ≈ w_T + Σ_{u∈U} a_u, a vector addition, O(|U|·d); online
  requests (:meth:`HessianFree.delete`, and ``serve_requests``) add the a_u of each request to
  the live model and erase them ("forgetting the recollection"). By Theorem 1 (additivity)
  sequential single deletions equal one batch deletion.
* Reference: the coupled retrain (same θ_0, same batches with U dropped, Eqs. 4–5); the divisor
  stays |B_t| (the paper's linear scaling rule, default) or becomes |B_t \\ U|
  (``retrain_divisor="remaining"``, the authors' retrain script).
* Certificate: Gaussian noise on the released parameters calibrated to the approximation-error
  bound of Theorem 2 (corrected, :func:`certify.bounds.hf.hf_bound`), always for the forget set
  itself (the batches that held it: data-dependent). For logistic regression every
  constant is computed exactly from the data (the spectrum of each batch's Gram matrix bounds
  the Hessian at every w); otherwise the curvature is estimated by power iteration along the
  trajectory and the certificate is conditional.
* Knob (the tradeoff curve): the initial step size η, a different learning algorithm per value
  (``refits``). The certified error grows with η: Lemma 1's divergence D_t ≤ 2ηC(1 − q^t)/(1 − q)
  is linear in η and Theorem 2 (§4 and App. 7.4, ||e_T|| ≤ (2η²C/(1 − q)) ζ_T, the curvature M
  restored) quadratic, so σ grows about like η² while the l2 contraction (1 − η l2)^T is
  negligible; a larger η trains further in the same T steps. The grid stays inside Lemma 2's
  ρ ≤ 1, i.e. η_t (M_t + λ_t) ≤ 2 (Theorem 3's η ≤ 2/(M + λ)), beyond which (I − η_t H̄_t)
  expands and the statistics blow up (:meth:`HessianFree.knob_grid`).

Memory: the n_deletable × d table plus the working memory of the largest step (the per-record
gradients of a batch, the batched Hessian-vector products over the approximators, the curvature
probes), bounded before training by running those steps on meta tensors
(:mod:`unlearners.footprint`) and checked against ``memory_cap``. The deletable
records are ``"all"``, a list, or ``"forget"``: exactly the set the audit declares before
training (:meth:`HessianFree.declare_deletable`), as in the authors' large-model runs.
"""

from __future__ import annotations

import math
import time
from typing import Any

import torch
from torch import Tensor
from torch.func import grad, jvp, vmap

from certify.bounds.hf import (
    RETRAIN_DIVISORS,
    hf_bound,
    hf_contraction_factor,
    hf_divergence_bound,
)
from certify.certificate import Bound, Certificate, Constant, issue
from certify.constants import estimated_constant
from certify.errors import Choice, Integer, InvalidInput, ListOf, OneOf, Optional, Real, require_integer
from certify.params import Param
from unlearners.base import Capabilities, Knob, Precision, Unlearner, record_indices
from unlearners.hessian_free_memory import CURVATURE_PROBES, check_memory, memory_estimate
from unlearners.linalg import dense_solve, power_iteration
from unlearners.modelcheck import SMOOTH, STATELESS
from unlearners.objective import Objective, regularized_loss
from unlearners.smoothness import model_constants

INJECTIONS = ("after", "before")
#: Default cap on what the precomputation holds (table and working memory): 2 GiB.
DEFAULT_MEMORY_CAP = 2**31
CURVATURE_SAFETY = 1.2
#: The paper's initial step size (MNIST logistic regression and CNN, CelebA).
PAPER_ETA = 0.05
#: The statistics may exceed what non-expansive steps allow (Σ_t η_t C/|B_t|) by this factor
#: before they count as blown up: a non-convex model expands mildly along negative curvature; an
#: unstable recursion (η_t λ_max(H̄_t) > 2 for many steps) overshoots by orders of magnitude.
STABILITY_FACTOR = 10.0
#: The tradeoff grid of the knob eta: from this fraction of the configured step size ...
KNOB_LOW_FRACTION = 0.1
#: ... up to this fraction of the stability limit min_t 2/((M_t + max(lambda_t, 0)) q^t) (Lemma 2: rho_t <= 1).
KNOB_STABLE_FRACTION = 0.9


class HessianFree(Unlearner):
    """Hessian-free online unlearning (Qiao et al. 2024): recollected per-record statistics.

    Any model: logistic regression gets an analytic certificate, others a conditional one.
    Options (declared in ``hyperparameters``): ``epochs``, ``batch_size`` (None: full batch, the
    paper's logistic-regression setting), ``eta`` and ``decay`` (η_t = η q^t; paper 0.05 and
    0.995; ``eta=None``: 1/M for logistic regression, M the largest analytic batch-curvature
    bound, so every step contracts (Lemma 2), the paper's 0.05 otherwise), ``clip`` C (paper 10),
    ``l2`` (ℓ_i = f_{z_i} + (l2/2)||w||², paper 1e-6), ``retrain_divisor`` (``"original"``: the
    paper's coupled retrain, divisor |B_t|; ``"remaining"``: the authors' script, |B_t \\ U|),
    ``injection`` (``"after"``: Eq. 8, multiply then inject; ``"before"``: the authors' code),
    ``deletable`` (the records whose statistics are kept: ``"all"``, a list of indices, or
    ``"forget"`` for the set passed to :meth:`declare_deletable` before ``fit``),
    ``memory_cap`` (bytes the precomputation may hold, table and working memory; a larger
    configuration fails before training), ``chunk`` (approximators per
    batched Hessian-vector product) and ``seed`` (mini-batch shuffles and curvature probes).

    The knob of the tradeoff curve is ``eta`` (it refits): the corrected Theorem 2 bound (paper
    §4: Lemma 1's divergence is linear in η, Theorem 2's error 2η²C ζ_T/(1 − q) quadratic) makes σ
    grow about like η², and a larger η trains further in the same steps. :meth:`knob_grid` spans
    a tenth of the step used up to 0.9 times the largest step at which every (I − η_t H̄_t)
    contracts (Lemma 2, ρ_t ≤ 1: η_t (M_t + λ_t) ≤ 2, Theorem 3's η ≤ 2/(M + λ)).
    """

    name = "hf"
    title = "Hessian-free online unlearning"
    paper = (
        "Qiao, Zhang, Tang & Wei, 'Efficient Online Unlearning via Hessian-Free Recollection of "
        "Individual Data Statistics', arXiv:2404.01712 (2024): Eqs. 3-10, Lemmas 1-2, Theorems 1-2"
    )
    certified = True
    precision = Precision(
        False,
        "the corrected Theorem 2 bound from the stored Hessian-vector products of the "
        "trained trajectory and its clipping check: per-step second-order quantities "
        "computed in the run's dtype",
    )
    model_requirements = frozenset({SMOOTH, STATELESS})
    assumptions = (
        "A is mini-batch SGD with per-sample clipping and eta_t = eta q^t; the reference is the "
        "coupled retrain (same start, same batches with the forgotten records dropped)",
        "logistic regression: the curvature of every batch is bounded for all w by the spectrum of "
        "its Gram matrix (analytic); other models: estimated by power iteration (conditional)",
        "the released model is theta_U + N(0, sigma^2 I), fresh noise for every release",
    )
    deviations = (
        "Theorem 2 as printed lacks the curvature factor (dimensionally inconsistent); the bound "
        "used is the step-by-step recursion of its proof with it restored (certify/bounds/hf.py)",
        "statistics are computed during training (no per-step checkpoints), for the declared deletable records only",
        "noise is calibrated by the analytic Gaussian mechanism by default (the paper's implied "
        "calibration is the classic one; the April-2024 code adds none)",
        "every release adds fresh noise to the noiseless online model (not accumulated noise)",
    )
    hyperparameters = (
        Param("epochs", 50, Integer(1), "passes over D (paper: 50 for MNIST logistic regression)"),
        Param("batch_size", None, Optional(Integer(1), "for full batch"), "|B|, the mini-batch size"),
        Param(
            "eta",
            None,
            Optional(Real(gt=0), "for 1/M (logistic regression) or the paper's 0.05"),
            "initial step size; eta_t = eta * decay^t",
            audit="eta",
        ),
        Param("decay", 0.995, Real(gt=0, le=1), "q, the per-step decay of the step size"),
        Param("clip", 10.0, Real(gt=0), "C, the per-sample gradient clipping norm"),
        Param("l2", 1e-6, Real(ge=0), "per-record L2 coefficient: l_i = f_i + (l2/2)||w||^2"),
        Param(
            "retrain_divisor",
            "original",
            Choice(RETRAIN_DIVISORS),
            "the coupled retrain's divisor: |B_t| (original, the paper; certified) or |B_t \\ U| "
            "(remaining, the authors' script; measured only)",
        ),
        Param(
            "injection",
            "after",
            Choice(INJECTIONS),
            "after: Eq. 8 (multiply, then inject); before: the authors' code ordering",
        ),
        Param(
            "deletable",
            "all",
            OneOf((Choice(("all", "forget")), ListOf(Integer(0), distinct=True))),
            "the records whose statistics are kept: all, forget (the set declared before training) "
            "or a list of record indices",
        ),
        Param(
            "memory_cap",
            DEFAULT_MEMORY_CAP,
            Integer(1),
            "most bytes the precomputation may hold: the recollection table plus the working memory "
            "of its largest step",
        ),
        Param("chunk", 256, Integer(1), "approximators per batched Hessian-vector product"),
        Param("seed", 0, Integer(0, 2**63 - 1), "seed of the mini-batch shuffles and curvature probes", audit="seed"),
    )
    capabilities = Capabilities(
        knob=Knob(
            "eta",
            "eta",
            "a larger initial step size trains further in the same T steps, but the certified "
            "error grows with it (Lemma 1's divergence linearly, Theorem 2's bound like eta^2 while "
            "(1 - eta l2)^T stays near 1), so sigma grows; eta_t (M_t + lambda_t) must stay <= 2 "
            "(Lemma 2), beyond which the statistics blow up",
            refits=True,
        ),
        deletable_before_training=True,
        data_dependent_certificate=True,
    )
    #: A non-linear model's estimated curvature (M, L) and the step size (η, q) of the trajectory it was
    #: estimated along: trials and shadow models reuse the fit's; a replica with another step size (the
    #: knob) trains along another trajectory and estimates its own.
    pinned_state = ("curvature_constants_", "curvature_step_")

    def __init__(self, objective: Objective, **options: Any):
        super().__init__(objective, **options)
        self.declared_: tuple[int, ...] | None = None

    def declare_deletable(self, forget: Tensor) -> None:
        """Before ``fit``: with ``deletable="forget"``, exactly the records ``forget`` are
        deletable (their statistics are kept, no other record's); with ``"all"`` or a list the
        option stands and the declaration is ignored. Takes effect at the next ``fit``."""
        try:
            values: object = torch.as_tensor(forget).tolist()
        except (TypeError, ValueError, RuntimeError):
            values = forget
        declared = ListOf(Integer(0), distinct=True).check("forget", values)  # the range is checked at fit
        if self.deletable == "forget":
            self.declared_ = declared

    # -- the per-record loss the paper trains ----------------------------------------------
    def _clipped_grads(self, w: Tensor, X: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """Clipped per-record gradients ĝ_i (rows) and the unclipped norms."""
        g = self.objective.per_sample_grads(w, X, y) + self.l2 * w
        norms = torch.linalg.vector_norm(g, dim=1)
        return g * (self.clip / norms.clamp_min(self.clip)).unsqueeze(1), norms

    def _batch_loss(self, w: Tensor, X: Tensor, y: Tensor) -> Tensor:
        return regularized_loss(self.objective, w, X, y, self.l2)

    def _transition(self, w: Tensor, X: Tensor, y: Tensor, V: Tensor, eta: float) -> Tensor:
        """(I − η H̄) v for every row v of V.

        With more rows than parameters it is cheaper to form H̄ once from d products and
        multiply (the Hessian is still never stored beyond this step); otherwise one product
        per row.
        """
        d = self.objective.dim
        if V.shape[0] > d:
            H = self._hvps(w, X, y, torch.eye(d, dtype=V.dtype, device=V.device))
            return V - eta * (V @ ((H + H.T) / 2))
        return V - eta * self._hvps(w, X, y, V)

    def _hvps(self, w: Tensor, X: Tensor, y: Tensor, V: Tensor) -> Tensor:
        """H̄ v for every row v of V (H̄ the Hessian of the mean batch loss), in chunks.

        Logistic regression uses the closed form H̄ V = (1/|B|) Σ_i S_i (V x̃_i) x̃_iᵀ + l2 V with
        S_i = diag(p_i) − p_i p_iᵀ (σ_i(1 − σ_i) for one logit): two matrix products per chunk.
        Other models: forward-over-reverse products (``jvp`` of ``grad``) vmapped over the rows.
        """
        if V.shape[0] == 0:
            return V
        if self.objective.is_linear:
            return torch.cat([self._linear_hvps(w, X, part) for part in V.split(self.chunk)])
        g = grad(self._batch_loss)
        one = lambda v: jvp(lambda t: g(t, X, y), (w,), (v,))[1]  # noqa: E731
        return torch.cat([vmap(one)(part) for part in V.split(self.chunk)])

    def _linear_hvps(self, w: Tensor, X: Tensor, V: Tensor) -> Tensor:
        K = self.objective.n_outputs
        p = X.shape[1]
        Xt = torch.cat([X, torch.ones(X.shape[0], 1, dtype=X.dtype, device=X.device)], dim=1)
        Wt = torch.cat([w[: K * p].view(K, p), w[K * p :].view(K, 1)], dim=1)
        Vt = torch.cat([V[:, : K * p].view(-1, K, p), V[:, K * p :].view(-1, K, 1)], dim=2)
        Z = Vt @ Xt.T  # (k, K, |B|): the logit directions V x̃_i
        logits = Xt @ Wt.T
        if K == 1:
            s = torch.sigmoid(logits.squeeze(1))
            Z = Z * (s * (1 - s))
        else:
            P = torch.softmax(logits, dim=1).T  # (K, |B|)
            Z = P * Z - P * (P * Z).sum(1, keepdim=True)
        HV = (Z @ Xt) / X.shape[0]  # (k, K, p + 1)
        out = torch.cat([HV[:, :, :p].reshape(V.shape[0], K * p), HV[:, :, p]], dim=1)
        return out + self.l2 * V

    # -- A and Stage II ----------------------------------------------------------------------
    def _fit(self, X: Tensor, y: Tensor, theta0: Tensor) -> Tensor:
        """Train by clipped mini-batch SGD and recollect the statistics of the deletable records."""
        self.__dict__.pop("table_", None)  # a refit that fails leaves no stale statistics behind
        self.__dict__.pop("curvature_constants_", None)
        self.__dict__.pop("curvature_step_", None)
        n, d = int(X.shape[0]), self.objective.dim
        self.tracked_ = self._tracked(n, X.device)
        self.table_bytes_ = int(self.tracked_.numel()) * d * theta0.element_size()
        self.memory_estimate_ = check_memory(self, X, y, theta0, int(self.tracked_.numel()))
        self.row_of_ = torch.full((n,), -1, dtype=torch.long, device=X.device)
        self.row_of_[self.tracked_] = torch.arange(self.tracked_.numel(), device=X.device)
        self.theta0_ = theta0.clone()
        self.batches_ = self._schedule(n, X.device)
        linear_curvature = self._linear_curvature(X) if self.objective.is_linear else None
        self.eta_ = self.eta if self.eta is not None else self._default_eta(linear_curvature)
        self.etas_ = [self.eta_ * self.decay**t for t in range(len(self.batches_))]
        probes = set() if linear_curvature else self._probe_steps()
        probed = []  # iterates where a non-linear model's curvature is estimated after training
        A = torch.zeros(int(self.tracked_.numel()), d, dtype=theta0.dtype, device=theta0.device)
        active = torch.zeros(int(self.tracked_.numel()), dtype=torch.bool, device=X.device)
        w = theta0.clone()
        max_grad = 0.0
        t0 = time.perf_counter()
        for t, batch in enumerate(self.batches_):
            Xb, yb, eta_t = X[batch], y[batch], self.etas_[t]
            if t in probes:
                probed.append((w, batch))
            g, norms = self._clipped_grads(w, Xb, yb)
            max_grad = max(max_grad, float(norms.max()))
            rows = self.row_of_[batch]
            inject = (eta_t / batch.numel()) * g[rows >= 0]
            hit = rows[rows >= 0]
            if self.injection == "before":
                A.index_add_(0, hit, inject)
                active[hit] = True
            idx = active.nonzero().squeeze(1)
            if idx.numel() == A.shape[0]:
                A = self._transition(w, Xb, yb, A, eta_t)
            elif idx.numel():
                A[idx] = self._transition(w, Xb, yb, A[idx], eta_t)
            if self.injection == "after":
                A.index_add_(0, hit, inject)
                active[hit] = True
            w = w - (eta_t / batch.numel()) * g.sum(0)
        self.precompute_s_ = time.perf_counter() - t0
        self.theta_ = w
        self.max_grad_norm_ = max_grad
        self.curvature_ = linear_curvature or self._estimated_curvature(probed)
        self._check_stable(A, X, y)
        self.table_ = A
        self.online_theta_ = w.clone()
        self.deleted_ = torch.zeros(n, dtype=torch.bool, device=X.device)
        return w.clone()

    # -- memory, before training -------------------------------------------------------------
    def memory_estimate(self, X: Tensor, y: Tensor, theta0: Tensor, tracked: int) -> dict[str, int]:
        """An upper bound of the bytes ``fit`` holds beyond its inputs, with ``tracked`` deletable
        records (:func:`unlearners.hessian_free_memory.memory_estimate` says what it counts)."""
        return memory_estimate(self, X, y, theta0, tracked)

    def _check_stable(self, A: Tensor, X: Tensor, y: Tensor) -> None:
        """Refuse statistics that blew up.

        Each a_i is a sum of injections (η_t/|B_t|)ĝ_i, ‖ĝ_i‖ ≤ C, each carried through products
        of (I − η_s H̄_s). When every η_s λ_max(H̄_s) ≤ 2 (and H̄_s ⪰ 0) these factors do not
        expand, so ‖a_i‖ ≤ Σ_t η_t C/|B_t|. Gradient descent on a cross-entropy can train
        at a step where η λ_max(H̄) > 2 (the loss's saturation keeps it bounded: the "edge of
        stability"), but the statistics are its linearisation and grow like Π|1 − η_t λ_max|:
        U's vector addition then adds garbage. Above :data:`STABILITY_FACTOR` times the bound the
        run is refused with the measured numbers and a step size that is stable.
        """
        largest = self._measure_stability(A)
        if math.isfinite(largest) and largest <= STABILITY_FACTOR * self.stability_bound_:
            return
        batch = self.batches_[0]
        top, _ = power_iteration(
            lambda v: self._hvps(self.theta0_, X[batch], y[batch], v[None])[0],
            self.objective.dim,
            iters=30,
            generator=torch.Generator().manual_seed(self.seed),
            dtype=self.theta0_.dtype,
            device=self.theta0_.device,
        )
        safe = (
            f"leave eta unset for 1/M = {1.0 / max(self.curvature_['M']):.4g}, which bounds the curvature at every step"
            if self.objective.is_linear
            else f"take eta below 2/lambda_max = {2.0 / top:.4g} at theta_0 (and check the statistics stay bounded)"
        )
        raise InvalidInput(
            "eta",
            "a step size at which the recollected statistics stay bounded (eta * lambda_max(H_t) <= 2)",
            self.eta_,
            hint=f"At eta = {self.eta_:g} the largest statistic is {largest:.3g}, {largest / self.stability_bound_:.3g} "
            f"times the {self.stability_bound_:.3g} that non-expansive steps allow (at theta_0, eta * lambda_max of "
            f"the first batch Hessian is {self.eta_ * top:.3g}): (I - eta H) amplifies the statistics wherever "
            f"eta * lambda_max > 2, while training itself stays bounded. The unlearned model would be garbage; "
            f"{safe}.",
        )

    def _measure_stability(self, A: Tensor) -> float:
        """The largest statistic, and the bound Σ_t η_t C/|B_t| that non-expansive steps obey."""
        self.stability_bound_ = sum(eta * self.clip / int(b.numel()) for eta, b in zip(self.etas_, self.batches_))
        self.largest_statistic_ = float(torch.linalg.vector_norm(A, dim=1).max()) if A.numel() else 0.0
        return self.largest_statistic_

    @staticmethod
    def _default_eta(curvature: dict | None) -> float:
        """η = 1/max_t M_t for logistic regression (Lemma 2's ρ ≤ 1 at every step, and gradient
        descent's classic safe step); the paper's 0.05 for other models, whose M is unknown
        before training."""
        return 1.0 / max(curvature["M"]) if curvature is not None else PAPER_ETA

    def _tracked(self, n: int, device) -> Tensor:
        """The deletable records, sorted: all, the listed ones, or the declared forget set."""
        if self.deletable == "all":
            return torch.arange(n, device=device)
        if self.deletable == "forget":
            if self.declared_ is None:
                raise InvalidInput(
                    "deletable",
                    "'all', a list of record indices, or 'forget' once the forget set is declared",
                    "forget",
                    hint="deletable='forget' keeps the statistics of the declared forget set only: "
                    "call declare_deletable(forget) before fit (the audit does)",
                )
            chosen = list(self.declared_)
        else:
            chosen = list(self.deletable)
        return torch.sort(record_indices(chosen, n, "deletable", device)).values

    def _schedule(self, n: int, device) -> list[Tensor]:
        """The batches B_0..B_{T−1}: a seeded reshuffle per epoch (the full set when batch_size is None)."""
        size = n if self.batch_size is None else min(self.batch_size, n)
        gen = torch.Generator().manual_seed(self.seed)
        batches = []
        for _ in range(self.epochs):
            order = torch.arange(n) if size == n else torch.randperm(n, generator=gen)
            batches += [part.to(device) for part in order.split(size)]
        return batches

    # -- unlearning ------------------------------------------------------------------------
    def _unlearn(self, forget: Tensor) -> Tensor:
        """w_T + Σ_{u∈Z} a_u, from the trained model (repeatable for records not yet deleted online)."""
        rows = self._rows(forget)
        return self.theta_ + self.table_[rows].sum(0)

    def delete(self, request: Tensor) -> Tensor:
        """Serve one online request: add its statistics to the live model and erase them.

        Returns the live noiseless model after the request (publish it with
        :meth:`Unlearner.release`). A record can be deleted once.
        """
        idx = self.forget_indices(request, field="request")
        self._deletable_now([idx], ["request"])
        return self._delete(idx)

    def _delete(self, idx: Tensor) -> Tensor:
        rows = self.row_of_[idx]
        self.online_theta_ += self.table_[rows].sum(0)
        self.table_[rows] = 0  # forget the recollection: the statistics of u are gone
        self.deleted_[idx] = True
        return self.online_theta_

    def _serve(
        self, requests: list[Tensor], epsilon: float, delta: float, mechanism: str
    ) -> list[tuple[Tensor, Certificate]]:
        """HF's online rule: one vector addition per request on the live model, whose statistics
        are then erased; release k is certified for every record deleted from the live model so
        far (the union of requests 1..k when nothing was deleted online before)."""
        self._deletable_now(requests, [f"requests[{k}]" for k in range(len(requests))])  # before serving any
        out = []
        for request in requests:
            theta = self._delete(request).clone()
            out.append((theta, self._certify(self.deleted_.nonzero().squeeze(1), epsilon, delta, mechanism)))
        return out

    def _deletable_now(self, requests: list[Tensor], fields: list[str]) -> None:
        """Every record of every request has statistics, and none was deleted online before."""
        self._check_fitted()
        for idx, name in zip(requests, fields):
            if bool(self.deleted_[idx].any()):
                raise InvalidInput(name, "records not deleted before", idx[self.deleted_[idx]].tolist())
            self._rows(idx, field=name)

    def _retrain(self, forget: Tensor) -> Tensor:
        """The coupled retrain: same θ_0 and batches with Z dropped (divisor per ``retrain_divisor``)."""
        self._check_fitted()
        X, y = self.fitted_data()
        keep = torch.ones(X.shape[0], dtype=torch.bool, device=X.device)
        keep[forget] = False
        w = self.theta0_.clone()
        for batch, eta_t in zip(self.batches_, self.etas_):
            kept = batch[keep[batch]]
            if kept.numel() == 0:
                continue
            g, _ = self._clipped_grads(w, X[kept], y[kept])
            divisor = batch.numel() if self.retrain_divisor == "original" else kept.numel()
            w = w - (eta_t / divisor) * g.sum(0)
        return w

    def newton_step(self, forget: Tensor, *, damping: float = 0.01) -> Tensor:
        """The paper's Newton-step baseline (NS, Sekhari et al. 2021; Qiao et al. §6.4) on the same model.

        w_T + (1/(n−m)) H̄'^{-1} Σ_{u∈Z} ∇ℓ_u(w_T), with H̄' the mean Hessian of ℓ over D \\ Z at w_T
        (explicit, d × d, Cholesky): one Newton step on the retained objective from the trained
        model. ``damping`` is added to H̄' (the paper: 0.01, without which the step explodes along
        directions only the forgotten records span). For the comparison of the paper's Fig. 2, not
        a certified release.
        """
        self._check_fitted()
        idx = self.forget_indices(forget)
        X, y = self.fitted_data()
        keep = torch.ones(X.shape[0], dtype=torch.bool, device=X.device)
        keep[idx] = False
        w, d = self.theta_, self.objective.dim
        eye = torch.eye(d, dtype=w.dtype, device=w.device)
        H = self._hvps(w, X[keep], y[keep], eye)
        g = (self.objective.per_sample_grads(w, X[idx], y[idx]) + self.l2 * w).sum(0)
        return w + dense_solve((H + H.T) / 2, g / int(keep.sum()), damping=damping)

    # -- the knob (eta) -----------------------------------------------------------------------
    def stable_eta_limit(self) -> float:
        """The largest initial step η at which every factor (I − η q^t H̄_t) of the fitted run's
        curvature bounds is non-expansive: min_t 2 / ((M_t + max(λ_t, 0)) q^t) (Lemma 2: ρ_t ≤ 1
        iff η_t (M_t + λ_t) ≤ 2; Theorem 3's η ≤ 2/(M + λ)). Logistic regression: the analytic
        bounds, valid at every w, hence along the trajectory of every η; other models: the
        curvature estimated along this fit's trajectory (2/M, what :meth:`_check_stable` asks of
        η; a replica at another η estimates its own)."""
        self._check_fitted()
        cur = self.curvature_
        limit = math.inf
        for t, (M, lam) in enumerate(zip(cur["M"], cur["lam"])):
            scale = (M + max(lam, 0.0)) * self.decay**t  # 0 once q^t underflows: no limit at step t
            if scale > 0:
                limit = min(limit, 2.0 / scale)
        return limit

    def knob_grid(self, points: int) -> list[float]:
        """``points`` step sizes η, geometric from a tenth of the fitted η up to 0.9 times
        :meth:`stable_eta_limit` (σ grows about like η², Theorem 2). The fitted η lies in the
        range; a configured η above 0.9 times the limit (the fit accepted it) is the grid's top."""
        points = require_integer("points", points, 1)
        self._check_fitted()
        limit = self.stable_eta_limit()
        low = KNOB_LOW_FRACTION * self.eta_
        top = max(KNOB_STABLE_FRACTION * limit if math.isfinite(limit) else self.eta_ / KNOB_LOW_FRACTION, self.eta_)
        if points == 1:
            return [float(self.eta_)]
        return [float(low * (top / low) ** (i / (points - 1))) for i in range(points - 1)] + [float(top)]

    # -- certificate -------------------------------------------------------------------------
    def _linear_curvature(self, X: Tensor) -> dict:
        """Per-step constants of logistic regression, valid at every w: M_t ⪰ H̄_t (c·λ_max of the
        batch Gram matrix + l2, c the sup of the output curvature, Böhning for softmax),
        λ_t = l2 ⪯ H̄_t, L̄_t the mean per-record smoothness, and the gradient bound G."""
        c = 0.25 if self.objective.n_outputs == 1 else 0.5
        Xt = torch.cat([X, torch.ones(X.shape[0], 1, dtype=X.dtype, device=X.device)], dim=1)
        per_batch: dict[bytes, tuple[float, float]] = {}  # full batch: one eigenvalue problem
        M, Lbar = [], []
        for batch in self.batches_:
            key = batch.cpu().numpy().tobytes()
            if key not in per_batch:
                B = Xt[batch]
                per_batch[key] = (
                    c * float(torch.linalg.eigvalsh(B.T @ B / batch.numel())[-1]) + self.l2,
                    c * float((B**2).sum(1).mean()) + self.l2,
                )
            M.append(per_batch[key][0])
            Lbar.append(per_batch[key][1])
        G = math.sqrt((2.0 if c == 0.5 else 1.0) * float((Xt**2).sum(1).max()))
        return {"analytic": True, "M": M, "lam": [self.l2] * len(M), "Lbar": Lbar, "G": G, "output_curvature": c}

    def _probe_steps(self) -> set[int]:
        T = len(self.batches_)
        return {int(round(i * (T - 1) / max(CURVATURE_PROBES - 1, 1))) for i in range(CURVATURE_PROBES)}

    def _estimated_curvature(self, probed: list[tuple[Tensor, Tensor]]) -> dict:
        """A non-linear model: ||H̄_t|| by power iteration (both ends of the spectrum) at iterates
        spread along the trajectory, times a safety factor; the certificate becomes conditional."""
        T = len(self.batches_)
        step = (self.eta_, self.decay)
        pinned = self.pinned_.get("curvature_constants_")
        if pinned is None or self.pinned_.get("curvature_step_") != step:
            # a replica reuses the constants of the fit it was made from, along the same step sizes
            pinned = self._curvature_constants(probed)
        self.curvature_constants_, self.curvature_step_ = pinned, step
        M, L = pinned
        return {
            "analytic": False,
            "M_constant": M,
            "L_constant": L,
            "M": [M.value] * T,
            "lam": [-M.value] * T,
            "Lbar": [L.value + self.l2] * T,
        }

    def _curvature_constants(self, probed: list[tuple[Tensor, Tensor]]) -> tuple[Constant, Constant]:
        gen = torch.Generator().manual_seed(self.seed)
        samples = []
        X, y = self.fitted_data()
        for w, batch in probed:
            Xb, yb = X[batch], y[batch]
            hvp = lambda v: jvp(lambda u: grad(self._batch_loss)(u, Xb, yb), (w,), (v,))[1]  # noqa: E731, B023
            top, _ = power_iteration(hvp, self.objective.dim, iters=30, generator=gen, dtype=w.dtype, device=w.device)
            low, _ = power_iteration(
                lambda v: -hvp(v),  # noqa: B023 (called at once, inside this iteration)
                self.objective.dim,
                iters=30,
                generator=gen,
                dtype=w.dtype,
                device=w.device,
            )
            samples.append(max(abs(top), abs(low)))
        M = estimated_constant(
            "M",
            samples,
            safety_factor=CURVATURE_SAFETY,
            estimator="power iteration",
            description="||mean batch Hessian|| along the training trajectory",
        )
        L = model_constants(self.objective, X, y, [self.theta0_, self.theta_], generator=gen, which=("L",))[
            "L"
        ]  # G is not used by the bound
        return M, L

    def error_bound(self, forget: Tensor | None = None, forget_size: int | None = None) -> tuple[float, dict]:
        """The corrected Theorem 2 bound for the forget set, or (``forget_size=m``) the worst case
        for any m records (they share every batch): the value and its diagnostics."""
        bound, info = self._bound(self._fractions(forget, forget_size), self._forget_size(forget, forget_size))
        return bound.value, info

    def _forget_size(self, forget: Tensor | None, forget_size: int | None) -> int:
        if forget is not None:
            return int(self.forget_indices(forget).numel())
        assert forget_size is not None, "error_bound's _fractions, evaluated first, refuses neither"
        return int(forget_size)

    def _fractions(self, forget: Tensor | None, forget_size: int | None) -> list[float]:
        """f_t = |U ∩ B_t| / |B_t| for the forget set, or min(m, |B_t|)/|B_t| for a size m."""
        self._check_fitted()
        X, _ = self.fitted_data()
        if forget is not None:
            mark = torch.zeros(X.shape[0], dtype=torch.bool, device=X.device)
            mark[self.forget_indices(forget)] = True
            return [float(mark[b].sum()) / b.numel() for b in self.batches_]
        if forget_size is None:
            raise InvalidInput("forget", "a forget set, or forget_size for the worst case of that size", None)
        m = require_integer("forget_size", forget_size, 1, int(X.shape[0]))
        return [min(m, b.numel()) / b.numel() for b in self.batches_]

    def _bound(self, f: list[float], m: int) -> tuple[Bound, dict]:
        """The certificate's :class:`Bound` (:func:`hf_bound`) for per-step forgotten fractions ``f``."""
        cur = self.curvature_
        clip_inactive = bool(cur["analytic"]) and self._clip_inactive()
        rho_err = [hf_contraction_factor(e, lam, M) for e, lam, M in zip(self.etas_, cur["lam"], cur["M"])]
        if clip_inactive:
            rho_div = [hf_contraction_factor(e, self.l2 * (1 - ft), M) for e, ft, M in zip(self.etas_, f, cur["M"])]
            kappa = list(cur["M"])
        else:
            rho_div = None
            kappa = [lb + M for lb, M in zip(cur["Lbar"], cur["M"])]
        C = min(self.clip, cur["G"] + self.l2 * self._radius()) if cur["analytic"] else self.clip
        D = hf_divergence_bound(self.etas_, C, f, rho_div)
        extra = None
        if self.injection == "before":
            extra = [M * ft * C for M, ft in zip(cur["M"], f)]
        T = len(self.batches_)
        clip = Constant(
            "C",
            C,
            "enforced" if not cur["analytic"] else "analytic",
            f"bound on every applied per-record gradient: clip = {self.clip:g}"
            + (" or the closed-form gradient bound G + l2 ||w||, whichever is smaller" if cur["analytic"] else ""),
            {"clip": self.clip, "max_measured_gradient_norm": self.max_grad_norm_},
        )
        if cur["analytic"]:
            curvature = (
                Constant(
                    "M",
                    max(cur["M"]),
                    "analytic",
                    f"largest per-step bound on the mean batch Hessian, {cur['output_curvature']:g} * lambda_max "
                    "of the batch Gram matrix (bias included) + l2: holds at every w",
                    {"steps": T},
                ),
                Constant("G", cur["G"], "analytic", "closed-form per-record gradient bound (R = max ||(x, 1)||)"),
            )
        else:
            curvature = (cur["M_constant"], cur["L_constant"])
        bound = hf_bound(
            self.etas_,
            rho_err,
            kappa,
            D,
            clip=clip,
            curvature=curvature,
            decay=self.decay,
            l2=self.l2,
            forget_size=m,
            retrain_divisor=self.retrain_divisor,
            injection_before=extra,
            divergence_contracted=rho_div is not None,
            steps_note=f" ({self.epochs} epochs)",
            eta_note=""
            if self.eta is not None
            else (
                " (chosen as 1/M, M the largest batch-curvature bound)" if cur["analytic"] else " (the paper's default)"
            ),
        )
        return bound, {
            "clip_inactive": clip_inactive,
            "divergence_bound": D[-1],
            "applied_clip_bound": C,
            "max_contraction": max(rho_err),
            "max_curvature": max(cur["M"]),
        }

    def _radius(self) -> float:
        """A bound on ||w_t|| along both coupled runs: ||θ_0|| + CΣη_t (each step averages clipped
        gradients, so it moves w by at most η_t C; the retrain's divisor |B_t| ≥ |B_t \\ U|)."""
        return float(torch.linalg.vector_norm(self.theta0_)) + self.clip * sum(self.etas_)

    def _clip_inactive(self) -> bool:
        """True when no per-record gradient can reach C at any w either run visits (linear models)."""
        return self.curvature_["G"] + self.l2 * self._radius() <= self.clip

    def _certify(self, forget: Tensor, epsilon: float, delta: float, mechanism: str) -> Certificate:
        """Gaussian output noise calibrated to the corrected Theorem 2 bound for deleting exactly
        ``forget`` (the batches that held it: data-dependent, whatever ran before)."""
        bound, info = self._bound(self._fractions(forget, None), int(forget.numel()))
        warnings = []
        if not info["clip_inactive"]:
            warnings.append(
                "clipping may be active or the loss is non-convex: Lemma 1 alone bounds the "
                "trajectory divergence, which does not shrink with the number of deleted records"
            )
        return issue(
            self.name,
            "output-noise",
            epsilon=epsilon,
            delta=delta,
            mechanism=mechanism,
            bound=bound,
            assumptions=self.assumptions,
            warnings=warnings,
        )

    # -- helpers -----------------------------------------------------------------------------
    def replica(self, **overrides: Any) -> HessianFree:
        """:meth:`Unlearner.replica`, sharing the measured working memory of the phases that do
        not depend on the deletable records (keyed by the shapes, dtypes and chunk, so a replica
        with other ones measures its own): the tradeoff's refits, one per η, and the trials'
        would otherwise each simulate the same steps on meta tensors again."""
        twin = super().replica(**overrides)
        if "_phases" in self.__dict__:  # set by unlearners.hessian_free_memory.memory_plan
            twin.__dict__["_phases"] = self.__dict__["_phases"]
        return twin

    def pinned_options(self) -> dict[str, Any]:
        return {"eta": self.eta_} if getattr(self, "eta_", None) is not None else {}

    def report_hyperparameters(self) -> dict:
        out = {
            "epochs": self.epochs,
            "batch_size": self.batch_size,
            "eta": getattr(self, "eta_", self.eta),
            "eta_requested": self.eta,
            "decay": self.decay,
            "clip": self.clip,
            "l2": self.l2,
            "retrain_divisor": self.retrain_divisor,
            "injection": self.injection,
            "memory_cap": self.memory_cap,
            "seed": self.seed,
            "deletable": self._deletable_report(),
        }
        if hasattr(self, "table_"):
            out.update(
                steps=len(self.batches_),
                table_bytes=self.table_bytes_,
                precompute_s=self.precompute_s_,
                max_gradient_norm=self.max_grad_norm_,
                largest_statistic=self.largest_statistic_,
                non_expansive_statistic_bound=self.stability_bound_,
            )
        return out

    def _deletable_report(self) -> str | int:
        """ "all", or how many records are deletable (the declared forget set or the listed ones)."""
        if self.deletable == "all":
            return "all"
        if self.deletable == "forget":
            return "forget" if self.declared_ is None else len(self.declared_)
        return len(self.deletable)

    def _check_fitted(self) -> None:
        if not hasattr(self, "table_"):
            raise RuntimeError("HessianFree.fit must be called before unlearning")

    def _rows(self, forget: Tensor, field: str = "forget") -> Tensor:
        """The table rows of validated indices: refused for records without statistics (not
        declared deletable, or already deleted online, whose statistics are erased)."""
        self._check_fitted()
        rows = self.row_of_[forget]
        if bool((rows < 0).any()):
            raise InvalidInput(
                field,
                "records declared deletable before training (option deletable)",
                f"{int((rows < 0).sum())} record(s) without statistics",
            )
        if bool(self.deleted_[forget].any()):
            raise InvalidInput(
                field,
                "records whose statistics were not erased by an online deletion (delete / serve_requests)",
                forget[self.deleted_[forget]].tolist(),
            )
        return rows
