"""The block-wise schedule of noisy fine-tuning (Dolgova & Stich, "Sequential Subspace Noise Injection
Prevents Accuracy Collapse in Certified Unlearning", arXiv:2601.05134; code: mlolab/blockwise-noisy-
fine-tuning, commit 3d08183682d7a9ba97a7c97bbacaea1d0f68df0d, cited as ``file:line``): option
``schedule = blockwise`` of :class:`unlearners.noisyft.NoisyFineTune`. The accounting and the
argument that it holds are in :mod:`certify.bounds.blockwise`.

The split (:func:`block_split`, declared once): every private parameter tensor gets a random
orthonormal basis of one axis (QR of a Gaussian matrix, ``decompose_matrix_on_blocks.py:70-87``)
whose columns are cut into k near-equal groups, the first ones one longer
(``model_with_blocks.py:335-346``). The axis is the authors': a Linear weight's input axis
(``DecomposedLinear``, ``model_with_blocks.py:55-64``), a convolution's output channels
(``DecomposedConv2d``, ``:152-165``), a vector's only axis (biases and normalisation scales,
``DecomposedVector``, ``:227-236``); every other tensor is cut along its first axis too, so no
parameter escapes the noise (the authors' code leaves such tensors frozen and un-noised,
``:488-500``). Block i is the span of every tensor's i-th group: the blocks are mutually orthogonal
and together span the parameter space. The authors train the coefficients B_i = A_iᵀW; here the
parameters are rotated into the same coordinates (Q_tensorᵀ along the axis: an isometry), so the
clipping, the decay and the noise of a block act on the same numbers.

The basis is drawn from the method's ``seed`` and each tensor's name only, never from the data or
the start: it is the same in both worlds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from certify.certificate import Condition, Constant
from certify.errors import InvalidInput
from unlearners.objective import Objective

#: ``joint``: every step moves every parameter (Koloskova et al.); ``blockwise``: one block at a time
SCHEDULES = ("joint", "blockwise")


def split_axis(model: nn.Module, name: str) -> int:
    """The axis of parameter ``name`` the split cuts: 1 for a Linear weight, else 0 (module docstring)."""
    owner, _, kind = name.rpartition(".")
    module = model.get_submodule(owner) if owner else model
    return 1 if isinstance(module, nn.Linear) and kind == "weight" else 0


def group_sizes(m: int, blocks: int) -> list[int]:
    """m split into ``blocks`` near-equal parts, the first ``m % blocks`` one longer (``equal_split``)."""
    base, rem = divmod(m, blocks)
    return [base + 1] * rem + [base] * (blocks - rem)


@dataclass(frozen=True)
class _Piece:
    shape: torch.Size
    axis: int
    basis: Tensor  # (m, m) orthonormal, m = shape[axis]


@dataclass(frozen=True)
class BlockSplit:
    """The orthonormal split of the private parameters into ``blocks`` subspaces."""

    blocks: int
    pieces: tuple[_Piece, ...]
    block: Tensor  #: the block of every rotated coordinate

    def rotate(self, x: Tensor) -> Tensor:
        """The coordinates of x in the split's basis (every tensor: Qᵀ along its axis)."""
        out, at = [], 0
        for p in self.pieces:
            k = p.shape.numel()
            moved = x[at : at + k].view(p.shape).movedim(p.axis, 0).reshape(p.basis.shape[0], -1)
            out.append((p.basis.T @ moved).reshape(-1))
            at += k
        return torch.cat(out)

    def unrotate(self, u: Tensor) -> Tensor:
        """The inverse of :meth:`rotate`."""
        out, at = [], 0
        for p in self.pieces:
            k = p.shape.numel()
            moved_shape = (p.shape[p.axis],) + tuple(s for j, s in enumerate(p.shape) if j != p.axis)
            moved = (p.basis @ u[at : at + k].view(p.basis.shape[0], -1)).view(moved_shape)
            out.append(moved.movedim(0, p.axis).reshape(-1))
            at += k
        return torch.cat(out)


