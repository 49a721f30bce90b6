"""The run directory of a resumable audit: one file per finished shard, keyed by the run's digest.

``audit run --resume DIR`` keeps every finished shard (:mod:`audit.shards`) in DIR as it
arrives, so a killed run loses only the shards in flight, and a second run with the same
configuration skips what is there. Layout::

    DIR/run.json                       {"key": <digest of everything the shards depend on>, ...}
    DIR/<key[:16]>-trials-0-64.npz     one shard's features (numpy .npz, no pickles)

Every file is written to a temporary name in DIR, flushed to disk and renamed into place
(``os.replace`` is atomic on POSIX), so a file either is a whole shard or is absent. A directory
made by another configuration (another key) is refused, never mixed. A shard file that cannot be
read back (a disk error, an edit) is computed again and replaced, and the run says so. A directory
that is read-only or on a full disk is refused at start-up (:func:`check_run_directory`); a disk
that fills during the run ends it with one sentence naming the directory, the finished shards kept.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from audit.shards import Shard
from certify.errors import InvalidInput

MANIFEST = "run.json"
#: Prefix of a file being written (renamed into place when whole).
PARTIAL = ".partial-"
FORMAT = "unlearn-audit run directory 1"


def check_run_directory(path: str | os.PathLike, *, field: str = "resume") -> None:
    """Refuse at once (before any training) a run directory that can never be used: a file, or a
    directory with other files and no run manifest. Whether it belongs to this run is known only
    once the models exist (:class:`RunStore`)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InvalidInput(field, "a directory for the run's finished shards (created if missing)", str(path))
    if path.is_dir() and not (path / MANIFEST).exists() and any(path.iterdir()):
        raise InvalidInput(
            field,
            "a new or empty directory, or the run directory of this configuration (this one holds other files)",
            str(path),
        )
    if not path.exists() and path.parent.exists() and not path.parent.is_dir():
        raise InvalidInput(field, "a directory for the run's finished shards (created if missing)", str(path))
    from audit.report.directory import check_room

    check_room(path, field)  # read-only or full: found now, not when the first shard is kept


def stored_shards(path: str | os.PathLike, key: str, shards: list[Shard]) -> list[Shard]:
    """The shards of run ``key`` already kept in ``path``, by their files' names (nothing is created
    or read: what a run will skip, known before it starts)."""
    path = Path(path)
    try:
        found = json.loads((path / MANIFEST).read_text())
    except (OSError, ValueError):
        return []
    if not isinstance(found, dict) or found.get("key") != key:
        return []
    return [shard for shard in shards if (path / _name(key, shard)).exists()]


def _name(key: str, shard: Shard) -> str:
    return f"{key[:16]}-{shard.role}-{shard.start}-{shard.stop}.npz"


class RunStore:
    """Finished shards of one run (``key``: :meth:`audit.shards.ShardContext.key`) in ``path``."""

    def __init__(self, path: str | os.PathLike, key: str, *, field: str = "resume") -> None:
        self.path, self.key, self.field = Path(path), key, field
        if self.path.exists() and not self.path.is_dir():
            raise InvalidInput(field, "a directory for the run's finished shards (created if missing)", str(path))
        manifest = self.path / MANIFEST
        if manifest.exists():
            try:
                found = json.loads(manifest.read_text())
                other = found["key"] if found.get("format") == FORMAT else None
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                other = None
            if other is None:
                raise InvalidInput(
                    field, f"a run directory of unlearn-audit ({MANIFEST} unreadable or of another format)", str(path)
                )
            if other != key:
                raise InvalidInput(
                    field,
                    "the run directory of this configuration (it holds shards of run "
                    f"{other[:16]}, this run is {key[:16]}: another configuration, seed, data or "
                    "version); use a new directory",
                    str(path),
                )
            for stale in self.path.glob(PARTIAL + "*"):  # half-written by a killed run: never a shard
                stale.unlink(missing_ok=True)
        else:
            created = not self.path.exists()
            try:
                self.path.mkdir(parents=True, exist_ok=True)
                if any(p.name != MANIFEST for p in self.path.iterdir()):
                    raise InvalidInput(
                        field,
                        "a new or empty directory, or the run directory of this "
                        "configuration (this one holds other files)",
                        str(path),
                    )
                _atomic_write(manifest, json.dumps({"format": FORMAT, "key": key}, indent=2).encode())
            except OSError as exc:
                if created:  # nothing left behind by a refusal
                    shutil.rmtree(self.path, ignore_errors=True)
                raise InvalidInput(
                    field,
                    "a writable directory for the run's finished shards",
                    str(path),
                    hint=f"{type(exc).__name__}: {exc.strerror or exc}",
                ) from None

    def file(self, shard: Shard) -> Path:
        return self.path / _name(self.key, shard)

    def load(self, shard: Shard) -> dict[str, np.ndarray] | None:
        """The stored result of ``shard``, or None when it is absent or unreadable."""
        file = self.file(shard)
        if not file.exists():
            return None
        try:
            with np.load(file, allow_pickle=False) as data:
                return {name: data[name] for name in data.files}
        except (OSError, ValueError, zipfile.BadZipFile, EOFError):
            return None

    def save(self, shard: Shard, result: Mapping[str, np.ndarray]) -> None:
        import io

        buffer = io.BytesIO()
        np.savez(buffer, **result)  # type: ignore[arg-type]  # the keys are feature names, never allow_pickle
        try:
            _atomic_write(self.file(shard), buffer.getvalue())
        except OSError as exc:  # a disk that filled during the run: one sentence naming the directory
            raise InvalidInput(
                self.field,
                "a run directory that can hold the finished shards",
                str(self.path),
                hint=f"Keeping {shard.name} failed: {exc.strerror or exc}; the shards finished "
                "before it are kept there, and a rerun with the same directory skips them.",
            ) from None


def _atomic_write(path: Path, data: bytes) -> None:
    """``data`` at ``path``, whole or not at all: a temporary file in the same directory,
    fsynced, then renamed over ``path``."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=PARTIAL, suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
