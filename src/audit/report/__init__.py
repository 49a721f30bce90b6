"""The audit report: one JSON document, schema-versioned, written atomically.

The report is the pydantic model :class:`audit.report.schema.ReportModel` (also exported here as
``AuditReport``): the pipeline builds its sections directly, and the model encodes them (non-finite
numbers as ``"inf"``, ``"-inf"``, ``"nan"``; seeds as decimal strings) when it is written.
"""

from __future__ import annotations

import os
import platform
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

SCHEMA_VERSION = "2.5"
TOOL = "unlearn-audit"
#: The secret salt of the deletion commitment, written beside a report: the one file a signed
#: report directory may hold unsigned (it opens the signed commitment).
SALT_FILE = "deletion-commitment.salt"


def tool_version() -> str:
    """The version of the code that runs (``audit.__version__``), also in a checkout that is not
    installed or whose installed metadata is older than its sources."""
    from audit import __version__

    return __version__


def __getattr__(name: str) -> Any:
    if name == "AuditReport":  # the report *is* its pydantic model (imported on first use)
        from audit.report.schema import ReportModel

        return ReportModel
    raise AttributeError(f"module 'audit.report' has no attribute {name!r}")


def write_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` so that readers see the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def environment(device, threads: tuple[int, str] | None = None, dtype: tuple[str, str] | None = None) -> dict[str, Any]:
    """Versions of Python and every numerical dependency, the device used, the CPU threads
    (the count torch used, why, and the OpenMP wait policy: :mod:`audit.threads`) and, for an
    audit, the dtype it trained and attacked in and why (:func:`audit.methods.run_dtype`)."""
    import torch

    from audit.threads import wait_policy

    packages: dict[str, str | None] = {}
    for name in ("torch", "numpy", "scipy", "scikit-learn", "opacus", "typer", "rich"):  # the tool: report.tool
        try:
            packages[name] = version(name)
        except PackageNotFoundError:
            packages[name] = None
    env = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": packages,
        "device": str(device),
        "threads": torch.get_num_threads(),
        "threads_reason": threads[1] if threads else "torch's setting in this process (not chosen by the audit)",
        "omp_wait_policy": wait_policy(),
    }
    if dtype is not None:
        env["dtype"], env["dtype_reason"] = dtype
    if str(device).startswith("cuda"):
        env["cuda_device"] = torch.cuda.get_device_name(device)
        env["cuda_version"] = torch.version.cuda
    return env
