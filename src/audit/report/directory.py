"""A report directory is written as one set, or not at all.

Every output of one audit (``report.json``, ``report.html``, the deletion-commitment salt and the
signature) is written into a fresh staging directory beside the target and moved into place in
one step at the end: readers, ``audit verify`` and a second run see the complete earlier set or
the complete new one, never a mix. While a run writes it, the target is locked (an advisory
``flock`` on a lock file beside it), so two runs into the same ``--out`` cannot interleave: the
second is refused at start-up, before any work.

Why a directory swap rather than one ``os.replace`` per file: per-file replacement leaves a window
in which ``report.json`` is new and ``report.html``, the salt or an old ``report.dsse.json`` is
not, and the signer would sign that mix. On Linux the swap is ``renameat2(RENAME_EXCHANGE)``, one
atomic step; elsewhere two renames with a recoverable backup (an interrupted swap is undone by
the next run, which holds the lock).

The target must be a new path, an empty directory or a directory holding only an earlier report
(its known files): anything else is refused, so ``--out .`` can never replace a user's files.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import tempfile
from pathlib import Path

from audit.report import SALT_FILE
from certify.errors import InvalidInput

REPORT_FILES = ("report.json", "report.html", "report.dsse.json", SALT_FILE)
SECRET_FILES = frozenset({SALT_FILE})
#: A comparison's directory (``audit compare``): its own report files, and one report directory per
#: method under ``methods/<name>/`` (:mod:`audit.report.comparison`).
METHODS_DIR = "methods"
COMPARISON_ENTRIES = (*REPORT_FILES, METHODS_DIR)
#: The modes a report directory's public files may take: readable by all (the default, as a
#: compliance share or a CI artefact store needs), by the group only, or by the owner only.
#: Secrets (the salt) are 0600 whatever is chosen.
FILE_MODES = {"644": 0o644, "640": 0o640, "600": 0o600}
DEFAULT_FILE_MODE = "644"

_STAGING, _BACKUP, _LOCK = ".staging-", ".replaced-", ".lock"
#: Free space an output directory needs at start-up: a report set is about 0.2 MB, a comparison a
#: few MB, a run directory 0.2 MB (1,000 noise trials) to 3.3 MB (200 retrain trials). A disk
#: that cannot hold this is full; one that fills during the run is still named when a write fails.
MIN_FREE_BYTES = 16 * 2**20


def _hidden(target: Path, suffix: str) -> str:
    return f".{target.name}{suffix}"


def _dir_mode(file_mode: int) -> int:
    """The directory's mode for its files' mode: x wherever r is (0644 -> 0755)."""
    return file_mode | ((file_mode & 0o444) >> 2)


def _unwritable(target: Path, exc: OSError, field: str) -> InvalidInput:
    reason = exc.strerror or type(exc).__name__
    for ancestor in target.parents:
        if ancestor.exists():
            if not ancestor.is_dir():
                reason = f"{ancestor} is a file, not a directory"
            break
    return InvalidInput(
        field,
        "a directory path this user can create and write (its parent must be a writable directory)",
        str(target),
        hint=f"The system said: {reason}.",
    )


def check_room(path: str | os.PathLike, field: str, *, beside: bool = False) -> None:
    """Refuse at start-up, before any work, an output path this user cannot create or write
    (nearest existing directory not writable, e.g. a read-only file system) or whose file system
    has less than :data:`MIN_FREE_BYTES` free. Nothing is created. ``beside``: the files go
    beside ``path`` (a report set is staged in its parent and swapped in), not into it."""
    target = Path(path).absolute()
    existing = next((p for p in ((*target.parents,) if beside else (target, *target.parents)) if p.exists()), None)
    if existing is None or not existing.is_dir():
        return  # a file in the way: the path checks of the caller name it
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InvalidInput(
            field,
            "a directory path this user can create and write",
            str(target),
            hint=f"{existing} is not writable (permissions or a read-only file system).",
        )
    try:
        free = shutil.disk_usage(existing).free
    except OSError:
        return  # no figure to judge by: a full disk is then named by the first write that fails
    if free < MIN_FREE_BYTES:
        raise InvalidInput(
            field,
            f"a directory on a file system with at least {MIN_FREE_BYTES // 2**20} MiB free",
            str(target),
            hint=f"Only {free / 2**20:.1f} MiB are free there; free some space or choose another path.",
        )


def check_target(target: Path, field: str = "out", entries: tuple[str, ...] = REPORT_FILES) -> bool:
    """Refuse a target that is a file or holds anything but an earlier report (its ``entries``);
    True if it holds one."""
    if target.exists() and not target.is_dir():
        raise InvalidInput(field, "a directory (this path exists and is not one)", str(target))
    if not target.exists():
        return False
    foreign = sorted(p.name for p in target.iterdir() if p.name not in entries)
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise InvalidInput(
            field,
            "a new path, an empty directory or a directory holding only an earlier report (" + ", ".join(entries) + ")",
            str(target),
            hint=f"It also holds {shown}; choose another directory.",
        )
    return any(target.iterdir())


class ReportDirectory:
    """Stage the files of one report and move them into ``target`` as one set.

    Use as a context manager; :meth:`lock` is taken on entry (refused if another run holds it),
    files are added with :meth:`write`, and :meth:`commit` swaps the set into place. Leaving the
    context without :meth:`commit` (an error, Ctrl-C, SIGTERM) removes the staging directory and
    leaves the target as it was.
    """

    def __init__(
        self,
        target: str | os.PathLike,
        *,
        file_mode: int = FILE_MODES[DEFAULT_FILE_MODE],
        field: str = "out",
        entries: tuple[str, ...] = REPORT_FILES,
    ):
        self.target = Path(target).absolute()
        self.file_mode = file_mode
        self.field = field
        self.entries = entries
        self.staging: Path | None = None
        self.replaced = False
        self._lock_fd: int | None = None

    # -- lock ------------------------------------------------------------------------------------
    def __enter__(self) -> ReportDirectory:
        check_target(self.target, self.field, self.entries)  # before creating anything beside a target that is a file
        check_room(self.target, self.field, beside=True)  # a full disk is found now, not after the whole audit
        try:
            self.target.parent.mkdir(parents=True, exist_ok=True)
            self._acquire()
            self._recover()
            self.replaced = check_target(self.target, self.field, self.entries)  # again, now that we hold the lock
            self.staging = Path(tempfile.mkdtemp(prefix=_hidden(self.target, _STAGING), dir=self.target.parent))
            os.chmod(self.staging, _dir_mode(self.file_mode))
        except OSError as exc:
            self._cleanup()
            raise _unwritable(self.target, exc, self.field) from None
        except BaseException:
            self._cleanup()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._cleanup()

    def _lock_path(self) -> Path:
        return self.target.parent / _hidden(self.target, _LOCK)

    def _acquire(self) -> None:
        import fcntl

        path = self._lock_path()
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise InvalidInput(
                    self.field,
                    "a directory no other audit is writing at the same time",
                    str(self.target),
                    hint="Another run holds its lock; wait for it or choose another --out.",
                ) from None
            # The holder before us may have unlinked the file after we opened it: then our lock is
            # on an orphan inode and a third run could lock a new file. Retry until they agree.
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(path))
            except FileNotFoundError:
                same = False
            if same:
                self._lock_fd = fd
                return
            os.close(fd)

    def _recover(self) -> None:
        """Under the lock: undo what an interrupted earlier run left (a kill -9 cannot clean up)."""
        parent = self.target.parent
        backups = sorted(parent.glob(_hidden(self.target, _BACKUP) + "*"))
        if backups and not self.target.exists():
            os.rename(backups.pop(), self.target)  # the swap was interrupted between its renames
        for leftover in [*backups, *parent.glob(_hidden(self.target, _STAGING) + "*")]:
            shutil.rmtree(leftover, ignore_errors=True)

    def _cleanup(self) -> None:
        if self.staging is not None and self.staging.exists():
            shutil.rmtree(self.staging, ignore_errors=True)
        self.staging = None
        if self._lock_fd is not None:
            try:
                os.unlink(self._lock_path())
            except FileNotFoundError:
                pass
            os.close(self._lock_fd)  # closing releases the flock
            self._lock_fd = None

    # -- files -----------------------------------------------------------------------------------
    def write(self, name: str, data: str | bytes) -> Path:
        """Add one file to the set (secrets 0600, the rest ``file_mode``); returns its staged path."""
        if self.staging is None:
            raise RuntimeError("ReportDirectory.write outside its context")
        head, _, rest = name.partition("/")
        nested = (
            head == METHODS_DIR
            and head in self.entries
            and rest.count("/") == 1
            and rest.split("/")[0] not in ("", ".", "..")
        )
        if not (name in self.entries and name in REPORT_FILES or nested and rest.split("/")[1] in REPORT_FILES):
            raise ValueError(f"not a report file: {name}")
        path = self.staging / name
        if nested:  # methods/<name>/: a report directory of its own, with the set's directory mode
            for directory in (path.parent.parent, path.parent):
                if not directory.exists():
                    directory.mkdir(mode=_dir_mode(self.file_mode))
                    os.chmod(directory, _dir_mode(self.file_mode))
        mode = 0o600 if path.name in SECRET_FILES else self.file_mode
        payload = data.encode("utf-8") if isinstance(data, str) else data
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            with os.fdopen(fd, "wb") as fh:
                fh.write(payload)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(path, mode)  # the umask must not widen or narrow the documented mode
        except OSError as exc:
            raise _unwritable(self.target, exc, self.field) from None
        return path

    def commit(self) -> list[Path]:
        """Move the staged set into place in one step; returns the final paths."""
        if self.staging is None:
            raise RuntimeError("ReportDirectory.commit outside its context")
        names = sorted(p.name for p in self.staging.iterdir())
        try:
            _fsync_dir(self.staging)
            if self.target.exists():
                self._swap()
            else:
                os.rename(self.staging, self.target)
            self.staging = None
            _fsync_dir(self.target.parent)
        except OSError as exc:
            raise _unwritable(self.target, exc, self.field) from None
        return [self.target / n for n in names]

    def _swap(self) -> None:
        assert self.staging is not None
        if _exchange(self.staging, self.target):
            shutil.rmtree(self.staging, ignore_errors=True)  # it now holds the earlier set
            self.staging = None
            return
        backup = Path(tempfile.mkdtemp(prefix=_hidden(self.target, _BACKUP), dir=self.target.parent))
        os.rmdir(backup)
        os.rename(self.target, backup)
        os.rename(self.staging, self.target)  # an interruption here is undone by _recover
        shutil.rmtree(backup, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths with Linux ``renameat2(RENAME_EXCHANGE)``; False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False  # kernel or file system without the flag: fall back to two renames
    raise OSError(code, os.strerror(code), str(b))


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fill(
    rd: ReportDirectory,
    report: object,
    *,
    sign_key: str | os.PathLike | None = None,
    save_salt: bool = True,
    under: str = "",
) -> None:
    """Stage one audit's files: report.json, the page rendered from exactly those bytes, the
    salt (0600) unless the caller keeps it, and with a key the signature over the staged files;
    ``under`` (``methods/<name>/``) stages them in a comparison's subdirectory."""
    import json

    from audit.report.html import render_html

    text = report.to_json()  # type: ignore[attr-defined]  # validated once
    rd.write(under + "report.json", text)
    # a comparison's method pages open the one salt at the comparison's top (methods/<name>/ -> ../../)
    salt_path = "../" * under.count("/") + SALT_FILE
    rd.write(under + "report.html", render_html(json.loads(text), signed_by=_signer(sign_key), salt=salt_path))
    salt = getattr(report, "commitment_salt", None)
    if save_salt and salt is not None:
        rd.write(under + "deletion-commitment.salt", salt.hex() + "\n")
    if sign_key is not None:
        assert rd.staging is not None
        _sign(rd, rd.staging / under, sign_key)


