"""The report model: the single source of truth for ``report.json`` and its JSON Schema.

Every section of the report is a pydantic v2 model: the report itself here, its sections in
``schema_inputs.py`` (what was audited), ``schema_certificate.py``, ``schema_measurements.py`` and
``schema_attacks.py``, over the field kit of ``schema_fields.py`` (all re-exported here, so
``schema.Certificate`` names the one class). The JSON Schema shipped with the
package (``audit/report/schemas/report-<version>.schema.json``) is generated from these models
by ``python -m audit.report.schema`` and a test fails if the committed file drifts from them.

API
---
* :class:`ReportModel`: the whole report. ``ReportModel.from_report_dict(d)`` validates a dict
  as loaded from ``report.json`` (raises :class:`pydantic.ValidationError`);
  ``model.to_json_dict()`` gives the JSON-ready dict the producer writes (every explicit
  encoding below applied); ``model.to_json_text()`` the exact text (sorted keys, indent 2).
* :func:`validate_report`: the same validation, but a corrupt report raises one
  :class:`certify.errors.InvalidInput` naming the dotted path of the first bad field
  (``certificate.epsilon``, ``attacks.attacks.mia.bound.counts.tp``).
* :func:`load_report`: read and validate a ``report.json`` file (bare ``NaN``/``Infinity``
  literals are rejected: they are not JSON).
* :func:`json_schema`: the JSON Schema (draft 2020-12) with ``$id``, ``title`` and ``version``;
  :func:`schema_path` is where the generated file is shipped.

Explicit encodings (RFC 8785 canonical JSON has neither non-finite numbers nor integers
beyond ±(2**53 − 1))
----------------------------------------------------------------------------------------
* :data:`ExtFloat` ("extended float"): a real number that may legitimately be ``+inf``,
  ``-inf`` or ``nan`` (an unbounded ε, σ = ∞ when no finite noise certifies a run, a GDP fit
  that is undefined, the std of a single noise draw, a diverged run's losses). JSON: a number,
  or one of the strings ``"inf"``, ``"-inf"``, ``"nan"`` (only those the field allows; e.g.
  ``certificate.sigma`` allows ``"inf"`` but never ``"nan"`` or a negative number). Python:
  ``float``. Used for every *measured or derived* real quantity: ε's, σ's, sensitivities,
  distances, norms, losses, accuracies, slack, GDP estimates, thresholds, standard deviations,
  relearn losses.
* Finite floats (plain JSON numbers, non-finite values rejected) are used for inputs and for
  values that cannot be non-finite by construction: configuration values, δ, confidences,
  ROC points, AUROCs and TPRs, Clopper-Pearson rate bounds, class balances, histogram edges,
  timings, certificate constant values, relearn step statistics.
* :data:`Seed`: every seed (``seeds.*``, ``config.seed``, ``attacks.trials.seed`` and
  ``root_seed``, each bound's ``seed``, the population MIA ``protocol.seed``) is an unsigned
  64-bit integer written as a canonical decimal string (``"6716946102996081540"``; pattern
  ``^(0|[1-9][0-9]*)$``) and parsed back to ``int``. Reading also accepts a JSON integer
  (reports written before the producer switched); writing always emits the string.
* Every other integer is a count (records, trials, steps, bins) and must lie in
  [−(2**53 − 1), 2**53 − 1]; the schema says so with ``minimum``/``maximum``.
* Open sections (``dict[str, Any]``: dataset ``source`` and ``preprocessing``, config
  ``feature_map`` and ``method_options``, each attack's ``details``, method
  ``hyperparameters``, constant ``diagnostics``) have no per-field schema, so values are
  normalised generically: non-finite floats become ``"inf"``/``"-inf"``/``"nan"``, integers
  beyond ±(2**53 − 1) become decimal strings (they cannot be parsed back: no schema says they
  were integers), tuples become lists; anything that is not JSON data is rejected.
* Timestamps (``created_at``, ``started_at``) are RFC 3339 strings in UTC (``Z`` or
  ``+00:00``), kept verbatim.

Keys that may be left out (never written as ``null``)
-----------------------------------------------------
``utility.<model>.<split>.noisy_*`` (σ not finite), ``tradeoff.rows[i].test_accuracy_released``
and ``realized_epsilon`` (σ not finite), ``timings.attacks_s`` (no attack ran),
``timings.unlearn_repeats_s``/``retrain_repeats_s`` (a report written before timings were repeated),
``environment.cuda_device``/``cuda_version`` (not on CUDA), ``ledger`` (a single request). Every
other key is required; ``null`` is allowed only where the type says so (``attacks``,
``tradeoff``, ``checkpoint_recovery``, ``started_at``, a ``none`` certificate's ``epsilon`` and
``sensitivity``, config options left unset, ...). ``attacks.attacks`` holds one entry per attack
that ran, by name (built-in or plug-in).
:meth:`ReportModel.to_json_dict` writes an optional key only when it was given.

``extra="forbid"``
------------------
Every model here forbids unknown keys (a typo or an injected field is an error), except
:class:`Timings`, which accepts additional ``<stage>_s``-style entries as long as they are
finite numbers ≥ 0 (the producer adds stages as it grows). Openness is confined to the
``dict[str, Any]`` sections listed above (and each attack's ``details``), each documented where
it is declared.

Cross-field checks (pydantic only; the JSON Schema checks shape, types and ranges)
----------------------------------------------------------------------------------
``verdict`` agrees with the findings (:func:`audit.findings.verdict_of`), and each finding's
severity with its code; ``certificate.conditional`` agrees with the constants' provenance; a
``none`` certificate states no ε and is not valid; ``deletion_request.n_records == dataset.forget_size``;
``started_at <= created_at``; ROC curves have as many FPR as TPR points; every loss histogram
has ``len(edges) - 1`` bins; the four ``noisy_*`` utility fields come all or none; a tradeoff
row has ``test_accuracy_released`` and ``realized_epsilon`` exactly when its σ is finite.

Versions: the rule (report ``schema_version`` and the comparison's, ``MAJOR.MINOR``)
---------------------------------------------------------------------------------
* A new optional key (declared with ``Absent()`` or a default, so a document without it still
  validates) is a **minor** version: 2.2 → 2.3. Every document of an older minor version of the
  same major still validates against the newer models.
* A **reader** (:meth:`ReportModel.from_report_dict`, :func:`validate_report`, :func:`load_report`,
  ``audit report``, ``audit compare`` reading its methods' reports) accepts a document of its own
  major version: when the document's minor version is newer than the reader's, keys the reader does
  not know are ignored (:func:`read_context`); when it is the reader's own or older, an unknown key
  is an error as before (a typo, an injected field). Another major version is refused.
* A **writer** (the pipeline, ``audit compare``: the models built directly) stays strict: it writes
  its own version exactly and refuses unknown keys.
* Anything else (a key removed or renamed, a type, unit or meaning changed, an optional key made
  required) is a breaking change: a **major** version, 2.x → 3.0. The JSON Schema shipped for a
  version describes that version exactly (``additionalProperties: false``).
"""

