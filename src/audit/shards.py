"""Shards: an audit's trials and shadow models as independent pieces of work, and what comes back.

A shard is a range ``[start, stop)`` of the trial indices of one role: ``"trials"`` (the models
the attacks score) or ``"shadows"`` (the shadow models some attacks calibrate on). Given the
shared context (:class:`ShardContext`), :func:`compute_shard` makes exactly those models
(:func:`audit.trials.make_trials` with ``first = start``: every trial is a pure function of the
role's seed and its index) and returns only their **features**: what each selected attack reads
of a model (:meth:`attacks.base.Attack.features`: a loss on Z, a confidence per forgotten record,
a relearn time), plus two numbers per model for the trial summary (a digest, to detect identical
copies, and its squared distance from the world's own noiseless model). Models never leave the
worker, so what crosses a network is small; the attacks' scores, which look across models, are
computed once from the gathered features (:func:`gather`, then ``Attack.score``).

Identity. The features of a model do not depend on which shard it was in or how many models
were stacked with it: trials ``[a, b)`` are bit for bit those rows of the whole run
(:mod:`audit.trials`), and features are computed in blocks of :attr:`ShardContext.granule`
models aligned to multiples of it, the last block padded with copies of its last model, so every
model is computed in the same block, at the same position, whatever the shard size (shard sizes
are multiples of the granule). The same configuration and seed thus give byte-identical scores
and bounds on every executor, with any shard size and any number of workers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from attacks.base import Attack, AttackInputs, ModelRows, to_numpy
from audit.seeds import child_seed
from certify.errors import InvalidInput

ROLES = ("trials", "shadows")
#: Separator of the parts of a feature key: ``attack|game|world|feature``.
SEP = "|"
#: The two games every attack plays: the audit's (unlearned vs retrained) and the positive
#: control (original vs retrained), with the world each plays as "unlearned".
GAMES = {"game": "unlearned", "control": "original"}


@dataclass(frozen=True, order=True)
class Shard:
    """Trials ``start .. stop - 1`` of one role."""

    role: str
    start: int
    stop: int

    @property
    def size(self) -> int:
        return self.stop - self.start

    @property
    def name(self) -> str:
        """As logs and reports write it: ``trials[0:64)``."""
        return f"{self.role}[{self.start}:{self.stop})"


def plan_shards(role: str, n: int, size: int, granule: int) -> list[Shard]:
    """``n`` trials of ``role`` cut into shards of ``size`` (a multiple of ``granule``; the last
    may be smaller)."""
    if role not in ROLES:
        raise InvalidInput("role", "one of " + ", ".join(ROLES), role)
    if size < 1 or size % granule:
        raise InvalidInput(
            "shard_size", f"a positive multiple of {granule} (the models whose features are computed together)", size
        )
    return [Shard(role, a, min(n, a + size)) for a in range(0, n, size)]


def round_to_granule(size: int, granule: int) -> int:
    """``size`` rounded up to a multiple of ``granule`` (at least one granule)."""
    return max(granule, -(-int(size) // granule) * granule)


@dataclass
class ShardContext:
    """Everything a worker needs to compute any shard of one audit (pickled once per worker).

    ``attacks`` are the attack classes themselves, not their names: an attack registered in the
    driver's process (``attacks.registry.register``) is unknown to a fresh worker, so the class
    travels with the context (cloudpickle: by reference when importable, else by value).
    ``setup`` is the attack stage's :class:`~audit.attacking.AttackSetup` with its smoothness
    already evaluated (``smoothness``: L, or None when no selected attack needs it); ``seed``
    the attack stage's seed (the roles' and attacks' seeds derive from it); ``sizes`` the
    number of models of each role; ``granule`` the block of models whose features are computed
    together."""

    setup: Any
    attacks: tuple[type[Attack], ...]
    mode: str
    seed: int
    settings: dict[str, Any]
    sizes: dict[str, int]
    granule: int
    smoothness: float | None = None
    _inputs: dict = field(default_factory=dict, repr=False, compare=False)

    def attacks_of(self, role: str) -> list[type[Attack]]:
        """The attack classes whose features a shard of ``role`` computes (shadows: only those
        that need shadow models)."""
        return list(self.attacks) if role == "trials" else [c for c in self.attacks if "shadows" in c.needs]

    def role_seed(self, role: str) -> int:
        return child_seed(self.seed, role)

    def inputs(self, cls: type[Attack], game: str) -> AttackInputs:
        """The shared inputs of one attack in one game (no models: those come as rows)."""
        key = (cls.name, game)
        if key not in self._inputs:
            s = self.setup
            played = s.theta_unlearned if game == "game" else s.theta_original
            empty = s.theta_original.new_empty((0, s.theta_original.shape[-1]))
            noise = self.mode == "noise"
            self._inputs[key] = AttackInputs(
                objective=s.objective,
                X=s.X,
                y=s.y,
                forget=s.forget,
                X_unseen=s.X_unseen,
                y_unseen=s.y_unseen,
                theta_original=s.theta_original,
                theta_unlearned=played,
                theta_retrained=s.theta_retrained,
                released_unlearned=empty,
                released_retrained=empty,
                noiseless_unlearned=played if noise else empty,
                noiseless_retrained=s.theta_retrained if noise else empty,
                sigma=s.sigma,
                delta=s.delta,
                seed=child_seed(self.seed, cls.name if game == "game" else cls.name + "/control"),
                settings=self.settings,
                smoothness=self.smoothness,
            )
        return self._inputs[key]

    def key(self) -> str:
        """A digest of everything the shards' results depend on (the run directory's key)."""
        from audit.report import tool_version

        s = self.setup
        h = hashlib.sha256()
        for part in (
            tool_version(),
            [f"{c.__module__}.{c.__qualname__}:{c.name}" for c in self.attacks],
            self.mode,
            self.seed,
            sorted(self.settings.items()),
            sorted(self.sizes.items()),
            self.granule,
            self.smoothness,
            s.sigma,
            s.delta,
            str(s.theta_original.dtype),
            str(s.theta_original.device.type),
            type(s.method).__name__,
            sorted(s.method.report_hyperparameters().items()),
            repr(s.objective.model),
            s.method.code_identity(),
        ):
            h.update(repr(part).encode())
        for tensor in (
            s.X,
            s.y,
            s.forget,
            s.X_unseen,
            s.y_unseen,
            s.theta_original,
            s.theta_unlearned,
            s.theta_retrained,
        ):
            h.update(_tensor_bytes(tensor))
        return h.hexdigest()


def _tensor_bytes(t: Tensor) -> bytes:
    array = to_numpy(t)
    return repr((array.shape, str(array.dtype))).encode() + np.ascontiguousarray(array).tobytes()


# -- one shard ---------------------------------------------------------------------------------
def compute_shard(ctx: ShardContext, shard: Shard) -> dict[str, np.ndarray]:
    """The features of the models of ``shard``, as flat arrays (``attack|game|world|feature``),
    and per model its digest and squared distance from the world's noiseless model."""
    from audit.trials import make_trials

    s = ctx.setup
    trials = make_trials(
        ctx.mode,
        s.method,
        s.forget,
        s.sigma,
        shard.size,
        ctx.role_seed(shard.role),
        init=s.init,
        theta_unlearned=s.theta_unlearned,
        theta_retrained=s.theta_retrained,
        theta_original=s.theta_original,
        first=shard.start,
    )
    retrains = trials.mode == "retrain"
    per_row = trials.mode in ("retrain", "rerun")  # every trial its own noiseless model (rerun: the run itself)
    rows = {
        world: ModelRows(getattr(trials, world), getattr(trials, "theta_" + world) if per_row else None)
        for world in ("unlearned", "retrained", "original")
    }
    out: dict[str, np.ndarray] = {"path": np.array(trials.path)}
    if shard.role == "trials":
        for world in ("unlearned", "retrained"):
            reference = getattr(s, "theta_" + world)
            out[f"_digest{SEP}{world}"] = _blocked(
                lambda r: {"v": _digests(r.released)}, rows[world], ctx.granule, "digest"
            )["v"]
            out[f"_distance{SEP}{world}"] = _blocked(
                lambda r: {"v": to_numpy((r.released - reference).pow(2).sum(dim=1))},  # noqa: B023 (called at once)
                rows[world],
                ctx.granule,
                "distance",
            )["v"]
        if s.production and retrains:  # each original model's mean loss on D, to place the production model
            with torch.no_grad():
                out[f"_loss{SEP}original"] = np.array(
                    [float(s.objective.loss(theta, s.X, s.y)) for theta in trials.theta_original]
                )
    for cls in ctx.attacks_of(shard.role):
        attack = cls()
        for game, played in GAMES.items():
            inputs = ctx.inputs(cls, game)
            for label, world in (("unlearned", played), ("retrained", "retrained")):
                feats = _blocked(lambda r: attack.features(inputs, r), rows[world], ctx.granule, cls.name)  # noqa: B023
                for name, value in feats.items():
                    out[SEP.join((cls.name, game, label, name))] = value
    return out