def fill_comparison(
    rd: ReportDirectory, comparison: object, *, sign_key: str | os.PathLike | None = None, save_salt: bool = True
) -> None:
    """Stage a comparison (:mod:`audit.report.comparison`): each method's report directory under
    ``methods/<name>/`` (signed on its own with a key; the salt once, at the top), then the
    comparison's document and page, and one signature over the comparison and every method's files."""
    import json

    from audit.report.comparison_html import render_comparison_html

    document = comparison.document  # type: ignore[attr-defined]
    subjects = ["report.json", "report.html"]
    for name, report in comparison.reports.items():  # type: ignore[attr-defined]
        under = f"{METHODS_DIR}/{name}/"
        fill(rd, report, sign_key=sign_key, save_salt=False, under=under)
        subjects += [under + "report.json", under + "report.html"] + ([under + "report.dsse.json"] if sign_key else [])
    text = document.to_json()
    rd.write("report.json", text)
    rd.write("report.html", render_comparison_html(json.loads(text)))
    if save_salt:
        rd.write("deletion-commitment.salt", comparison.commitment_salt.hex() + "\n")  # type: ignore[attr-defined]
    if sign_key is not None:
        from audit.report.dsse import COMPARISON_PREDICATE_TYPE
        from audit.report.signing import comparison_claims

        _sign(
            rd,
            rd.staging,  # type: ignore[arg-type]
            sign_key,
            subjects=subjects,
            predicate=comparison_claims(json.loads(text)),
            predicate_type=COMPARISON_PREDICATE_TYPE,
        )