from __future__ import annotations

import json
import re
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    ConfigDict,
    PrivateAttr,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from audit.findings import VERDICTS
from audit.findings import verdict_of as _verdict_of
from audit.report import SCHEMA_VERSION, TOOL
from audit.report.schema_attacks import (
    AttackResult,
    Attacks,
    Comparison,
    Counts,
    Direction,
    EpsilonBound,
    EstimateInterval,
    Estimates,
    Execution,
    GdpBound,
    GdpEstimate,
    PositiveControl,
    ProductionModel,
    Reproducibility,
    Roc,
    RocCurve,
    TrialCost,
    Trials,
    TrialSizing,
)
from audit.report.schema_certificate import (
    BasicComposition,
    Certificate,
    CertificateKind,
    Condition,
    Constant,
    Ledger,
    LedgerOrders,
    LedgerRelease,
    Realized,
)
from audit.report.schema_fields import (
    NEWER_MINOR,
    NONFINITE,
    Absent,
    Bool,
    Count,
    Delta,
    ExtFloat,
    ExtNonNeg,
    ExtNonNegNoNan,
    ExtPosNoNan,
    ExtProbability,
    Float,
    NonNegFloat,
    OpenDict,
    OpenUnit,
    Pair,
    PosCount,
    PosFloat,
    Probability,
    Seed,
    Sha256,
    Str,
    Text,
    Timestamp,
    _Section,
    ext_float,
    pattern_str,
    read_context,
    schema_version_field,
)
from audit.report.schema_inputs import (
    CONFIG_ADDED_LATER,
    MODEL_ORIGINS,
    AttackName,
    ClassBalance,
    Config,
    Dataset,
    DeletionRequest,
    Finding,
    FindingCode,
    Layer,
    Model,
    ModelCheck,
    RequestId,
    Tool,
)
from audit.report.schema_measurements import (
    Capabilities,
    CheckpointNotApplicable,
    CheckpointRecovered,
    CheckpointRecovery,
    Environment,
    Frontier,
    FrontierNotApplicable,
    FrontierPoint,
    FrontierSection,
    HistogramCounts,
    Knob,
    LossHistograms,
    Method,
    ModelUtility,
    Parameters,
    Seeds,
    SplitCounts,
    SplitUtility,
    Timings,
    Tradeoff,
    TradeoffRow,
    UnlearnedVsRetrained,
    Utility,
)
from certify.errors import (
    InvalidInput,
)

