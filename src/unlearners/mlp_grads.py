"""Full-batch gradients of a stack of MLPs in closed form: what ``vmap(Objective.grad)`` computes,
bit for bit, without autograd or the vmap transforms.

An MLP's gradient is two matrix products per layer (Rumelhart, Hinton & Williams 1986): with
pre-activations a_l = h_{l−1} W_lᵀ + b_l, h_l = φ(a_l) and g_l = ∂f/∂a_l,

    ∇W_l = g_lᵀ h_{l−1},   ∇b_l = Σ_records g_l,   g_{l−1} = φ'(a_{l−1}) ⊙ (g_l W_l).

:func:`mlp_grads` issues the same ATen kernels on the same shapes and strides as the batched
autograd graph of :meth:`unlearners.objective.Objective.grad` under ``vmap`` (recorded with a
``TorchDispatchMode``): ``bmm`` against the stacked weights, the bias added after the product
(``baddbmm`` rounds differently), the activation's own backward kernel (``softplus_backward``,
``tanh_backward``), and the logistic loss's derivative as the same chain of elementwise steps the
decomposed ``binary_cross_entropy_with_logits`` is differentiated through. Two steps are replaced
by cheaper ones with the same value: the product g_l W_l of a one-unit output layer is a
broadcast multiplication (an outer product, one rounding either way) instead of a ``bmm`` with
inner size 1, and nothing is recorded for backward. The equality is tested bit for bit against
the vmapped autograd path (``tests/test_mlp_grads.py``); models this module does not recognise
(:func:`mlp_layout` returns None) keep that path.

On one thread a block is computed a few rows at a time (:func:`sub_block_rows`), each sub-block's
forward and backward before the next, so that its activations are still in the cache when its
backward reads them; a row's bits do not depend on the rows beside it as long as every
transcendental kernel runs on whole vectors (the logistic output stage of a sub-block is padded to
them) and ``bmm`` has two or more matrices. The logistic stage folds autograd's negations into the
next step (exact: rounding to nearest is symmetric).

On the default MLP (2-64-1, softplus, 1,000 records, blocks of 16 models in sub-blocks of 4, one
thread) 100 retrain-mode trials take 0.47× the CPU of the vmapped autograd path with glibc's
allocator as it comes (13.1 s against 27.9 s, ``bench/bench_mlp_trials.py``). What remains is
the kernels themselves: softplus about two fifths, the four ``bmm`` a quarter,
``softplus_backward`` a seventh.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import torch
from torch import Tensor, nn
from torch.func import grad, vmap

from unlearners.objective import GRAD_CHUNK, Objective


def _softplus_backward(module: nn.Module, g: Tensor, pre: Tensor, out: Tensor) -> Tensor:
    return torch.ops.aten.softplus_backward.grad_input(g, pre, module.beta, module.threshold, grad_input=g)


def _tanh_backward(module: nn.Module, g: Tensor, pre: Tensor, out: Tensor) -> Tensor:
    return torch.ops.aten.tanh_backward.grad_input(g, out, grad_input=g)


#: Activations whose autograd backward is one ATen kernel, called here with the tensors autograd
#: saves (the input for softplus, the output for tanh), writing over the incoming gradient ``g``
#: (a temporary of :func:`_chunk_grads`; elementwise, so each element is read before it is written).
ACTIVATION_BACKWARD: dict[type, Callable[[nn.Module, Tensor, Tensor, Tensor], Tensor]] = {
    nn.Softplus: _softplus_backward,
    nn.Tanh: _tanh_backward,
}


@dataclass(frozen=True)
class MLPLayout:
    """Where each layer's weight (out, in) and bias (out,) sit in θ, and the activations between."""

    layers: tuple[tuple[int, int, int, int], ...]  # (weight offset, bias offset, out, in) per Linear
    activations: tuple[nn.Module, ...]
    flatten: bool


