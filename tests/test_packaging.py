"""What a Python user expects of the package: a licence file for the declared licence, a changelog
that names the current versions, ``py.typed`` in every package, and one place for the version."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import audit
from audit.report import SCHEMA_VERSION, tool_version
from audit.report.comparison import COMPARISON_SCHEMA_VERSION

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PACKAGES = PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]


def test_the_licence_file_is_the_declared_licence():
    assert PYPROJECT["project"]["license"] == {"text": "Apache-2.0"}
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text  # the full text, not a pointer to it


def test_every_package_is_marked_typed_and_ships():
    assert sorted(Path(p).name for p in PACKAGES) == sorted(
        p.name for p in (ROOT / "src").iterdir() if p.is_dir() and (p / "__init__.py").exists()
    )
    for package in PACKAGES:
        assert (ROOT / package / "py.typed").is_file(), package


def test_the_version_is_written_once_and_read_by_the_build_and_the_reports():
    assert "version" not in PYPROJECT["project"] and "version" in PYPROJECT["project"]["dynamic"]
    source = ROOT / PYPROJECT["tool"]["hatch"]["version"]["path"]
    assert re.search(r'^__version__ = "([^"]+)"$', source.read_text(), re.M).group(1) == audit.__version__
    assert tool_version() == audit.__version__


def test_the_changelog_names_the_current_versions():
    text = (ROOT / "CHANGELOG.md").read_text()
    assert f"## {audit.__version__} " in text
    assert f"Report schema {SCHEMA_VERSION}" in text and f"comparison schema {COMPARISON_SCHEMA_VERSION}" in text