def _digests(released: Tensor) -> np.ndarray:
    """A 64-bit digest of each row's bytes (identical rows, identical digests)."""
    array = np.ascontiguousarray(to_numpy(released))
    return np.array(
        [int.from_bytes(hashlib.blake2b(row.tobytes(), digest_size=8).digest(), "little") for row in array],
        dtype=np.uint64,
    )


def _padded(rows: Tensor, size: int) -> Tensor:
    extra = size - rows.shape[0]
    return rows if extra == 0 else torch.cat([rows, rows[-1:].expand(extra, -1)])


def _blocked(
    fn: Callable[[ModelRows], Mapping[str, Any]], rows: ModelRows, granule: int, who: str
) -> dict[str, np.ndarray]:
    """``fn`` on blocks of exactly ``granule`` models (the last padded), concatenated and trimmed."""
    n = len(rows)
    parts: list[dict[str, np.ndarray]] = []
    for a in range(0, n, granule):
        real = min(granule, n - a)
        block = ModelRows(
            _padded(rows.released[a : a + real], granule),
            None if rows.noiseless is None else _padded(rows.noiseless[a : a + real], granule),
        )
        got = fn(block)
        if not isinstance(got, Mapping) or not got:
            raise InvalidInput(
                f"{who}.features",
                "a non-empty mapping of feature name -> array with one row per model",
                type(got).__name__,
            )
        part = {}
        for name, value in got.items():
            value = to_numpy(value)
            if value.ndim < 1 or value.shape[0] != granule:
                raise InvalidInput(
                    f"{who}.features[{name!r}]", f"an array with one row per model ({granule})", tuple(value.shape)
                )
            part[name] = value[:real]
        parts.append(part)
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}


