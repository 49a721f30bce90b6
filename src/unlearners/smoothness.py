"""The smoothness L and gradient bound G of a model's per-sample loss, closed form or sampled.

Linear models on norm-bounded features get the closed-form global bounds of
:func:`certify.constants.logistic_regression_constants`. For other models no global bound is
available, so the constants are estimated along the training trajectory, in the spirit of
Mu & Klabjan (Rewind-to-Delete), Appendix D, but per sample, as Theorem 3.1 requires:

* G: the largest per-sample gradient norm over every training record at every sampled iterate;
* L: the largest per-sample Hessian spectral norm (power iteration on Hessian-vector products)
  over a random subset of records at every sampled iterate.

Both are multiplied by a safety factor and reported with provenance ``estimated``.

Cost. The samples are what costs (on a 256 x 256 MLP they were 99 % of R2D's fit), so:

* a :class:`ConstantSampler` keeps the samples of one fit, keyed by iterate: asking again at an
  iterate it has seen (R2D's step size at θ_0, then the certificate's constants along the
  trajectory) reuses them, and only the constants asked for (``which``) are sampled;
* for a plain MLP (``nn.Sequential`` of ``nn.Linear`` layers and elementwise activations, what
  :func:`unlearners.models.mlp` builds) both estimators use the layer structure instead of
  ``vmap`` over records: the same numbers to rounding (``tests/test_constants.py``), without
  materialising one d-vector per record per product. See :class:`_MLP`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn
from torch.func import grad, hessian, vmap

from certify.certificate import Constant
from certify.constants import estimated_constant, logistic_regression_constants, user_constant
from unlearners.objective import Objective

#: Defaults of the estimators (the number of records L is sampled on, power-iteration steps,
#: the safety factor on the sampled maxima, records per chunk of G's per-sample gradients).
RECORDS_FOR_SMOOTHNESS = 256
POWER_ITERATIONS = 30
SAFETY_FACTOR = 1.2
CHUNK = 2048

#: Elementwise activations the structured MLP path accepts (their Jacobian is diagonal, so
#: σ'(u) and σ''(u) are the only derivatives the products need).
ELEMENTWISE = (nn.Softplus, nn.Tanh, nn.GELU, nn.SiLU, nn.Sigmoid)


def model_constants(
    objective: Objective,
    X: Tensor,
    y: Tensor,
    iterates: list[Tensor],
    *,
    generator: torch.Generator,
    overrides: dict[str, float] | None = None,
    which: Iterable[str] = ("G", "L"),
    records_for_smoothness: int = RECORDS_FOR_SMOOTHNESS,
    power_iterations: int = POWER_ITERATIONS,
    safety_factor: float = SAFETY_FACTOR,
    chunk: int = CHUNK,
) -> dict[str, Constant]:
    """Return ``{"G": Constant, "L": Constant}`` (those named in ``which``, plus any override) for
    the per-sample loss of ``objective`` on D.

    Parameters
    ----------
    X, y:
        The training set D (every record the bound must cover).
    iterates:
        Points θ along the training trajectory at which to sample (ignored for linear models).
    generator:
        Source of randomness for the record subset and the power-iteration starts.
    overrides:
        User-supplied values (provenance ``assumed``) that replace the computed ones.
    which:
        The constants to compute (G alone is a pass over every record per iterate; L alone is
        power iteration on a subset): a caller that needs one asks for one.
    """
    sampler = ConstantSampler(
        objective,
        X,
        y,
        generator=generator,
        records_for_smoothness=records_for_smoothness,
        power_iterations=power_iterations,
        safety_factor=safety_factor,
        chunk=chunk,
    )
    return sampler.constants(dict(enumerate(iterates)), which=which, overrides=overrides)


class ConstantSampler:
    """The per-sample constants of one training run, sampled at iterates named by the caller.

    Samples are kept per iterate key (e.g. the step t of θ_t), so asking for the constants at a
    set of iterates samples only the keys (and constants) not seen before. The random record
    subset of L is drawn once, at the first L sample, and the power-iteration starts are drawn
    per iterate in the order iterates are first sampled: sampling keys 0, then 0..7, draws
    exactly what one :func:`model_constants` call at the eight iterates draws, so splitting an
    estimate in two calls does not change it.

    ``structured``: None (default) uses the MLP path of :class:`_MLP` when the model is a plain
    MLP; False forces the generic ``vmap`` path (for comparisons).
    """

    def __init__(
        self,
        objective: Objective,
        X: Tensor,
        y: Tensor,
        *,
        generator: torch.Generator,
        records_for_smoothness: int = RECORDS_FOR_SMOOTHNESS,
        power_iterations: int = POWER_ITERATIONS,
        safety_factor: float = SAFETY_FACTOR,
        chunk: int = CHUNK,
        structured: bool | None = None,
    ):
        self.objective, self.X, self.y, self.generator = objective, X, y, generator
        self.records, self.iters, self.safety, self.chunk = (
            records_for_smoothness,
            power_iterations,
            safety_factor,
            chunk,
        )
        self.mlp = _MLP.of(objective) if structured is not False else None
        self._idx: Tensor | None = None
        self._samples: dict[str, dict[Hashable, np.ndarray]] = {"G": {}, "L": {}}
        #: Per-iterate samples actually computed (G and L counted apart): what the cache saved.
        self.computed = {"G": 0, "L": 0}

    def constants(
        self,
        points: Mapping[Hashable, Tensor],
        *,
        which: Iterable[str] = ("G", "L"),
        overrides: Mapping[str, float] | None = None,
        pinned: Mapping[str, Constant] | None = None,
    ) -> dict[str, Constant]:
        """The constants named in ``which`` at the iterates ``points`` (key -> θ).

        ``overrides`` (user values, provenance ``assumed``) and ``pinned`` (constants a replica
        reuses from the fit it was made from, kept as they are) replace the estimate of their
        names, overrides first; nothing is sampled for a replaced name.
        """
        overrides, pinned = dict(overrides or {}), dict(pinned or {})
        wanted: list[str] = [name for name in ("G", "L") if name in set(which)]
        found: dict[str, Constant] = {}
        if self.objective.is_linear:
            # in float64 at any run dtype (a float32 norm may round a row of norm 1 above 1)
            R = float(torch.linalg.vector_norm(self.X.reshape(self.X.shape[0], -1).to(torch.float64), dim=1).max())
            n_classes = 2 if self.objective.n_outputs == 1 else self.objective.n_outputs
            G, L = logistic_regression_constants(R, n_classes)
            found = {name: {"G": G, "L": L}[name] for name in wanted}
        else:  # estimate only what is neither supplied nor pinned (estimation is the slow part)
            for name in wanted:
                if name in overrides:
                    continue
                if name in pinned:
                    found[name] = pinned[name]
                    continue
                for key, theta in points.items():
                    if key not in self._samples[name]:
                        sample = (self._grad_norms if name == "G" else self._hessian_norms)(theta)
                        self._samples[name][key] = sample.cpu().numpy()
                        self.computed[name] += 1
                samples = np.concatenate([self._samples[name][key] for key in points])
                found[name] = self._constant(name, samples, len(points))
        for name, value in overrides.items():
            found[name] = user_constant(name, value, f"{name} supplied by the user")
        return found

    def _constant(self, name: str, samples: np.ndarray, n_points: int) -> Constant:
        if name == "G":
            return estimated_constant(
                "G",
                samples,
                safety_factor=self.safety,
                description="per-sample gradient bound, estimated: max ||grad f_z(theta)|| over all "
                "training records at sampled iterates, times a safety factor",
                estimator=f"exhaustive over {self.X.shape[0]} records at {n_points} iterates",
            )
        assert self._idx is not None, "the L samples came from _hessian_norms, which drew the subset"
        return estimated_constant(
            "L",
            samples,
            safety_factor=self.safety,
            description="per-sample smoothness, estimated: max Hessian spectral norm of f_z by power "
            "iteration over a random subset of records at sampled iterates, times a safety factor",
            estimator=f"power iteration ({self.iters} steps) on {int(self._idx.numel())} records at "
            f"{n_points} iterates",
        )

    # -- the two estimators at one iterate ---------------------------------------------------
    def _grad_norms(self, theta: Tensor) -> Tensor:
        """||∇f_z(θ)|| for every record z of D."""
        norms = []
        for start in range(0, self.X.shape[0], self.chunk):
            Xc, yc = self.X[start : start + self.chunk], self.y[start : start + self.chunk]
            if self.mlp is not None:
                norms.append(self.mlp.grad_norms(theta, Xc, yc))
            else:
                g = self.objective.per_sample_grads(theta, Xc, yc)
                norms.append(torch.linalg.vector_norm(g, dim=1))
        return torch.cat(norms)

    def _hessian_norms(self, theta: Tensor) -> Tensor:
        """Power-iteration estimates of ||∇²f_z(θ)|| for every record z of the subset: from a
        Gaussian start v_0, ``iters`` normalised products, then ||H v||, which never decreases
        with the steps (||H v_{k+1}|| ≥ ||H v_k|| by Cauchy-Schwarz) and never exceeds ||H||."""
        if self._idx is None:
            self._idx = torch.randperm(self.X.shape[0], generator=self.generator)[: self.records].to(self.X.device)
        Xs, ys = self.X[self._idx], self.y[self._idx]
        if theta.is_meta:  # a memory simulation (unlearners.footprint): shapes only, no draw
            v0 = torch.empty((len(self._idx), theta.numel()), dtype=theta.dtype, device="meta")
        else:
            v0 = torch.randn((len(self._idx), theta.numel()), generator=self.generator, dtype=theta.dtype)
            v0 = v0.to(theta.device)
        if self.mlp is not None:
            return self.mlp.hessian_norms(theta, Xs, ys, v0, self.iters)
        objective, iters = self.objective, self.iters

        def one_norm(theta: Tensor, x: Tensor, t: Tensor, v0: Tensor) -> Tensor:
            xb, tb = x.unsqueeze(0), t.unsqueeze(0)
            v = v0 / torch.linalg.vector_norm(v0)
            for _ in range(iters):
                w = objective.hvp(theta, xb, tb, v)
                v = w / (torch.linalg.vector_norm(w) + 1e-30)
            return torch.linalg.vector_norm(objective.hvp(theta, xb, tb, v))

        return vmap(one_norm, in_dims=(None, 0, 0, 0))(theta, Xs, ys, v0)


def step_size(
    objective: Objective,
    X: Tensor,
    y: Tensor,
    theta0: Tensor,
    *,
    eta: float | None,
    horizon: float,
    steps: int,
    generator: torch.Generator,
    overrides: dict[str, float] | None = None,
    sampler: ConstantSampler | None = None,
) -> float:
    """The constant step size: ``eta`` if given, else horizon / (L·T) with L at θ_0.

    First-order certificates grow like exp(η·L·T), so the default fixes the product η·L·T
    (the *horizon*) rather than η itself. Only L is sampled (at key 0); pass the fit's
    ``sampler`` so that the certificate's constants reuse these samples at θ_0.

    Without a sampler, L is estimated in float64 whatever the run's dtype (X and θ_0 cast up
    here): η is a constant of the certificate, and a float32 run (``dtype = auto``) computes it
    as a float64 run does.
    """
    if eta is not None:
        return float(eta)
    if sampler is None:
        X, theta0 = X.to(torch.float64), theta0.to(torch.float64)
        sampler = ConstantSampler(objective, X, y, generator=generator)
    L = sampler.constants({0: theta0}, which=("L",), overrides=overrides)["L"].value
    return horizon / (L * steps)


# -- plain MLPs: the per-record derivatives from the layer structure ----------------------------
@dataclass(frozen=True)
class _Layer:
    weight: int  # index of the weight among the objective's parameters
    bias: int | None
    activation: nn.Module | None  # the elementwise map after the layer (None: the output layer)


class _MLP:
    """Per-record gradient norms and Hessian-vector products of a plain MLP, from its layers.

    For one record with inputs a_{l-1} and pre-activations u_l = W_l a_{l-1} + b_l of layer l,
    g_l = ∂f_z/∂u_l, the gradient of f_z in W_l is the outer product g_l a_{l-1}ᵀ, so

    * ||∇f_z||² = Σ_l ||g_l||² (||a_{l-1}||² + 1[bias]) exactly: no per-record gradient is formed
      (Goodfellow 2015, "Efficient per-example gradient computations", arXiv:1510.01799);
    * a Hessian-vector product H_z v is the directional derivative of that gradient (the
      R-operator, Pearlmutter 1994, "Fast exact multiplication by the Hessian", Neural Comput. 6):
      its W_l block is R(g_l) a_{l-1}ᵀ + g_l R(a_{l-1})ᵀ, two outer products. After the first
      product of a power iteration every iterate is of that form, so it is kept as the factors
      (P_l, Q_l) = (R(g_l), R(a_{l-1})) and the bias block: O(widths) per record instead of O(d),
      and the products that follow need W_l v only through W-block·a and W-blockᵀ·g, which the
      factors give in O(widths).

    The same arithmetic as the generic ``vmap`` path, in another order: equal to rounding.
    Applies to an ``nn.Sequential`` of optional leading ``nn.Flatten``, then ``nn.Linear`` layers,
    each but the last optionally followed by one activation of :data:`ELEMENTWISE`, and no other
    parameter; :meth:`of` returns None for anything else (the generic path then runs).
    """

    def __init__(self, objective: Objective, layers: list[_Layer]):
        self.objective, self.layers = objective, layers

    @classmethod
    def of(cls, objective: Objective) -> _MLP | None:
        model = objective.model
        if type(model) is not nn.Sequential or objective.is_linear:
            return None
        index = {name: i for i, name in enumerate(objective.names)}
        children = list(model.named_children())
        while children and type(children[0][1]) is nn.Flatten:
            if (children[0][1].start_dim, children[0][1].end_dim) != (1, -1):
                return None
            children.pop(0)
        layers, used = [], set()
        k = 0
        while k < len(children):
            name, module = children[k]
            if type(module) is not nn.Linear:
                return None
            act = None
            if k + 1 < len(children) and type(children[k + 1][1]) in ELEMENTWISE:
                act = children[k + 1][1]
                k += 1
            k += 1
            w, b = index.get(f"{name}.weight"), index.get(f"{name}.bias")
            if w is None or (module.bias is not None and b is None):
                return None
            used |= {w} if b is None else {w, b}
            layers.append(_Layer(w, b, act))
        if not layers or layers[-1].activation is not None or used != set(range(len(objective.names))):
            return None
        return cls(objective, layers)

    # -- the forward and backward pass of a batch of records, kept per layer ------------------
    def _primal(self, theta: Tensor, X: Tensor, y: Tensor, second_order: bool) -> dict:
        params = torch.split(theta, self.objective.numels)
        a = X.reshape(X.shape[0], -1)
        inputs: list[Tensor] = []
        pre: list[Tensor] = []
        weights: list[Tensor] = []
        d1: list[Tensor | None] = []  # σ' and σ'' of each layer's activation (None: a linear layer)
        d2: list[Tensor | None] = []
        for layer in self.layers:
            W = params[layer.weight].view(self.objective.shapes[layer.weight])
            b = None if layer.bias is None else params[layer.bias]
            inputs.append(a)
            weights.append(W)
            u = nn.functional.linear(a, W, b)
            pre.append(u)
            if layer.activation is None:  # the output layer, or two linear layers in a row
                d1.append(None)
                d2.append(None)
                a = u
                continue
            act = layer.activation
            # σ' and σ'' of an elementwise map: the gradient of its sum (reverse mode, which
            # every activation supports twice; SiLU has no forward-mode second derivative)
            first = grad(lambda z, act=act: act(z).sum())
            d1.append(first(u))
            d2.append(grad(lambda z: first(z).sum())(u) if second_order else None)  # noqa: B023 (called here)
            a = act(u)

        def loss(o: Tensor, t: Tensor) -> Tensor:
            return self.objective.loss_of_outputs(o.unsqueeze(0), t.unsqueeze(0))[0]

        g: list[Tensor | None] = [None] * len(self.layers)
        g_l = g[-1] = vmap(grad(loss))(a, y)  # ∂f_z/∂(outputs)
        back: list[Tensor | None] = [None] * len(self.layers)  # ∂f_z/∂a_{l-1} = W_lᵀ g_l
        for l in range(len(self.layers) - 1, 0, -1):
            back_l = back[l] = g_l @ weights[l]
            d1_l = d1[l - 1]
            g_l = g[l - 1] = back_l if d1_l is None else d1_l * back_l
        out = {"inputs": inputs, "weights": weights, "g": g, "back": back, "d1": d1, "d2": d2}
        if second_order:
            out["loss_hessian"] = vmap(hessian(loss))(a, y)  # ∂²f_z/∂(outputs)², (N, K, K)
        return out

    def grad_norms(self, theta: Tensor, X: Tensor, y: Tensor) -> Tensor:
        """||∇f_z(θ)|| for every record (rows of X)."""
        with torch.no_grad():
            p = self._primal(theta, X, y, second_order=False)
            total = torch.zeros(X.shape[0], dtype=theta.dtype, device=theta.device)
            for layer, a, g in zip(self.layers, p["inputs"], p["g"]):
                gg = (g * g).sum(1)
                total = total + gg * (a * a).sum(1) + (gg if layer.bias is not None else 0.0)
            return total.sqrt()

    def hessian_norms(self, theta: Tensor, X: Tensor, y: Tensor, v0: Tensor, iters: int) -> Tensor:
        """Power iteration on every record's Hessian from its row of ``v0`` (see the class
        docstring): ``iters`` normalised products, then ||H_z v|| per record."""
        with torch.no_grad():
            p = self._primal(theta, X, y, second_order=True)
            p["aa"] = [(a * a).sum(1) for a in p["inputs"]]
            p["gg"] = [(g * g).sum(1) for g in p["g"]]
            v = self._dense(v0 / torch.linalg.vector_norm(v0, dim=1, keepdim=True))
            for _ in range(iters):
                w = self._product(p, v)
                v = self._scaled(w, 1.0 / (self._norm(p, w) + 1e-30))
            return self._norm(p, self._product(p, v))

    # A direction per record, per layer: ("dense", dW (N, out, in), None, db) or
    # ("factored", P, Q, db) meaning dW_i = P_i a_iᵀ + g_i Q_iᵀ with the layer's primal input a_i
    # and output gradient g_i (Q None: the first layer, whose input does not move).
    def _dense(self, V: Tensor) -> list[tuple]:
        parts = torch.split(V, self.objective.numels, dim=1)
        out = []
        for layer in self.layers:
            shape = self.objective.shapes[layer.weight]
            db = None if layer.bias is None else parts[layer.bias]
            out.append(("dense", parts[layer.weight].reshape(V.shape[0], *shape), None, db))
        return out

    @staticmethod
    def _times_input(l: int, p: dict, block: tuple) -> Tensor:
        """dW_l a_{l-1} per record."""
        kind, P, Q, _ = block
        if kind == "dense":
            return torch.einsum("noi,ni->no", P, p["inputs"][l])
        out = P * p["aa"][l].unsqueeze(1)
        return out if Q is None else out + p["g"][l] * (Q * p["inputs"][l]).sum(1, keepdim=True)

    @staticmethod
    def _transposed_times_grad(l: int, p: dict, block: tuple) -> Tensor:
        """dW_lᵀ g_l per record."""
        kind, P, Q, _ = block
        if kind == "dense":
            return torch.einsum("noi,no->ni", P, p["g"][l])
        out = p["inputs"][l] * (P * p["g"][l]).sum(1, keepdim=True)
        return out if Q is None else out + Q * p["gg"][l].unsqueeze(1)

    def _product(self, p: dict, v: list[tuple]) -> list[tuple]:
        """H_z v for every record (R-operator: forward, then backward), in factored form."""
        L = len(self.layers)
        Ra: list[Tensor | None] = [None] * L  # R(a_{l-1}) (None for the inputs)
        Ru: list[Tensor] = []  # R(u_l)
        for l, layer in enumerate(self.layers):
            r = self._times_input(l, p, v[l])
            if v[l][3] is not None:
                r = r + v[l][3]
            Ra_l = Ra[l]
            if Ra_l is not None:
                r = r + Ra_l @ p["weights"][l].T
            Ru.append(r)
            if l + 1 < L:
                Ra[l + 1] = r if layer.activation is None else p["d1"][l] * r
        Rg: list[Tensor | None] = [None] * L
        Rg_l = Rg[-1] = torch.einsum("nij,nj->ni", p["loss_hessian"], Ru[-1])
        for l in range(L - 1, 0, -1):
            R_back = self._transposed_times_grad(l, p, v[l]) + Rg_l @ p["weights"][l]
            if self.layers[l - 1].activation is None:
                Rg_l = Rg[l - 1] = R_back
            else:
                Rg_l = Rg[l - 1] = p["d2"][l - 1] * Ru[l - 1] * p["back"][l] + p["d1"][l - 1] * R_back
        return [
            ("factored", Rg[l], Ra[l], None if layer.bias is None else Rg[l]) for l, layer in enumerate(self.layers)
        ]

    @staticmethod
    def _norm(p: dict, v: list[tuple]) -> Tensor:
        """The Euclidean norm of every record's (factored) direction, through the Gram identity
        ||P aᵀ + g Qᵀ||² = |P|²|a|² + 2(P·g)(a·Q) + |g|²|Q|² (clamped at 0 against rounding)."""
        total: Tensor | float = 0.0
        for l, (_, P, Q, db) in enumerate(v):
            sq = P.pow(2).sum(1) * p["aa"][l]
            if Q is not None:
                sq = sq + 2 * (P * p["g"][l]).sum(1) * (Q * p["inputs"][l]).sum(1) + p["gg"][l] * Q.pow(2).sum(1)
            total = total + sq.clamp_min(0.0)
            if db is not None:
                total = total + db.pow(2).sum(1)
        assert isinstance(total, Tensor), "a model has at least one layer, so v has a direction"
        return total.sqrt()

    @staticmethod
    def _scaled(v: list[tuple], s: Tensor) -> list[tuple]:
        c = s.unsqueeze(1)
        return [(kind, P * c, None if Q is None else Q * c, None if db is None else db * c) for kind, P, Q, db in v]