def mlp_layout(objective: Objective) -> MLPLayout | None:
    """The layout when the objective's model is exactly ``nn.Sequential([Flatten,] Linear, act,
    Linear, …, Linear)`` with biases, activations from :data:`ACTIVATION_BACKWARD`, no hooks and
    no buffers in θ (what :func:`unlearners.models.mlp` builds); else None. Only a plain
    :class:`Objective` qualifies: anything else that offers ``grad`` (NegGrad's descent-ascent, a
    subclass) computes another gradient than the one written out here."""
    if type(objective) is not Objective:
        return None
    model = objective.model
    if type(model) is not nn.Sequential or objective.buffer_names or model._forward_hooks or model._forward_pre_hooks:
        return None
    children = list(model.named_children())
    flatten = bool(children) and type(children[0][1]) is nn.Flatten
    if flatten and (children[0][1].start_dim, children[0][1].end_dim) != (1, -1):
        return None
    children = children[int(flatten) :]
    linears, activations = children[0::2], children[1::2]
    if len(linears) < 2 or len(linears) != len(activations) + 1:
        return None
    if any(m._forward_hooks or m._forward_pre_hooks for _, m in children):
        return None
    if any(type(m) is not nn.Linear or m.bias is None for _, m in linears):
        return None
    if any(type(m) not in ACTIVATION_BACKWARD for _, m in activations):
        return None
    expected = [f"{name}.{part}" for name, _ in linears for part in ("weight", "bias")]
    if objective.names != expected or linears[-1][1].out_features != objective.n_outputs:
        return None
    offsets = [sum(objective.numels[:i]) for i in range(len(objective.names))]
    layers = tuple((offsets[2 * k], offsets[2 * k + 1], *objective.shapes[2 * k]) for k in range(len(linears)))
    return MLPLayout(layers, tuple(m for _, m in activations), flatten)


def mlp_grads(objective: Objective, layout: MLPLayout, thetas: Tensor, X: Tensor, y: Tensor) -> Tensor:
    """∇f_D(θ_i) for every row of ``thetas`` (B, d): equal, bit for bit, to
    ``vmap(objective.grad, in_dims=(0, None, None))(thetas, X, y)``, including its summation over
    chunks of :data:`~unlearners.objective.GRAD_CHUNK` records on larger data."""
    if layout.flatten:
        X = X.reshape(X.shape[0], -1)
    rows = sub_block_rows(objective, layout, int(thetas.shape[0]), X)
    if rows < thetas.shape[0]:
        starts = list(range(0, int(thetas.shape[0]), rows))
        if thetas.shape[0] - starts[-1] < 2:  # a last piece of one row joins the one before
            starts.pop()
        ends = starts[1:] + [int(thetas.shape[0])]
        parts = [_block_grads(objective, layout, thetas[a:b], X, y, sub_block=True) for a, b in zip(starts, ends)]
        return torch.cat(parts)
    return _block_grads(objective, layout, thetas, X, y, sub_block=False)


def _block_grads(
    objective: Objective, layout: MLPLayout, thetas: Tensor, X: Tensor, y: Tensor, *, sub_block: bool
) -> Tensor:
    n = int(X.shape[0])
    if n <= GRAD_CHUNK:
        return _chunk_grads(objective, layout, thetas, X, y, mean=True, sub_block=sub_block)
    chunks = (
        _chunk_grads(
            objective, layout, thetas, X[i : i + GRAD_CHUNK], y[i : i + GRAD_CHUNK], mean=False, sub_block=sub_block
        )
        for i in range(0, n, GRAD_CHUNK)
    )
    return cast(Tensor, sum(chunks)) / n  # as Objective.grad sums its chunks: (0 + g_1 + g_2 + …) / n


def _chunk_grads(
    objective: Objective, layout: MLPLayout, thetas: Tensor, X: Tensor, y: Tensor, *, mean: bool, sub_block: bool
) -> Tensor:
    """The gradient of the mean (or the sum) of the per-record losses on (X, y), for every row
    (``sub_block``: the rows are part of a block, :func:`sub_block_rows`)."""
    B = thetas.shape[0]
    weights = [thetas[:, w : w + o * i].view(B, o, i) for w, _, o, i in layout.layers]
    biases = [thetas[:, b : b + o].view(B, 1, o) for _, b, o, _ in layout.layers]
    inputs, pres = [X.expand(B, *X.shape)], []
    for k, (W, b) in enumerate(zip(weights, biases)):
        pre = torch.bmm(inputs[-1], W.transpose(1, 2)).add_(b)  # F.linear under vmap: b + x Wᵀ, the bias after
        if k == len(layout.activations):
            break
        pres.append(pre)
        inputs.append(layout.activations[k](pre))
    if objective.n_outputs == 1:
        g = _logistic_output_grad(pre.squeeze(2), y, mean, pad=sub_block).unsqueeze(2)
    else:
        g = _output_grad(objective, pre, y, mean)
    pieces: list[Tensor] = []
    for k in range(len(weights) - 1, -1, -1):
        pieces[:0] = [torch.bmm(g.transpose(1, 2), inputs[k]).reshape(B, -1), g.sum(1, keepdim=True).reshape(B, -1)]
        if k == 0:
            break
        back = g * weights[k] if g.shape[2] == 1 else torch.bmm(g, weights[k])  # g W: an outer product for one unit
        g = ACTIVATION_BACKWARD[type(layout.activations[k - 1])](
            layout.activations[k - 1], back, pres[k - 1], inputs[k]
        )
    return torch.cat(pieces, 1)