__all__ = [
    "Absent",
    "AttackName",
    "AttackResult",
    "Attacks",
    "BasicComposition",
    "Bool",
    "CONFIG_ADDED_LATER",
    "Capabilities",
    "Certificate",
    "CertificateKind",
    "CheckpointNotApplicable",
    "CheckpointRecovered",
    "CheckpointRecovery",
    "ClassBalance",
    "Comparison",
    "Condition",
    "Config",
    "Constant",
    "Count",
    "Counts",
    "Dataset",
    "DeletionRequest",
    "Delta",
    "Direction",
    "Environment",
    "EpsilonBound",
    "EstimateInterval",
    "Estimates",
    "Execution",
    "ExtFloat",
    "ExtNonNeg",
    "ExtNonNegNoNan",
    "ExtPosNoNan",
    "ExtProbability",
    "Finding",
    "FindingCode",
    "Float",
    "Frontier",
    "FrontierNotApplicable",
    "FrontierPoint",
    "FrontierSection",
    "GdpBound",
    "GdpEstimate",
    "HistogramCounts",
    "Knob",
    "Layer",
    "Ledger",
    "LedgerOrders",
    "LedgerRelease",
    "LossHistograms",
    "MODEL_ORIGINS",
    "Method",
    "Model",
    "ModelCheck",
    "ModelUtility",
    "NEWER_MINOR",
    "NONFINITE",
    "NonNegFloat",
    "OpenDict",
    "OpenUnit",
    "Pair",
    "Parameters",
    "PosCount",
    "PosFloat",
    "PositiveControl",
    "Probability",
    "ProductionModel",
    "Realized",
    "ReportModel",
    "Reproducibility",
    "RequestId",
    "Roc",
    "RocCurve",
    "SCHEMA_ID",
    "SCHEMA_VERSION",
    "Seed",
    "Seeds",
    "Sha256",
    "SplitCounts",
    "SplitUtility",
    "Str",
    "Text",
    "Timestamp",
    "Timings",
    "Tool",
    "Tradeoff",
    "TradeoffRow",
    "TrialCost",
    "TrialSizing",
    "Trials",
    "UnlearnedVsRetrained",
    "Utility",
    "ext_float",
    "json_schema",
    "load_report",
    "pattern_str",
    "read_context",
    "schema_path",
    "schema_version_field",
    "validate_report",
    "verdict_of",
]

SCHEMA_ID = f"https://unlearn-audit.dev/schemas/report-{SCHEMA_VERSION}.schema.json"
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


# ----------------------------------------------------------------------------------------------
# The report

Verdict = Literal[VERDICTS]  # type: ignore[valid-type]
verdict_of = _verdict_of


