"""audit: the user-facing layer of unlearn-audit (configuration, pipeline, reports, CLI).

>>> import audit
>>> report = audit.run(audit.AuditConfig(method="r2d", epsilon=1.0))  # doctest: +SKIP
>>> comparison = audit.compare(audit.AuditConfig(epsilon=1.0), ["r2d", "newton", "retrain"])  # doctest: +SKIP

The public names are imported on first use, so ``import audit`` (and commands that need only
part of it) stay cheap.
"""

from __future__ import annotations

from typing import Any

from audit import allocator

# before torch allocates: glibc keeps batched work's freed buffers (audit.allocator says when not)
allocator.tune()

#: The one place the package's version is written: pyproject.toml reads it (hatch's dynamic version),
#: and every report, signature and run key records it (audit.report.tool_version).
__version__ = "0.1.0"

__all__ = ["AuditConfig", "AuditReport", "challenge", "compare", "run"]

_WHERE = {
    "AuditConfig": "audit.config",
    "AuditReport": "audit.report",
    "run": "audit.pipeline",
    "compare": "audit.comparing",
    "challenge": "unlearners.caller",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        from importlib import import_module

        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'audit' has no attribute {name!r}")
