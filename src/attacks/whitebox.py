"""The white-box distinguisher: the auditor's self-check against the realized ε.

An adversary who knows both noiseless outcomes θ_U (unlearned) and θ_R (retrained) and sees one
release θ̃ = θ + N(0, σ²I) can do no better than project θ̃ on the direction
u = (θ_U − θ_R)/||θ_U − θ_R|| (Neyman–Pearson: the likelihood ratio of two isotropic Gaussians is
monotone in that projection). The projected scores are N(±||θ_U − θ_R||/2, σ²) in the two
worlds, so an ε lower bound computed from them must approach, and can never exceed, the
realized ε of the Gaussian mechanism with sensitivity ||θ_U − θ_R||. If it exceeds the
*certified* ε, the certificate is wrong (a mis-estimated constant, a broken implementation).

When every trial retrains with its own seeds (retrain mode, the default when σ = 0), the two
noiseless outcomes are distributions, and the direction is estimated from trials. It must come
from trials that are never scored: a direction built from the mean of the very trials it scores points
towards each of them, and on a null (both worlds i.i.d., true ε = 0, 500 trials per world) it
gave a positive bound in 16 % of repetitions at d = 100 and in every repetition at d ≥ 1,000.
So the first half of each world's trials builds the direction and only the second half is
scored (:func:`held_out_split`); a score then depends on other trials, so in that mode the attack
reads the trials' parameters themselves (its features, :class:`WhiteBox`), not one number each.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from attacks.base import Attack, AttackInputs, AttackOutcome, Features, ModelRows, to_numpy
from certify.errors import InvalidInput


def whitebox_direction(theta_unlearned: Tensor, theta_retrained: Tensor) -> tuple[Tensor, Tensor, float]:
    """Unit direction from θ_R to θ_U, their midpoint, and their distance.

    For stacks (N, d) of noiseless parameters (trials that retrain with new seeds) the means
    of each world are used. A zero distance gives a zero direction (the worlds coincide).
    """
    mu_u = theta_unlearned.mean(0) if theta_unlearned.ndim == 2 else theta_unlearned
    mu_r = theta_retrained.mean(0) if theta_retrained.ndim == 2 else theta_retrained
    if mu_u.shape != mu_r.shape:
        raise InvalidInput(
            "theta", "parameters of the same shape in both worlds", (tuple(mu_u.shape), tuple(mu_r.shape))
        )
    diff = mu_u - mu_r
    distance = float(torch.linalg.vector_norm(diff))
    direction = diff / distance if distance > 0 else torch.zeros_like(diff)
    return direction, (mu_u + mu_r) / 2, distance


def whitebox_scores(released: Tensor, direction: Tensor, midpoint: Tensor) -> Tensor:
    """Projection of each released parameter vector (N, d) on ``direction``, centred at ``midpoint``.

    Larger scores favour the unlearned world.
    """
    if released.ndim != 2 or released.shape[1] != direction.shape[0]:
        raise InvalidInput("released", f"a stack (N, {direction.shape[0]}) of parameter vectors", tuple(released.shape))
    return (released - midpoint) @ direction


def whitebox_row_scores(released: Tensor, direction: Tensor, midpoint: Tensor) -> Tensor:
    """:func:`whitebox_scores` computed one row at a time, so that a row's score is a function of
    that row alone, bit for bit (one matrix-vector product over a stack sums each row in an order
    that depends on the stack's size: the same model would score differently, by rounding, in
    another block of models).
    """
    if released.ndim != 2 or released.shape[1] != direction.shape[0]:
        raise InvalidInput("released", f"a stack (N, {direction.shape[0]}) of parameter vectors", tuple(released.shape))
    if released.shape[0] == 0:
        return released.new_empty(0)
    return torch.stack([torch.dot(row - midpoint, direction) for row in released])


def held_out_split(n: int) -> tuple[slice, slice]:
    """(trials that build the direction, trials that are scored) of a world with n trials."""
    if n < 2:
        raise InvalidInput(
            "trials",
            "at least 2 per world when every trial retrains (half builds the white-box direction, half is scored)",
            n,
        )
    return slice(0, n // 2), slice(n // 2, n)


class WhiteBox(Attack):
    """The white-box distinguisher as an attack: projection of each release on u.

    With trials that are noise draws, u comes from the audit's own two noiseless models (in the
    shared inputs), so the feature of a release is its projection score alone. When every trial
    retrains, u is estimated from the first half of each world's trials and only the second half
    is scored (:func:`held_out_split`): a model's score depends on which models build u, which
    only :meth:`score` sees. So in retrain mode, and only there, the features are the
    parameters themselves (each trial's released and noiseless rows, as for an attack that
    implements only ``run``): the one built-in attack that ships models.
    """

    name = "whitebox"
    title = "White-box distinguisher"
    description = (
        "projection of the released parameters on the direction between the two worlds' "
        "noiseless parameters (white-box, Neyman-Pearson optimal)"
    )

    def features(self, inputs: AttackInputs, models: ModelRows) -> dict[str, np.ndarray]:
        """Noise mode: ``score`` (n,), each release's projection on u (row by row:
        :func:`whitebox_row_scores`). Retrain mode: ``released`` and ``noiseless`` (n, d), the
        parameters (u is built from trials, in :meth:`score`)."""
        if inputs.every_trial_retrains:
            return super().features(inputs, models)
        direction, midpoint, _ = whitebox_direction(inputs.noiseless_unlearned, inputs.noiseless_retrained)
        return {"score": to_numpy(whitebox_row_scores(models.released, direction, midpoint))}

    def score(self, inputs: AttackInputs, features: Features) -> AttackOutcome:
        if not inputs.every_trial_retrains:
            _, _, distance = whitebox_direction(inputs.noiseless_unlearned, inputs.noiseless_retrained)
            return AttackOutcome(features["unlearned"]["score"], features["retrained"]["score"], {"distance": distance})
        device, dtype = inputs.theta_original.device, inputs.theta_original.dtype

        def stack(world: str, name: str) -> Tensor:
            return torch.as_tensor(features[world][name], dtype=dtype, device=device)

        # every trial retrains: estimate the direction on trials that are not scored
        nu, nr = stack("unlearned", "noiseless"), stack("retrained", "noiseless")
        (build_u, score_u), (build_r, score_r) = held_out_split(nu.shape[0]), held_out_split(nr.shape[0])
        direction, midpoint, distance = whitebox_direction(nu[build_u], nr[build_r])
        su = whitebox_scores(stack("unlearned", "released")[score_u], direction, midpoint)
        sr = whitebox_scores(stack("retrained", "released")[score_r], direction, midpoint)
        return AttackOutcome(
            to_numpy(su),
            to_numpy(sr),
            {
                "distance": distance,
                "direction_from_trials": int(build_u.stop + build_r.stop),
                "scored_trials": int(su.shape[0] + sr.shape[0]),
            },
        )
