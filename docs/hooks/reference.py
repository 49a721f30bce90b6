"""The documentation's generated pages: what the code declares, rendered at build time.

mkdocs loads this file as a hook (``hooks:`` in mkdocs.yml). What the code declares is read from it:

* ``methods/<name>.md`` for every registered method, from its declaration (``paper``,
  ``certified``, ``assumptions``, ``deviations``, ``hyperparameters``, ``capabilities``,
  ``model_requirements``) and its module's and class's docstrings, followed by the measurements
  and longer remarks written for that page in ``hooks/method-notes/<name>.md`` (optional: a new
  method's page is complete without one);
* the markers ``<!-- generated: NAME -->`` in a hand-written page are replaced by
  :data:`GENERATORS` ``[NAME]()``: the method and attack tables, the CLI reference (from
  ``audit.config.FIELDS``), the report schema (from the shipped JSON Schema),
  the benchmark result files (from ``bench/results``) and the plain-openssl verifier script.

Each generator is a plain function returning Markdown, so a test can call it without mkdocs.
"""

from __future__ import annotations

import ast
import inspect
import json
import sys
from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "src") not in sys.path:  # the checkout's own sources, also before `pip install .`
    sys.path.insert(0, str(ROOT / "src"))

MARKER = "<!-- generated: {} -->"


def _cell(text: Any) -> str:
    """One Markdown table cell: one line, pipes escaped, and outside code spans asterisks and angle
    brackets escaped (``eta*L*T`` is not emphasis, ``<function>`` is not a tag)."""
    parts = " ".join(str(text).split()).replace("|", "\\|").split("`")
    for i in range(0, len(parts), 2):  # the even parts are outside code spans
        parts[i] = parts[i].replace("*", "\\*").replace("<", "&lt;")
    return "`".join(parts)


def _code(value: Any) -> str:
    return "`" + json.dumps(value, ensure_ascii=False).replace("|", "\\|") + "`"


def _docstring(text: str | None) -> str:
    """A reStructuredText-flavoured docstring as Markdown: ``x`` is already a code span; headings
    underlined with dashes become bold lines."""
    lines = inspect.cleandoc(text or "").splitlines()
    out: list[str] = []
    for i, line in enumerate(lines):
        if set(line.strip()) == {"-"} and i and lines[i - 1].strip():
            out[-1] = f"**{out[-1].strip()}**"
            continue
        out.append(line.replace(":func:", "").replace(":class:", "").replace(":mod:", "")
                   .replace(":meth:", "").replace(":data:", "").replace(":attr:", ""))
    return "\n".join(out)


# -- methods ----------------------------------------------------------------------------------

def method_classes() -> dict[str, type]:
    from unlearners.registry import METHODS, available_methods

    return {name: METHODS.get(name) for name in available_methods()}


def method_table() -> str:
    rows = ["| method | title | certified? | paper |", "|---|---|---|---|"]
    for name, cls in method_classes().items():
        rows.append(f"| [`{name}`]({name}.md) | {_cell(cls.title)} | {'yes' if cls.certified else 'no'} "
                    f"| {_cell(cls.paper)} |")
    return "\n".join(rows)


