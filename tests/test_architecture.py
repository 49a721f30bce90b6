"""The house rules, checked on the source: imports only point down, no import circle, and the
audit layer asks methods what they declare instead of inspecting them."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
LAYERS = ("certify", "unlearners", "attacks", "audit")  # lowest first


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """Every project module ``name`` imports, at any depth of the file (lazy imports included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


@functools.cache  # parsed once for the session's tests, which only read it (the sources do not change under them)
def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, name, modules) for name, path in modules.items()}


def test_imports_only_point_down():
    for name, targets in _graph().items():
        layer = LAYERS.index(name.split(".")[0])
        for target in targets:
            assert LAYERS.index(target.split(".")[0]) <= layer, f"{name} imports {target}, a higher layer"


def test_no_import_circle():
    graph = _graph()
    # a package's __init__ may expose its submodules lazily; a submodule importing its own
    # package's __init__ for shared names is the only back edge allowed
    edges = {n: {t for t in ts if not (n.startswith(t + ".") and t in graph)} for n, ts in graph.items()}
    seen, stack, cycles = set(), [], []

    def visit(node):
        if node in stack:
            cycles.append(stack[stack.index(node) :] + [node])
            return
        if node in seen:
            return
        seen.add(node)
        stack.append(node)
        for nxt in sorted(edges[node]):
            visit(nxt)
        stack.pop()

    for node in sorted(edges):
        visit(node)
    assert cycles == [], cycles


def test_interface_modules_import_no_implementation():
    graph = _graph()
    for interface in ("unlearners.base", "unlearners.registry", "attacks.base", "attacks.registry"):
        implementations = {t for t in graph[interface] if t.startswith(("unlearners.", "attacks.")) and t != interface}
        allowed = {"unlearners.base", "unlearners.objective", "unlearners.modelcheck", "attacks.base"}
        assert implementations <= allowed, (interface, implementations - allowed)


def test_the_audit_layer_never_inspects_a_method():
    from unlearners.registry import BUILTIN

    classes = {target.partition(":")[2] for target in BUILTIN.values()}
    modules = {target.partition(":")[0] for target in BUILTIN.values()}
    for path in (SRC / "audit").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(SRC)
        assert "inspect.signature" not in text, where
        assert not re.search(r"\b(hasattr|getattr)\(\s*(method|cls|worker|shadow|m)\b", text), where
        for cls in classes:
            assert not re.search(rf"isinstance\([^)]*\b{cls}\b", text), (where, cls)
            assert not re.search(rf"\bimport\b.*\b{cls}\b", text), (where, cls)
        for module in modules:
            assert f"import {module}" not in text and f"from {module} " not in text, (where, module)