def _logistic_output_grad(z: Tensor, y: Tensor, mean: bool, *, pad: bool = False) -> Tensor:
    """∂/∂z of the mean (or sum) logistic loss, (B, n), through the steps autograd takes back
    through ATen's binary_cross_entropy_with_logits (loss = (1 − y) z + m + log(e^{−m} + e^{−z−m}),
    m = max(−z, 0)), in its order, so the rounding is the same.

    ``pad`` (a sub-block's rows): B·n need not be a whole number of :data:`VECTOR_ELEMENTS` (the
    whole block's is), so the steps run on the flattened values padded with zeros, and no element
    takes the scalar tail of the ``exp`` kernels, as none of the whole block's does
    (:func:`sub_block_rows`). A whole block runs unpadded, on autograd's own shape."""
    B, n = z.shape
    upstream = 1 / n if mean else 1.0  # autograd's incoming gradient of a mean (or sum), fl(1/n)
    extra = -(B * n) % VECTOR_ELEMENTS if pad else 0
    if not extra:
        return _logistic_steps(z, 1 - y.to(z.dtype), upstream)
    flat_z = torch.cat([z.reshape(-1), z.new_zeros(extra)])
    flat_y = torch.cat([y.to(z.dtype).expand(B, n).reshape(-1), z.new_zeros(extra)])
    return _logistic_steps(flat_z, 1 - flat_y, upstream)[: B * n].view(B, n)


def _logistic_steps(z: Tensor, not_y: Tensor, upstream: float) -> Tensor:
    """The elementwise steps of :func:`_logistic_output_grad`, with ``not_y`` = 1 − y broadcast
    against z. Autograd's chain, with each negation folded into the next step (negation is exact
    and rounding to nearest symmetric, so fl(−a + b) = fl(b − a) bit for bit):
    g_s = u / (e^{−m} + e^{−z−m}), g_zm = g_s e^{−z−m}, g_m = u − (g_zm + g_s e^{−m}),
    g_z = u (1 − y) − g_zm, ∂/∂z = g_z − [z ≤ 0] g_m."""
    negated = z.neg()
    m = negated.clamp_min(0)
    e_m = m.neg().exp_()
    e_zm = negated.sub(m).exp_()
    g_sum = torch.full_like(z, upstream).div_(e_m.add(e_zm))
    g_zm = g_sum.mul(e_zm)
    g_m = torch.rsub(g_sum.mul_(e_m).add_(g_zm), upstream)
    g_z = torch.sub(not_y.mul(upstream), g_zm)
    return g_z.sub_(torch.where(negated.ge(0), g_m, 0.0))


def _output_grad(objective: Objective, out: Tensor, y: Tensor, mean: bool) -> Tensor:
    """∂/∂out of the mean (or sum) cross-entropy, (B, n, C), by the vmapped autograd path itself
    (a small tensor: the outputs, not the hidden activations)."""

    def loss(o: Tensor, labels: Tensor) -> Tensor:
        per_record = objective.loss_of_outputs(o, labels)
        return per_record.mean() if mean else per_record.sum()

    return vmap(grad(loss), in_dims=(0, None))(out, y)


#: Elements ATen's CPU loops take per vectorised iteration at most (2 vectors of 8 doubles with
#: AVX-512; fewer elsewhere, and 16 is a multiple of every narrower width). The elements after the
#: last whole iteration go through the scalar version of the kernel (std::exp and std::log1p
#: instead of their SLEEF/VML vector forms), which can round differently.
VECTOR_ELEMENTS = 16