def method_page(name: str, cls: type) -> str:
    caps = cls.capabilities.describe()
    knob = caps.pop("knob")
    parts = [f"# `{name}`: {cls.title}", "",
             "*Generated from the method's declaration and docstrings* "
             f"(`{cls.__module__}.{cls.__qualname__}`).", "",
             f"**Paper.** {cls.paper}", "",
             f"**Certified.** {'yes: it issues a certificate when its conditions hold' if cls.certified else 'no: it has no theorem, so it is measured only (certificate kind `none`)'}.",
             ""]
    if cls.model_requirements:
        parts += ["**What the theorem assumes of the model** (checked on its layers before any work): "
                  + ", ".join(f"`{r}`" for r in sorted(cls.model_requirements)) + ".", ""]
    parts += ["## Assumptions", ""]
    parts += [f"- {a}" for a in cls.assumptions] or ["None declared."]
    parts += ["", "## Deviations from the paper", ""]
    parts += [f"{i}. {d}" for i, d in enumerate(cls.deviations, 1)] or ["None declared."]
    parts += ["", "## Options", "",
              f"Set with `-o NAME=VALUE` (`audit run --method {name} -o ...`) or `method_options` in the library.",
              "", "| option | default | allowed | set by the audit's | help |", "|---|---|---|---|---|"]
    for p in cls.hyperparameters:
        parts.append(f"| `{p.name}` | {_code(p.describe()['default'])} | {_cell(p.constraint.words)} "
                     f"| {('`' + p.audit + '`') if p.audit else ''} | {_cell(p.help)} |")
    if not cls.hyperparameters:
        parts.append("| (none) | | | | |")
    parts += ["", f"**Precision.** `--dtype auto` trains it in {cls.precision.auto}; its certificate reads "
              f"{cls.precision.reads}.", ""]
    parts += ["## Capabilities", ""]
    parts += [f"- `{key}`: {'yes' if value else 'no'}" for key, value in caps.items()]
    parts.append(f"- tradeoff knob: `{knob['option']}` ({knob['symbol']}): {knob['description']}" if knob
                 else "- tradeoff knob: none")
    notes = Path(__file__).parent / "method-notes" / f"{name}.md"
    if notes.exists():  # measured numbers and remarks that are not part of the declaration
        parts += ["", "## Certificate, assumptions and measurements in detail", "", notes.read_text(encoding="utf-8")]
    module = import_module(cls.__module__)
    parts += ["", "## The implementation's notes", "", "From the module docstring:", "",
              _docstring(module.__doc__), "", "From the class docstring:", "", _docstring(cls.__doc__), ""]
    return "\n".join(parts)


def precision_table() -> str:
    rows = ["| method | `--dtype auto` trains in | what the certificate reads |", "|---|---|---|"]
    for name, cls in method_classes().items():
        rows.append(f"| [`{name}`]({name}.md) | {cls.precision.auto} | {_cell(cls.precision.reads)} |")
    return "\n".join(rows)


# -- attacks and estimators ----------------------------------------------------------------------

def attack_table() -> str:
    from attacks.registry import ATTACKS, BUILTIN, OPTIONAL

    rows = ["| attack | runs | title | what it scores per released model | needs |", "|---|---|---|---|---|"]
    for name in ATTACKS.names():
        cls = ATTACKS.get(name)
        runs = "by default" if name in BUILTIN else "when named" if name in OPTIONAL else "plug-in"
        needs = ", ".join(sorted(cls.needs)) or "-"
        rows.append(f"| `{name}` | {runs} | {_cell(cls.title)} | {_cell(cls.description)} | {needs} |")
    return "\n".join(rows)


def estimator_docs() -> str:
    """The estimators every attack's scores go through: their modules' docstrings."""
    parts = []
    for module in ("attacks.estimates", "attacks.epsilon", "attacks.thresholds", "attacks.protocol",
                   "attacks.rates", "attacks.gdp", "attacks.gaussian_shape", "attacks.onerun",
                   "attacks.fdp_onerun", "attacks.consecutive"):
        parts += [f"### `{module}`", "", _docstring(import_module(module).__doc__), ""]
    return "\n".join(parts)


# -- the command line -----------------------------------------------------------------------------

def _flags(field: Any) -> list[str]:
    if field.spelling == "keys":
        return ["--" + key for key in field.constraint.keys]
    return list(field.flags or (field.flag,))


def cli_options() -> str:
    from audit.config import FIELDS, SECTIONS

    parts = []
    for section in SECTIONS:
        fields = [f for f in FIELDS if f.section == section]
        if not fields:
            continue
        parts += [f"### {section}", "", "| flag | TOML key | default | allowed | help |", "|---|---|---|---|---|"]
        for f in fields:
            flags = ", ".join(f"`{x}`" for x in _flags(f))
            parts.append(f"| {flags} | `{f.name}` | {_code(f.describe()['default'])} | {_cell(f.constraint.words)} "
                         f"| {_cell(f.help)} |")
        parts.append("")
    return "\n".join(parts)


def finding_codes() -> str:
    from audit.findings import CODES

    rows = ["| code | severity | verdict | vacuous | meaning |", "|---|---|---|---|---|"]
    for code, spec in CODES.items():
        rows.append(f"| `{code}` | {spec.severity} | `{spec.verdict}` | {'yes' if spec.vacuous else ''} "
                    f"| {_cell(spec.meaning)} |")
    return "\n".join(rows)


