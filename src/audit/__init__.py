"""audit: the user-facing layer of unlearn-audit (configuration, pipeline, reports, CLI).

>>> import audit
>>> report = audit.run(audit.AuditConfig(method="r2d", epsilon=1.0))  # doctest: +SKIP
"""

from audit.config import AuditConfig
from audit.pipeline import run
from audit.report import AuditReport

__all__ = ["AuditConfig", "AuditReport", "run"]