# -- gathering ---------------------------------------------------------------------------------
def gather(results: Mapping[Shard, Mapping[str, np.ndarray]], role: str) -> dict[str, np.ndarray]:
    """The arrays of every shard of ``role``, concatenated in trial order (checked contiguous)."""
    shards = sorted(s for s in results if s.role == role)
    expected = 0
    for s in shards:
        if s.start != expected:
            raise InvalidInput("shards", f"contiguous shards of {role} from 0", [x.name for x in shards])
        expected = s.stop
    if not shards:
        return {}
    keys = [k for k in results[shards[0]] if k != "path"]
    out = {k: np.concatenate([results[s][k] for s in shards]) for k in keys}
    out["path"] = np.array(str(results[shards[0]]["path"]))
    return out


def features_of(gathered: Mapping[str, Mapping[str, np.ndarray]], attack: str, game: str) -> dict:
    """An attack's features by world (:data:`attacks.base.WORLDS`) in one game, from the
    gathered arrays of each role."""
    worlds: dict[str, dict[str, np.ndarray]] = {}
    names = {
        ("trials", "unlearned"): "unlearned",
        ("trials", "retrained"): "retrained",
        ("shadows", "unlearned"): "shadows_in",
        ("shadows", "retrained"): "shadows_out",
    }
    for role, arrays in gathered.items():
        for key, value in arrays.items():
            parts = key.split(SEP)
            if len(parts) == 4 and parts[0] == attack and parts[1] == game:
                worlds.setdefault(names[(role, parts[2])], {})[parts[3]] = value
    return worlds


def identical_copies(trials: Mapping[str, np.ndarray]) -> bool:
    """Every released model of each world is the same vector (by digest)."""

    def same(world: str) -> bool:
        d = trials[f"_digest{SEP}{world}"]
        return d.size > 1 and bool((d == d[0]).all())

    return same("unlearned") and same("retrained")


def spread(trials: Mapping[str, np.ndarray], world: str) -> float:
    """Root-mean-square distance of a world's releases from the world's own noiseless model."""
    return float(np.sqrt(np.mean(trials[f"_distance{SEP}{world}"])))