class ReportModel(_Section):
    """An unlearn-audit report (``report.json``), schema version 2.5."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        use_attribute_docstrings=True,
        title="unlearn-audit report",
    )

    schema_version: schema_version_field(SCHEMA_VERSION)  # type: ignore[valid-type]
    """Version of this schema; a major version change breaks readers."""
    tool: Tool
    created_at: Timestamp
    """When the report was written."""
    started_at: Timestamp | None
    """When the audit started (null only for reports assembled by hand)."""
    verdict: Verdict
    """``violated`` when a finding shows a violation, ``not-certified`` when no certificate was
    issued (no theorem, or a failed condition), ``unusable`` when the unlearned model failed (it
    departs from the retrained model, or is itself at chance), else ``consistent``
    (:func:`audit.findings.verdict_of`)."""
    findings: list[Finding]
    config: Config
    method: Method
    dataset: Dataset
    model: Model
    deletion_request: DeletionRequest
    certificate: Certificate
    realized: Realized
    parameters: Parameters
    utility: Utility
    tradeoff: Tradeoff | None
    """null when the method declares no knob."""
    checkpoint_recovery: CheckpointRecovery | None
    """null when the method has no checkpoint recovery."""
    attacks: Attacks | None
    """null when no attack ran."""
    ledger: Ledger | None = Absent()
    """Present when the audit served several requests (``config.requests`` > 1)."""
    frontier: FrontierSection | None = Absent()
    """The privacy-utility frontier (``config.frontier``); absent when no epsilon was asked for."""
    reproducibility: Reproducibility | None = Absent()
    """The determinism check of the caller's training code (``train``/``unlearn`` audits only)."""
    one_run: OpenDict | None = Absent()
    """The one-run audit (Steinke et al. 2023 adapted to deletion), when one_run_canaries is set:
    a lower bound on the certificate's epsilon for deleting the inserted canaries. ``control``
    (optional; absent from reports before it): the game's positive control, its original model
    released at the same sigma and noise draw, with ``v`` of ``r`` guesses right, its
    ``epsilon_lower`` and ``has_power`` (that bound exceeds the certified epsilon, 0 without one)."""
    one_run_whitebox: OpenDict | None = Absent()
    """The white-box one-run audit (:mod:`audit.onerun_whitebox`), when one_run_whitebox_canaries is
    set: a lower bound on the certificate's epsilon for deleting the inserted canaries, from
    parameter-space canary scores (f-DP one-run bound on the guesses, and one test against the
    reference A(D)), its ``ceiling`` (computed before the run), ``control`` and ``seed``; or
    ``skipped`` with the reason when the certificate is not a finite Gaussian output noise."""
    timings: Timings
    seeds: Seeds
    environment: Environment

    @model_validator(mode="after")
    def _consistent(self) -> ReportModel:
        expected = verdict_of(self.findings)
        if self.verdict != expected:
            raise PydanticCustomError(
                "inconsistent",
                "'{expected}' (the verdict the findings imply)",
                {"expected": expected, "field": "verdict"},
            )
        if self.deletion_request.n_records != self.dataset.forget_size:
            raise PydanticCustomError(
                "inconsistent",
                "equal to dataset.forget_size = {m}",
                {"m": self.dataset.forget_size, "field": "deletion_request.n_records"},
            )
        if self.started_at is not None and _utc(self.started_at) > _utc(self.created_at):
            raise PydanticCustomError(
                "inconsistent", "not after created_at ({created})", {"created": self.created_at, "field": "started_at"}
            )
        return self

    #: the secret salt of the deletion commitment: held in memory, never serialised
    _commitment_salt: bytes | None = PrivateAttr(default=None)

    # -- API ---------------------------------------------------------------------------------
    @property
    def commitment_salt(self) -> bytes | None:
        """The deletion commitment's secret salt (never in the JSON): keep it with the operator."""
        return self._commitment_salt

    def with_salt(self, salt: bytes) -> ReportModel:
        self._commitment_salt = salt
        return self

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON data (alias of :meth:`to_json_dict`)."""
        return self.to_json_dict()

    def to_json(self) -> str:
        """``report.json`` text (alias of :meth:`to_json_text`)."""
        return self.to_json_text()

    def write(
        self, out_dir: str | Path, *, sign_key: str | Path | None = None, save_salt: bool = True, file_mode: int = 0o644
    ) -> Path:
        """Write the report directory as one set, as ``audit run --out`` does: ``report.json``,
        ``report.html``, the commitment salt (mode 0600, unless ``save_salt=False``) and with
        ``sign_key`` the signature; public files get ``file_mode``. Returns the ``report.json`` path.
        See :mod:`audit.report.directory`."""
        from audit.report.directory import write_report

        write_report(self, out_dir, sign_key=sign_key, save_salt=save_salt, file_mode=file_mode)
        return Path(out_dir).absolute() / "report.json"

    @classmethod
    def from_report_dict(cls, d: dict[str, Any]) -> ReportModel:
        """Validate a dict as loaded from ``report.json``; raises :class:`pydantic.ValidationError`.

        Use :func:`validate_report` for one :class:`~certify.errors.InvalidInput` naming the field.
        A report of a newer minor version of this major is read without the keys this version
        does not know (module docstring, "Versions").
        """
        return cls.model_validate(d, context=read_context(d, SCHEMA_VERSION))

    def to_json_dict(self) -> dict[str, Any]:
        """The JSON-ready dict: seeds as strings, non-finite floats as ``"inf"``/``"nan"``.

        Keys the producer may leave out (``Absent``) are written only when they were given.
        """
        return self.model_dump(mode="json", exclude_unset=True)

    def to_json_text(self) -> str:
        """``report.json`` text: sorted keys, indent 2, trailing newline, standard JSON."""
        return json.dumps(self.to_json_dict(), indent=2, sort_keys=True, allow_nan=False) + "\n"


def _utc(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


# ----------------------------------------------------------------------------------------------
# Validation with one clear sentence


_TAGS = {"applicable": "true or false"}
"""The discriminators of the report's tagged unions, and their values in words."""