# -- the report schema ------------------------------------------------------------------------------

def _schema_type(prop: dict[str, Any]) -> str:
    if "$ref" in prop:
        return prop["$ref"].rsplit("/", 1)[-1]
    if "anyOf" in prop:
        return " or ".join(dict.fromkeys(_schema_type(p) for p in prop["anyOf"]))
    if "enum" in prop:
        return " \\| ".join(json.dumps(v) for v in prop["enum"])
    if "const" in prop:
        return json.dumps(prop["const"])
    if prop.get("type") == "array":
        return "array of " + _schema_type(prop.get("items", {}))
    return str(prop.get("type", "any"))


def _schema_rows(obj: dict[str, Any]) -> list[str]:
    required = set(obj.get("required", ()))
    rows = ["| key | type | required | description |", "|---|---|---|---|"]
    for key, prop in sorted(obj.get("properties", {}).items()):
        rows.append(f"| `{key}` | {_cell(_schema_type(prop))} | {'yes' if key in required else ''} "
                    f"| {_cell(prop.get('description', ''))} |")
    return rows


def report_schema() -> str:
    from audit.report.schema import SCHEMA_VERSION

    path = ROOT / "src" / "audit" / "report" / "schemas" / f"report-{SCHEMA_VERSION}.schema.json"
    schema = json.loads(path.read_text(encoding="utf-8"))
    parts = [f"The shipped JSON Schema is `audit/report/schemas/{path.name}` (schema version "
             f"**{SCHEMA_VERSION}**), generated from `audit.report.schema.ReportModel` by "
             "`python -m audit.report.schema`. Every object forbids keys it does not declare.", "",
             "## The top level", "", _cell(schema.get("description", "")), "", *_schema_rows(schema), ""]
    for name, definition in sorted(schema["$defs"].items()):
        if definition.get("type") != "object":
            continue
        parts += [f"## `{name}`", "", _cell(definition.get("description", "")), "", *_schema_rows(definition), ""]
    return "\n".join(parts)


# -- benchmarks -------------------------------------------------------------------------------------------

def _script_summary(script: Path) -> str:
    """The first paragraph of a benchmark script's docstring (Markdown already)."""
    doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))) or ""
    return " ".join(doc.split("\n\n")[0].split())


def benchmark_files() -> str:
    parts = []
    for path in sorted((ROOT / "bench" / "results").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        scripts = [s for s in (ROOT / "bench").glob("*.py") if f"results/{path.name}" in s.read_text(encoding="utf-8")
                   or s.stem in (f"bench_{path.stem}", path.stem)]
        script = f"`bench/{scripts[0].name}`" if scripts else "(no script names it)"
        summary = _script_summary(scripts[0]) if scripts else ""
        parts += [f"### `bench/results/{path.name}`", "", f"Written by {script}. {summary}", "",
                  '??? note "the JSON"', "", "    ```json",
                  *("    " + line for line in json.dumps(data, indent=2, ensure_ascii=False).splitlines()),
                  "    ```", ""]
    return "\n".join(parts)


# -- verification -----------------------------------------------------------------------------------------

def openssl_script() -> str:
    from audit.report import signing

    return "```bash\n" + signing.OPENSSL_VERIFY_SCRIPT + "```"


GENERATORS: dict[str, Callable[[], str]] = {
    "method-table": method_table,
    "precision-table": precision_table,
    "attack-table": attack_table,
    "estimators": estimator_docs,
    "cli-options": cli_options,
    "finding-codes": finding_codes,
    "report-schema": report_schema,
    "benchmark-files": benchmark_files,
    "openssl-script": openssl_script,
}


def expand(markdown: str) -> str:
    """``markdown`` with every generated marker replaced."""
    for name, generate in GENERATORS.items():
        marker = MARKER.format(name)
        if marker in markdown:
            markdown = markdown.replace(marker, generate())
    return markdown


# -- the mkdocs hooks -----------------------------------------------------------------------------------------

def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for name, cls in method_classes().items():
        files.append(File.generated(config, f"methods/{name}.md", content=method_page(name, cls)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return expand(markdown)