def padded_rows(n: int, size: int, X: Tensor) -> int:
    """Rows to compute for n rows in blocks of ``size``, so that every row gets the bits it would
    get in a full block (the prefix and shard properties of
    :func:`unlearners.training.batched_gradient_descent`).

    A full block of the vmapped path is padded to ``size`` rows. :func:`mlp_grads` pads a partial
    last block of k rows only to the smallest k' ≥ max(k, 2) for which every elementwise tensor
    (k' × records of a gradient chunk × a layer's width elements) is a whole number of
    :data:`VECTOR_ELEMENTS`, so no element of the block takes a scalar tail path that a full block
    would not. Measured to keep the bits with one thread: ``bmm`` computes each stacked matrix
    alone when there are two or more (one alone takes a matrix-vector path that rounds
    differently), and the record sums reduce each model separately
    (``tests/test_batched_invariance.py``). With several threads ATen splits elementwise work
    between them by position, so the block is padded to ``size`` as before.
    """
    full = n + -n % size
    last = n % size
    if last == 0 or torch.get_num_threads() > 1:
        return full
    step = _row_step(_chunk_lengths(X), (1,))
    rows = -(-max(last, 2) // step) * step
    return full if rows >= size else n - last + rows


#: Elements of a sub-block's widest activation (rows × records of a gradient chunk × units):
#: :func:`mlp_grads` computes a block this many elements at a time, forward and backward of one
#: sub-block before the next, so that its activations are still in the cache when its backward
#: reads them. The default MLP on 1,000 records: 4 of a block's 16 rows at a time (2 MiB per
#: activation; L2 caches of 1 MiB per core), about 0.93× the CPU of whole blocks in the trials of
#: ``bench/bench_mlp_trials.py`` (13.1 s against 13.7 s at 100 trials, pooled medians of separate
#: runs; 2 and 8 rows were slower in isolation).
SUB_BLOCK_ELEMENTS = 1 << 18


def sub_block_rows(objective: Objective, layout: MLPLayout, rows: int, X: Tensor) -> int:
    """Rows of a block of ``rows`` that :func:`mlp_grads` computes together: fewer than ``rows``
    only where every row keeps the bits the whole block gives it.

    That needs one thread on the CPU (ATen splits elementwise work between threads by position),
    a binary output (the softmax's vmapped derivative is left whole), a block with no element in a
    scalar tail (rows × records of each gradient chunk a whole number of :data:`VECTOR_ELEMENTS`,
    as every block of :func:`unlearners.training.batched_gradient_descent` is), and sub-blocks of
    at least two rows (``bmm`` of one matrix rounds apart) whose hidden activations (rows ×
    records × units) are whole numbers of vectors too; their logistic output stage is padded to
    one (:func:`_logistic_output_grad`). X is the flattened input."""
    lengths = _chunk_lengths(X)
    if X.device.type != "cpu" or torch.get_num_threads() > 1 or objective.n_outputs != 1:
        return rows
    if rows % _row_step(lengths, (1,)):
        return rows
    units = tuple(out for _, _, out, _ in layout.layers[:-1])
    step = _row_step(lengths, units)
    wanted = max(2, SUB_BLOCK_ELEMENTS // (max(lengths) * max(units)))
    return min(rows, -(-wanted // step) * step)


def _chunk_lengths(X: Tensor) -> tuple[int, ...]:
    """The record counts of the chunks a gradient over X is summed from (:data:`GRAD_CHUNK`)."""
    records = int(X.shape[0])
    rest = records % GRAD_CHUNK if records > GRAD_CHUNK else 0
    return (min(records, GRAD_CHUNK),) + ((rest,) if rest else ())


def _row_step(lengths: tuple[int, ...], units: tuple[int, ...]) -> int:
    """The fewest rows whose tensors of rows × length × units elements are whole numbers of
    :data:`VECTOR_ELEMENTS` for every chunk length and every width in ``units``."""
    return math.lcm(
        *(VECTOR_ELEMENTS // math.gcd(VECTOR_ELEMENTS, length * unit) for length in lengths for unit in units)
    )