class _Missing:
    def __repr__(self) -> str:
        return "nothing (the field is missing)"


MISSING = _Missing()
_MAX_GOT = 80


def validate_report(d: Any) -> ReportModel:
    """Validate a report dict; a corrupt one raises one :class:`InvalidInput` naming the field.

    ``InvalidInput.field`` is the dotted path of the first error (``certificate.epsilon``,
    ``certificate.constants[1].value``), ``allowed`` what the schema expects there, ``got`` the
    value found (truncated); ``hint`` counts further problems.
    """
    if not isinstance(d, dict):
        raise InvalidInput("report", "a JSON object (an unlearn-audit report.json)", type(d).__name__)
    try:
        return ReportModel.from_report_dict(d)
    except ValidationError as exc:
        raise _invalid_input(exc, d) from None


def _invalid_input(exc: ValidationError, data: Any) -> InvalidInput:
    errors = exc.errors(include_url=False)
    first = errors[0]
    kind, ctx = first["type"], first.get("ctx") or {}
    loc = tuple(first["loc"])
    if kind == "inconsistent":  # a cross-field rule: the model validator names its field
        loc += tuple(ctx["field"].split("."))
    path, value = _locate(loc, data)
    path = path or "report"
    if kind == "missing":
        allowed, got = "present (a required field of the report)", MISSING
    elif kind == "extra_forbidden":
        allowed = f"absent (not a field of the unlearn-audit report schema {SCHEMA_VERSION})"
        got = _short(first.get("input"))
    elif kind in ("union_tag_invalid", "union_tag_not_found"):  # the discriminator key
        key = str(ctx.get("discriminator", "")).strip("'\"")
        path = f"{path}.{key}" if key else path
        tags = _TAGS.get(key, "a known tag")
        if kind == "union_tag_invalid":
            allowed, got = tags, ctx.get("tag")
        else:
            allowed, got = f"present ({tags})", MISSING
    elif kind == "literal_error" and len(ctx.get("expected", "")) > 200:  # a long table: name it, not all of it
        allowed = (
            f"one of the {ctx['expected'].count(',') + 1} values of the report schema's table "
            f"({ctx['expected'].split(',')[0]}, ...)"
        )
        got = _short(value)
    else:
        allowed, got = _words(first["msg"]), _short(value)
    more = len(errors) - 1
    hint = f"({more} further problem{'s' if more > 1 else ''} in the report.)" if more else None
    return InvalidInput(path, allowed, got, hint)