def _signer(sign_key: str | os.PathLike | None) -> str | None:
    """The keyid the page names: the set is signed with this key once the page is staged."""
    if sign_key is None:
        return None
    from audit.report.keys import keyid, load_private_key

    return keyid(load_private_key(sign_key).public_key())


def _sign(rd: ReportDirectory, directory: Path, sign_key: str | os.PathLike, **options: object) -> None:
    from audit.report.signing import sign_report

    try:
        envelope = sign_report(directory, sign_key, **options)  # type: ignore[arg-type]
        os.chmod(envelope, rd.file_mode)
    except OSError as exc:  # a disk that filled during the run: named like any other failed write
        raise _unwritable(rd.target, exc, rd.field) from None


def write_comparison(
    comparison: object,
    out: str | os.PathLike,
    *,
    sign_key: str | os.PathLike | None = None,
    save_salt: bool = True,
    file_mode: int = FILE_MODES[DEFAULT_FILE_MODE],
) -> list[Path]:
    """Write a comparison's directory as one set; returns its top-level files."""
    with ReportDirectory(out, file_mode=file_mode, entries=COMPARISON_ENTRIES) as rd:
        fill_comparison(rd, comparison, sign_key=sign_key, save_salt=save_salt)
        return rd.commit()


def write_report(
    report: object,
    out: str | os.PathLike,
    *,
    sign_key: str | os.PathLike | None = None,
    save_salt: bool = True,
    file_mode: int = FILE_MODES[DEFAULT_FILE_MODE],
) -> list[Path]:
    """Write one audit's report directory as one set (see the module docstring); returns its files."""
    with ReportDirectory(out, file_mode=file_mode) as rd:
        fill(rd, report, sign_key=sign_key, save_salt=save_salt)
        return rd.commit()
