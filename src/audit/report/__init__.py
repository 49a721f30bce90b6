"""The audit report: one JSON document, schema-versioned, written atomically.

Non-finite numbers (an unbounded ε) are encoded as the strings ``"inf"``, ``"-inf"`` and
``"nan"`` so the document stays standard JSON.
"""

from __future__ import annotations

import math
import os
import platform
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

SCHEMA_VERSION = "1.0"
TOOL = "unlearn-audit"


def tool_version() -> str:
    try:
        return version(TOOL)
    except PackageNotFoundError:
        return "0+unknown"


#: Error findings that mean the certificate does not hold.
VIOLATION_CODES = frozenset({"bound-violated", "realized-exceeds-certified", "certificate-violated"})


def verdict_of(findings: list[dict[str, Any]]) -> str:
    """``violated`` if an error finding refutes the certificate, ``not-certified`` if a theorem
    condition failed, else ``consistent``."""
    codes = {f["code"] for f in findings if f["severity"] == "error"}
    if codes & VIOLATION_CODES:
        return "violated"
    if "certificate-not-issued" in codes:
        return "not-certified"
    return "consistent"


@dataclass
class AuditReport:
    """Everything one audit established. See the README for the meaning of each section."""

    config: dict[str, Any]
    dataset: dict[str, Any]
    certificate: dict[str, Any]
    realized: dict[str, Any]
    utility: dict[str, Any]
    tradeoff: list[dict[str, Any]]
    checkpoint_recovery: dict[str, Any] | None
    parameters: dict[str, Any]
    method: dict[str, Any]
    timings: dict[str, float]
    seeds: dict[str, int]
    environment: dict[str, Any]
    findings: list[dict[str, Any]] = field(default_factory=list)
    attacks: dict[str, Any] | None = None
    ledger: dict[str, Any] | None = None
    deletion_request: dict[str, Any] = field(default_factory=dict)
    started_at: str | None = None
    schema_version: str = SCHEMA_VERSION
    tool: dict[str, str] = field(default_factory=lambda: {"name": TOOL, "version": tool_version()})
    created_at: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))

    @property
    def verdict(self) -> str:
        """``consistent``, ``violated`` or ``not-certified`` (a theorem condition failed)."""
        return verdict_of(self.findings)

    #: the secret salt of the deletion commitment: held in memory, never serialised
    commitment_salt: bytes | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("commitment_salt")
        if d["ledger"] is None:  # a single request: no ledger section
            d.pop("ledger")
        d = encode_nonfinite(d)
        d["verdict"] = self.verdict
        return d

    def to_json(self) -> str:
        """The report as written to disk: validated and encoded by the pydantic model.

        :class:`audit.report.schema.ReportModel` is the single source of truth for the wire
        format (seeds as decimal strings, non-finite numbers as strings); a report that does not
        fit it is a bug in the producer, so it raises instead of writing.
        """
        from audit.report.schema import ReportModel

        return ReportModel.from_report_dict(self.to_dict()).to_json_text()

    def write(self, out_dir: str | os.PathLike) -> Path:
        """Write ``report.json`` into ``out_dir`` atomically (temp file + rename)."""
        return write_atomic(Path(out_dir) / "report.json", self.to_json())


def encode_nonfinite(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, dict):
        return {str(k): encode_nonfinite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [encode_nonfinite(v) for v in obj]
    return obj


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


def environment(device) -> dict[str, Any]:
    """Versions of Python and every numerical dependency, and the device used."""
    import torch

    packages = {}
    for name in ("torch", "numpy", "scipy", "scikit-learn", "opacus", "typer", "rich", TOOL):
        try:
            packages[name] = version(name)
        except PackageNotFoundError:
            packages[name] = None
    env = {"python": platform.python_version(), "platform": platform.platform(),
           "packages": packages, "device": str(device), "threads": torch.get_num_threads()}
    if str(device).startswith("cuda"):
        env["cuda_device"] = torch.cuda.get_device_name(device)
        env["cuda_version"] = torch.version.cuda
    return env