def _locate(loc: tuple[Any, ...], data: Any) -> tuple[str, Any]:
    """Render a pydantic location as ``a.b[0].c`` and find the value there.

    Segments that are not part of the data (a discriminator tag, a validator's name) are
    dropped. The value is :data:`MISSING` when the last key is absent.
    """
    parts: list[str] = []
    node = data
    loc = tuple(seg for seg in loc if seg != "[key]")  # a mapping's key that failed: name the entry
    for i, seg in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(node, dict):
            if isinstance(seg, str) and (seg in node or last):
                parts.append(seg if not parts else f".{seg}")
                node = node.get(seg, MISSING)
            continue
        if isinstance(node, (list, tuple)):
            if isinstance(seg, int) and not isinstance(seg, bool) and 0 <= seg < len(node):
                parts.append(f"[{seg}]")
                node = node[seg]
            continue
        break
    return "".join(parts), node


def _words(msg: str) -> str:
    for prefix in ("Input should be ", "Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix) :]
    msg = re.sub(r" or instance of \w+", "", msg)
    if msg[:1].isupper() and not msg[1:2].isupper():
        msg = msg[:1].lower() + msg[1:]
    return msg


def _short(value: Any) -> Any:
    if value is MISSING:
        return value
    if isinstance(value, dict):
        return f"an object with keys {sorted(map(str, value))[:6]}" if len(repr(value)) > _MAX_GOT else value
    if isinstance(value, (list, tuple)) and len(repr(value)) > _MAX_GOT:
        return f"an array of {len(value)} items"
    if isinstance(value, str) and len(value) > _MAX_GOT:
        return value[: _MAX_GOT - 3] + "..."
    return value


def load_report(path: str | Path) -> ReportModel:
    """Read and validate a ``report.json`` (bare ``NaN``/``Infinity`` are not JSON: rejected)."""
    p = Path(path)

    def reject(token: str) -> Any:
        raise InvalidInput("report", f"standard JSON (write {token} as a string)", token)

    try:
        data = json.loads(p.read_text(encoding="utf-8"), parse_constant=reject)
    except FileNotFoundError:
        raise InvalidInput("report", "an existing report.json", str(p)) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput("report", "a JSON document written by `audit run`", f"{p}: {exc}") from None
    return validate_report(data)


# ----------------------------------------------------------------------------------------------
# JSON Schema


def json_schema() -> dict[str, Any]:
    """The report's JSON Schema (draft 2020-12), generated from :class:`ReportModel`."""
    body = ReportModel.model_json_schema(mode="validation")
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "$id": SCHEMA_ID,
        "title": "unlearn-audit report",
        "version": SCHEMA_VERSION,
        "description": (
            f"report.json written by {TOOL} (schema {SCHEMA_VERSION}). Generated from "
            "audit.report.schema.ReportModel by `python -m audit.report.schema`; do not edit. "
            'Non-finite numbers are the strings "inf", "-inf", "nan" where a field allows '
            "them; seeds are decimal strings; timestamps are RFC 3339 UTC. Cross-field rules "
            "(verdict vs findings, histogram bin counts, ...) are checked by the pydantic model."
        ),
        **{k: v for k, v in body.items() if k not in ("title", "description")},
    }


def schema_text() -> str:
    """The schema file's exact text: sorted keys, indent 2, trailing newline."""
    return json.dumps(json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def schema_path() -> Path:
    """Where the generated schema is shipped (package data)."""
    return Path(__file__).resolve().parent / "schemas" / f"report-{SCHEMA_VERSION}.schema.json"


def schema_file(path: Path, text: str, args: list[str], command: str) -> int:
    """Write the generated schema ``text`` to ``path``, or with ``--check`` say whether it is current."""
    if "--check" in args:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            print(f"{path} is out of date: run {command}", file=sys.stderr)
            return 1
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"written: {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m audit.report.schema [--check | --stdout]``: write, check or print the schema
    (``python -m audit.report.comparison`` does the same for the comparison's)."""
    args = sys.argv[1:] if argv is None else argv
    if "--stdout" in args:
        sys.stdout.write(schema_text())
        return 0
    return schema_file(schema_path(), schema_text(), args, "python -m audit.report.schema")


if __name__ == "__main__":
    raise SystemExit(main())
