"""A learning problem as pure functions of one flat parameter vector θ ∈ R^d.

Every unlearning method manipulates θ directly (noise, distances, Hessian-vector products,
rewinding), so the model is reduced once to functions of a flat tensor through
``torch.func.functional_call``. All functions are pure and can be batched over many parameter
vectors with ``torch.func.vmap(fn, in_dims=(0, None, ...))``.

Loss convention: a model with one output unit is a binary classifier trained with the logistic
loss on labels {0, 1}; a model with C > 1 outputs uses softmax cross-entropy on labels 0..C-1.

Closed forms for linear models. When the model is exactly one ``nn.Linear`` (alone, or in an
``nn.Sequential`` with only ``nn.Flatten()``/``nn.Identity`` around it: what
:func:`unlearners.models.logistic_regression` builds), logits, gradients, per-sample gradients
and Hessian-vector products are written with plain tensor ops instead of ``torch.func``
transforms. With z = W x + b, r = ∂ℓ/∂z = σ(z) − y (logistic) or softmax(z) − e_y (cross-entropy)
and Λ = ∂²ℓ/∂z² = σ(1 − σ) or diag(p) − p pᵀ:

    ∇f_z = r ⊗ [x, 1],   ∇²f_z v = (Λ (V x + v_b)) ⊗ [x, 1]

(Bishop 2006, *Pattern Recognition and Machine Learning*, §4.3.2 Eq. 4.91 and 4.97, §4.3.4
Eq. 4.109-4.110). They equal the autograd values to rounding (``tests/test_objective.py``),
remain differentiable and ``vmap``-able, and remove the fixed cost of the transforms, which
dominates on small linear models. On the default Adult logistic regression (34,190 records,
d = 3, one thread; ``bench/bench_objective.py``): gradient 1.65 -> 0.27 ms, per-sample gradients
6.3 -> 0.43 ms, Hessian-vector product 9.0 -> 0.40 ms, 100 gradient-descent steps 275 -> 40 ms,
and the first call 1.34 s -> 0.04 s (it no longer imports ``torch._dynamo``). ``loss`` and
``logits`` skip ``functional_call`` too (1.1-1.5x, within noise for the loss, whose
cross-entropy dominates). A model that only looks linear (``is_linear``) but is not exactly this
shape keeps the ``torch.func`` path.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.func import functional_call, grad, grad_and_value, jvp, vjp, vmap

from certify.errors import InvalidInput

#: Records per chunk of a non-linear model's full-batch gradient (see :meth:`Objective.grad`).
GRAD_CHUNK = 1024


class Objective:
    """The empirical risk f_D(θ) = (1/n) Σ f_{z_i}(θ) of a model, as functions of a flat θ.

    Parameters
    ----------
    model:
        An ``nn.Module`` whose parameters define the layout of θ. Its own parameter values
        are ignored: θ is always passed explicitly.
    n_outputs:
        Output units of the model (1 for a binary model, C otherwise); ``None`` reads them from
        the last ``nn.Linear`` layer.

    Notes
    -----
    The per-sample loss f_z is unregularised; methods that need a regulariser add it
    themselves, so the constants of every theorem refer to the same f_z.

    The model is put in evaluation mode: the objective is a pure function of θ, so dropout is
    off and normalisation layers use their running statistics: the module's own (untrained) ones,
    unless ``with_buffers``. Methods whose theorem cannot cover such layers refuse their
    certificate (:mod:`unlearners.modelcheck`).

    ``with_buffers``: θ also holds the module's floating-point buffers (BatchNorm's
    ``running_mean`` and ``running_var``; not the integer ``num_batches_tracked``), after the
    parameters, in the module's order. A model trained by the caller's own code
    (:mod:`unlearners.caller`) computes with the statistics its training left, so every release,
    distance, loss and attack must see them; the toolkit's own algorithms never update buffers.
    """

    #: Why ``torch.func`` cannot differentiate the model record by record (the audit's probe,
    #: :func:`audit.audited_model.prepare`), or None: attacks that need gradients then refuse.
    gradient_failure: str | None = None

    def __init__(self, model: nn.Module, n_outputs: int | None = None, *, with_buffers: bool = False):
        self.model = model.eval()
        state: list[tuple[str, Tensor]] = list(model.named_parameters())
        #: The buffers θ holds after the parameters (empty unless ``with_buffers``).
        self.buffer_names = [name for name, b in model.named_buffers() if b.is_floating_point()] if with_buffers else []
        buffers = dict(model.named_buffers())
        state += [(name, buffers[name]) for name in self.buffer_names]
        self.names = [name for name, _ in state]
        self.shapes = [p.shape for _, p in state]
        self.numels = [p.numel() for _, p in state]
        self.dim = int(sum(self.numels))
        self.n_outputs = int(_output_units(model) if n_outputs is None else n_outputs)
        #: The layout of θ when the model computes exactly W·flatten(x) + b (see the module
        #: docstring), else None.
        self.linear_layout = _closed_form_layout(model, self.names, self.n_outputs)
        #: True for logistic (softmax) regression: closed-form derivatives and constants apply.
        #: Decided by what the model computes, not by counting parameters: a single Linear
        #: followed by Tanh has a logistic regression's parameters but not its constants.
        self.is_linear = self.linear_layout is not None

    # -- layout ----------------------------------------------------------------------
    def unflatten(self, theta: Tensor) -> dict[str, Tensor]:
        """Split a flat θ of shape (d,) into the model's named parameter tensors (views)."""
        chunks = torch.split(theta, self.numels)
        return {n: c.view(s) for n, c, s in zip(self.names, chunks, self.shapes)}

    def flatten(self, params: dict[str, Tensor]) -> Tensor:
        """Concatenate named parameters (in the model's order) into one flat vector."""
        return torch.cat([params[n].reshape(-1) for n in self.names])

    # -- forward ---------------------------------------------------------------------
    def logits(self, theta: Tensor, X: Tensor) -> Tensor:
        """Model outputs for inputs X: shape (N,) for a binary model, (N, C) otherwise."""
        feats = self._features(X)
        if feats is not None:
            W, b = self._weights(theta)
            out = nn.functional.linear(feats, W, b)  # what nn.Linear.forward computes
        else:
            out = functional_call(self.model, self.unflatten(theta), (X,))
        return out.squeeze(-1) if self.n_outputs == 1 else out

    def per_sample_loss(self, theta: Tensor, X: Tensor, y: Tensor) -> Tensor:
        """f_z(θ) for every record: shape (N,)."""
        return self.loss_of_outputs(self.logits(theta, X), y)

    def loss_of_outputs(self, out: Tensor, y: Tensor) -> Tensor:
        """The per-record loss of model outputs (as :meth:`logits` returns them, or the module's
        raw (N, 1) output for a binary model): logistic for one unit, cross-entropy otherwise."""
        if self.n_outputs == 1:
            out = out.reshape(out.shape[0]) if out.dim() == 2 else out
            return nn.functional.binary_cross_entropy_with_logits(out, y.to(out.dtype), reduction="none")
        return nn.functional.cross_entropy(out, y, reduction="none")

    def loss(self, theta: Tensor, X: Tensor, y: Tensor) -> Tensor:
        """f_D(θ): the mean per-sample loss (a scalar tensor)."""
        return self.per_sample_loss(theta, X, y).mean()

    def predict(self, theta: Tensor, X: Tensor) -> Tensor:
        """Predicted labels: shape (N,), int64."""
        return self.labels_of_outputs(self.logits(theta, X))

    def labels_of_outputs(self, out: Tensor) -> Tensor:
        """The labels model outputs (as :meth:`logits` returns them) predict: shape (N,), int64."""
        if self.n_outputs == 1:
            return (out > 0).long()
        return out.argmax(dim=-1)

    def accuracy(self, theta: Tensor, X: Tensor, y: Tensor) -> Tensor:
        """Fraction of correctly predicted labels (scalar tensor)."""
        return (self.predict(theta, X) == y).to(theta.dtype).mean()

    # -- derivatives -----------------------------------------------------------------
    def grad(self, theta: Tensor, X: Tensor, y: Tensor) -> Tensor:
        """∇f_D(θ): shape (d,).

        A non-linear model's gradient over many records is summed over chunks of
        :data:`GRAD_CHUNK` records: the same value up to summation order (7e-7 apart in float32),
        and 1.6x faster for the built-in CNN on 10,000 MNIST images on 2 cores (1.09 s against
        0.68 s; the activations of a chunk stay in cache)."""
        feats = self._features(X)
        if feats is not None:
            R = self._residuals(theta, feats, y)
            return self._assemble(R.mT @ feats, R.sum(0), 1.0 / feats.shape[0])
        n = int(X.shape[0])
        if self.is_linear or n <= GRAD_CHUNK:
            return grad(self.loss)(theta, X, y)
        total = grad(self._summed_loss)
        return sum(total(theta, X[i : i + GRAD_CHUNK], y[i : i + GRAD_CHUNK]) for i in range(0, n, GRAD_CHUNK)) / n

    def loss_and_grad(self, theta: Tensor, X: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """(f_D(θ), ∇f_D(θ)), equal to :meth:`loss` and :meth:`grad`: one forward pass serves both
        where :meth:`grad` is ``torch.func.grad`` of the loss (a non-linear model on at most
        :data:`GRAD_CHUNK` records); ``vmap``-able."""
        if self._features(X) is not None or (not self.is_linear and int(X.shape[0]) > GRAD_CHUNK):
            return self.loss(theta, X, y), self.grad(theta, X, y)
        g, value = grad_and_value(self.loss)(theta, X, y)
        return value, g

    def _summed_loss(self, theta: Tensor, X: Tensor, y: Tensor) -> Tensor:
        return self.per_sample_loss(theta, X, y).sum()

    def per_sample_grads(self, theta: Tensor, X: Tensor, y: Tensor) -> Tensor:
        """∇f_{z_i}(θ) for every record: shape (N, d), computed with ``vmap`` (closed form
        r_i ⊗ [x_i, 1] for a linear model)."""
        feats = self._features(X)
        if feats is not None:
            R = self._residuals(theta, feats, y)
            return self._assemble_rows(R.unsqueeze(-1) * feats.unsqueeze(-2), R)

        def one(x: Tensor, t: Tensor) -> Tensor:
            return grad(self.loss)(theta, x.unsqueeze(0), t.unsqueeze(0))

        return vmap(one)(X, y)

    def hvp(self, theta: Tensor, X: Tensor, y: Tensor, v: Tensor) -> Tensor:
        """Hessian-vector product ∇²f_D(θ)·v (forward-over-reverse; closed form for a linear
        model): shape (d,)."""
        feats = self._features(X)
        if feats is not None:
            return self._linear_hvp(self._curvature(theta, feats), feats, v)
        return jvp(lambda t: self.grad(t, X, y), (theta,), (v,))[1]

    def hvp_fn(self, theta: Tensor, X: Tensor, y: Tensor):
        """``v ↦ ∇²f_D(θ)·v`` for many products at one (θ, X, y), with the work that does not
        depend on v done once.

        Linear model: the output curvature Λ_i at every record is computed once, each product is
        then two matrix products. Otherwise the gradient is evaluated once through
        ``torch.func.vjp`` and each product is one reverse pass through that cached graph
        (reverse-over-reverse, Pearlmutter 1994: H v = (vᵀH)ᵀ as H is symmetric), several times
        faster per product on CPU than :meth:`hvp`, at the memory cost of keeping the graph.
        """
        feats = self._features(X)
        if feats is not None:
            curvature = self._curvature(theta, feats)
            return lambda v: self._linear_hvp(curvature, feats, v)
        _, pullback = vjp_pair(lambda t: self.grad(t, X, y), theta)
        return lambda v: pullback(v)[0]

    def hessian(self, theta: Tensor, X: Tensor, y: Tensor) -> Tensor | None:
        """The dense Hessian ∇²f_D(θ), shape (d, d), in closed form for a linear model; ``None``
        otherwise (:func:`unlearners.linalg.explicit_hessian` then builds it from products).

        In the augmented layout (class c, feature j of [x, 1]) the Hessian is
        (1/n) Σ_i Λ_i ⊗ x̃_i x̃_iᵀ (Bishop 2006, Eq. 4.110): one (q×n)(n×q) product per pair of
        classes c <= c' (q = features + 1), C(C+1)/2 in all, against d = C·q Hessian-vector
        products of cost O(nCq) each through autograd; it is then permuted to θ's layout.
        """
        feats = self._features(X)
        if feats is None:
            return None
        lay = self._layout()
        n, p = feats.shape
        C = self.n_outputs
        aug = (
            torch.cat([feats, torch.ones(n, 1, dtype=feats.dtype, device=feats.device)], 1)
            if lay.bias is not None
            else feats
        )
        q = aug.shape[1]
        z = self.logits(theta, X)
        H = torch.empty(C, q, C, q, dtype=feats.dtype, device=feats.device)
        if C == 1:
            s = torch.sigmoid(z)
            H[0, :, 0, :] = aug.T @ (aug * (s * (1 - s)).unsqueeze(1)) / n
        else:
            P = torch.softmax(z, dim=-1)
            for c in range(C):
                for k in range(c, C):
                    w = P[:, c] * ((1.0 if k == c else 0.0) - P[:, k])  # Λ_i[c, k]
                    block = aug.T @ (aug * w.unsqueeze(1)) / n
                    H[c, :, k, :] = block
                    if k != c:
                        H[k, :, c, :] = block.T
        H = H.reshape(C * q, C * q)
        order = self._augmented_order(p, q, feats.device)  # flat index of each augmented entry
        out = torch.empty_like(H)
        out[order.unsqueeze(1), order.unsqueeze(0)] = H
        return (out + out.T) / 2

    # -- closed forms of a linear model ------------------------------------------------
    def _features(self, X: Tensor) -> Tensor | None:
        """X as the feature matrix the linear layer reads, or None when the closed forms do not
        apply (not a closed-form model, or an input a bare Linear would not read as (N, p))."""
        lay = self.linear_layout
        if lay is None or X.dim() < 2:
            return None
        if X.dim() == 2:
            return X
        return X.reshape(X.shape[0], -1) if lay.flatten else None

    def _layout(self) -> LinearLayout:
        """The linear layout, for the closed forms: reached only once ``_features`` found one."""
        assert self.linear_layout is not None, "a closed form ran for a model without the linear layout"
        return self.linear_layout

    def _weights(self, theta: Tensor) -> tuple[Tensor, Tensor | None]:
        """(W, b) of the linear layer: views of θ, W of shape (C, p)."""
        params = self.unflatten(theta)
        lay = self._layout()
        return params[lay.weight], (params[lay.bias] if lay.bias is not None else None)

    def _residuals(self, theta: Tensor, feats: Tensor, y: Tensor) -> Tensor:
        """r_i = ∂ℓ/∂z at every record, shape (N, C): σ(z) − y or softmax(z) − e_y."""
        W, b = self._weights(theta)
        z = nn.functional.linear(feats, W, b)
        if self.n_outputs == 1:
            return torch.sigmoid(z) - y.to(z.dtype).unsqueeze(-1)
        classes = torch.arange(self.n_outputs, device=z.device)
        # one-hot by comparison (vmap-safe; nn.functional.one_hot reads the labels' maximum)
        return torch.softmax(z, dim=-1) - (y.unsqueeze(-1) == classes).to(z.dtype)

    def _curvature(self, theta: Tensor, feats: Tensor) -> Tensor:
        """The softmax probabilities (N, C), or σ(1 − σ) (N, 1) for one logit: what Λ_i needs."""
        W, b = self._weights(theta)
        z = nn.functional.linear(feats, W, b)
        if self.n_outputs == 1:
            s = torch.sigmoid(z)
            return s * (1 - s)
        return torch.softmax(z, dim=-1)

    def _linear_hvp(self, curvature: Tensor, feats: Tensor, v: Tensor) -> Tensor:
        """∇²f_D v = (1/n) Σ_i (Λ_i u_i) ⊗ [x_i, 1] with u_i = V x_i + v_b (J v)."""
        Vw, vb = self._weights(v)
        U = nn.functional.linear(feats, Vw, vb)
        if self.n_outputs == 1:
            LU = curvature * U
        else:  # (diag(p) − p pᵀ) u
            LU = curvature * U - curvature * (curvature * U).sum(-1, keepdim=True)
        return self._assemble(LU.mT @ feats, LU.sum(0), 1.0 / feats.shape[0])

    def _assemble(self, gW: Tensor, gb: Tensor, scale: float) -> Tensor:
        """A flat vector from a weight-shaped and a bias-shaped piece, in θ's order."""
        lay = self._layout()
        parts = {lay.weight: gW * scale}
        if lay.bias is not None:
            parts[lay.bias] = gb * scale
        return self.flatten(parts)

    def _assemble_rows(self, gW: Tensor, gb: Tensor) -> Tensor:
        """Rows (N, d) from per-record weight pieces (N, C, p) and bias pieces (N, C)."""
        lay = self._layout()
        n = gW.shape[0]
        parts = {lay.weight: gW.reshape(n, -1)}
        if lay.bias is not None:
            parts[lay.bias] = gb
        return torch.cat([parts[name] for name in self.names], dim=1)

    def _augmented_order(self, p: int, q: int, device) -> Tensor:
        """For each entry (c, j) of the augmented (C, q) layout, its index in flat θ."""
        lay = self._layout()
        C = self.n_outputs
        offsets = dict(zip(self.names, [sum(self.numels[:i]) for i in range(len(self.names))]))
        idx = torch.empty(C, q, dtype=torch.long)
        idx[:, :p] = offsets[lay.weight] + torch.arange(C * p).view(C, p)
        if q > p:  # the augmented column is the bias's
            assert lay.bias is not None, "q > p only when the layer has a bias"
            idx[:, p] = offsets[lay.bias] + torch.arange(C)
        return idx.reshape(-1).to(device)


# -- the L2-regularised empirical risk several methods train ------------------------------
def vjp_pair(func: Callable[[Tensor], Tensor], primal: Tensor) -> tuple[Tensor, Callable[[Tensor], tuple[Tensor]]]:
    """``torch.func.vjp`` without auxiliary output: (func(primal), u ↦ (Jᵀu,)). Read by index
    because torch annotates the results with and without ``has_aux`` as one union."""
    result = vjp(func, primal)
    return result[0], result[1]


def regularized_loss(objective: Objective, theta: Tensor, X: Tensor, y: Tensor, l2: float) -> Tensor:
    """L(θ) = (1/n) Σ ℓ(z_i, θ) + (l2/2)‖θ‖²."""
    return objective.loss(theta, X, y) + 0.5 * l2 * torch.dot(theta, theta)


def regularized_grad(objective: Objective, theta: Tensor, X: Tensor, y: Tensor, l2: float) -> Tensor:
    """∇L(θ) = (1/n) Σ ∇ℓ(z_i, θ) + l2·θ."""
    return objective.grad(theta, X, y) + l2 * theta


@dataclass(frozen=True)
class LinearLayout:
    """Where a closed-form linear model keeps its weight (C, p) and bias (C,) in θ."""

    weight: str
    bias: str | None
    #: An ``nn.Flatten()`` precedes the layer: records of any shape are read as flat vectors.
    flatten: bool


def _closed_form_layout(model: nn.Module, names: list[str], n_outputs: int) -> LinearLayout | None:
    """The layout if ``model`` computes exactly W·flatten(x) + b, else None.

    Accepted: an ``nn.Linear``, or an ``nn.Sequential`` of one ``nn.Linear`` with only
    ``nn.Flatten()`` (the default start_dim=1, end_dim=-1) before it and ``nn.Identity`` anywhere,
    the exact classes (a subclass may override ``forward``), without forward hooks, and with the
    layer's outputs equal to the objective's. Anything else keeps the ``torch.func`` path, which
    is correct for every module.
    """
    if type(model) is nn.Linear:
        children: list[tuple[str, nn.Module]] = [("", model)]
    elif type(model) is nn.Sequential:
        children = list(model.named_children())
    else:
        return None
    prefix = ""  # of the layer's parameter names, set where the loop finds the layer
    flatten = False
    layer = None
    for name, m in children:
        if m._forward_hooks or m._forward_pre_hooks:
            return None
        if type(m) is nn.Linear and layer is None:
            layer, prefix = m, (name + "." if name else "")
        elif type(m) is nn.Flatten and layer is None and m.start_dim == 1 and m.end_dim == -1:
            flatten = True
        elif type(m) is not nn.Identity:
            return None
    if layer is None or model._forward_hooks or model._forward_pre_hooks or layer.out_features != n_outputs:
        return None
    expected = [prefix + "weight"] + ([prefix + "bias"] if layer.bias is not None else [])
    if sorted(names) != sorted(expected):  # e.g. a parametrised weight
        return None
    return LinearLayout(prefix + "weight", prefix + "bias" if layer.bias is not None else None, flatten)


def _output_units(model: nn.Module) -> int:
    last = [m for m in model.modules() if isinstance(m, nn.Linear)]
    if not last:
        raise InvalidInput(
            "model", "a model whose last nn.Linear layer gives its outputs, or n_outputs", type(model).__name__
        )
    return last[-1].out_features


def default_init(objective: Objective, generator: torch.Generator, dtype=torch.float64) -> Tensor:
    """PyTorch's default ``nn.Linear`` initialisation, drawn from an explicit generator.

    Weights and biases of a layer with fan-in k are U(−1/√k, 1/√k) (what
    ``kaiming_uniform_(a=√5)`` gives), so the initial point θ_0 is a pure function of the seed.
    """
    pieces = []
    for name, shape in zip(objective.names, objective.shapes):
        fan_in = shape[1] if len(shape) == 2 else _fan_in_of_bias(objective, name)
        bound = 1.0 / math.sqrt(fan_in)
        u = torch.rand(int(torch.Size(shape).numel()), generator=generator, dtype=dtype)
        pieces.append((2 * u - 1) * bound)
    return torch.cat(pieces)


def _fan_in_of_bias(objective: Objective, bias_name: str) -> int:
    # "0.bias" -> "0.weight"; a bare nn.Linear's parameters are plain "weight" and "bias"
    owner, _, _ = bias_name.rpartition(".")
    weight_name = f"{owner}.weight" if owner else "weight"
    shape = objective.shapes[objective.names.index(weight_name)]
    return int(shape[1])


def require_reinitialisable(model: nn.Module) -> None:
    """Raise :class:`InvalidInput` naming the first module that holds parameters but has no
    ``reset_parameters`` (such a model cannot be drawn afresh from θ_0's law)."""
    for name, m in model.named_modules():
        if any(True for _ in m.parameters(recurse=False)) and not callable(getattr(m, "reset_parameters", None)):
            raise InvalidInput(
                "model",
                "modules that can re-initialise their parameters (reset_parameters), "
                "or a factory that builds the model",
                f"{name or 'the model'} ({type(m).__name__}) has parameters but no reset_parameters",
            )


def reinitialise(model: nn.Module, *, reset_statistics: bool) -> None:
    """Re-draw every parameter of ``model`` in place by its modules' own ``reset_parameters``
    (under the global random state: callers fork and seed it), and with ``reset_statistics``
    reset normalisation statistics too. Checks :func:`require_reinitialisable` first."""
    require_reinitialisable(model)
    with torch.no_grad():
        for m in model.modules():
            if any(True for _ in m.parameters(recurse=False)):
                # nn.Module types unknown attributes as Tensor | Module; checked callable above
                m.reset_parameters()  # type: ignore[operator]
            elif reset_statistics and callable(getattr(m, "reset_running_stats", None)):
                m.reset_running_stats()  # type: ignore[operator]


def init_parameters(objective: Objective, generator: torch.Generator, dtype=torch.float64) -> Tensor:
    """θ_0 as a pure function of ``generator``, for any model.

    A model whose parameters all sit in ``nn.Linear`` layers gets :func:`default_init` (the same
    U(−1/√k, 1/√k) law as ``nn.Linear.reset_parameters``, drawn from the generator directly).
    Any other model is copied and each of its modules' own ``reset_parameters`` runs with the
    global random state seeded from ``generator`` (inside ``torch.random.fork_rng``, so the
    caller's random state is untouched): Conv, Linear, normalisation and embedding layers all
    initialise as PyTorch defines them. A module that holds parameters but has no
    ``reset_parameters`` cannot be re-initialised: :class:`InvalidInput` names it.
    """
    import copy

    holders = [m for m in objective.model.modules() if any(True for _ in m.parameters(recurse=False))]
    if holders and all(isinstance(m, nn.Linear) for m in holders) and not objective.buffer_names:
        return default_init(objective, generator, dtype)
    require_reinitialisable(objective.model)
    seed = int(torch.randint(0, 2**62, (1,), generator=generator))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        fresh = copy.deepcopy(objective.model).to(device="cpu")
        # θ_0 holds fresh statistics, whatever the caller's module had
        reinitialise(fresh, reset_statistics=bool(objective.buffer_names))
        state = {**dict(fresh.named_parameters()), **dict(fresh.named_buffers())}
        theta = torch.cat([state[name].detach().reshape(-1) for name in objective.names])
    return theta.to(dtype)