def largest_axis(objective: Objective, names: Iterable[str]) -> int:
    """The longest split axis among ``names``: more blocks than this leaves a block empty."""
    shapes = dict(zip(objective.names, objective.shapes))
    return max(shapes[n][split_axis(objective.model, n)] if len(shapes[n]) else 1 for n in names)


def block_split(objective: Objective, names: Sequence[str], blocks: int, seed: int, like: Tensor) -> BlockSplit:
    """The split of the parameters ``names`` (in θ's order) into ``blocks`` subspaces (module docstring)."""
    shapes = dict(zip(objective.names, objective.shapes))
    pieces, ids = [], []
    for name in names:
        shape = shapes[name] if len(shapes[name]) else torch.Size([1])
        axis = split_axis(objective.model, name)
        m = shape[axis]
        digest = hashlib.sha256(f"{int(seed)}:blocks:{name}".encode()).digest()
        gen = torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") >> 1)
        basis, _ = torch.linalg.qr(torch.randn(m, m, generator=gen, dtype=torch.float64))
        pieces.append(_Piece(shape, axis, basis.to(like)))
        rows = torch.repeat_interleave(torch.arange(blocks), torch.tensor(group_sizes(m, blocks)))
        ids.append(rows.repeat_interleave(shape.numel() // m))
    return BlockSplit(blocks, tuple(pieces), torch.cat(ids).to(like.device))


def blockwise_phase(
    split: BlockSplit,
    x: Tensor,
    grad: Callable[[Tensor, object], Tensor],
    batches: Sequence[object],
    *,
    sigma: float,
    gamma: float,
    lam: float,
    clip: Callable[[Tensor], Tensor],
    gen: torch.Generator,
) -> Tensor:
    """The noisy phase block after block: block i takes len(batches)/k steps
    u_i ← u_i − γ(clip(∇_i) + λu_i) + N(0, σ²I), the other blocks frozen (``unlearn_one_block``,
    ``training_block_unlearning.py:21-74``, M = 2: a clipped step with decay, then a noise step).
    ``grad(x, batch)`` is the gradient in the parameters x."""
    per_block = len(batches) // split.blocks
    u = split.rotate(x)
    for i in range(split.blocks):
        mask = split.block == i
        for batch in batches[i * per_block : (i + 1) * per_block]:
            g = split.rotate(grad(split.unrotate(u), batch))[mask]
            moved = u[mask] - gamma * (clip(g) + lam * u[mask])
            noise = torch.randn(moved.shape, generator=gen, dtype=moved.dtype).to(moved.device)
            u[mask] = moved + sigma * noise
    return split.unrotate(u)


def check_schedule(objective: Objective, names: Sequence[str], schedule: str, variant: str, blocks: int) -> None:
    """Refuse a schedule the accounting does not cover, or a split with an empty block."""
    if schedule == "blockwise" and variant != "gradient-clip":
        raise InvalidInput("schedule", "joint with variant model-clip (blockwise needs gradient-clip)", schedule)
    if schedule == "joint" and blocks != 1:
        raise InvalidInput("blocks", "1 unless schedule is blockwise", blocks)
    most = largest_axis(objective, names)
    if blocks > most:
        raise InvalidInput("blocks", f"at most {most} (the longest split axis: more leaves a block empty)", blocks)


def schedule_terms(schedule: str, blocks: int) -> tuple[list[Constant], list[Condition]]:
    """The certificate's constants and conditions the block-wise schedule adds (none for joint)."""
    if schedule != "blockwise":
        return [], []
    constant = Constant(
        "blocks",
        float(blocks),
        "enforced",
        "k orthogonal blocks run one after another (T noisy steps and sigma per block; the others frozen)",
    )
    condition = Condition(
        "blocks frozen while another runs",
        True,
        "the blocks not yet run still hold the start, so the two worlds' update maps differ; the per-block "
        "bound needs only that the clipped steps move any two points at most 2*gamma*C1 apart beyond the "
        "(1 - gamma*lambda) contraction, which holds for any two maps (derived here, certify.bounds.blockwise; "
        "the paper's own theorem is not reachable); the blocks compose adaptively, conditionally on those released",
    )
    return [constant], [condition]
