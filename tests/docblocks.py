"""The fenced code blocks of the README and docs/ pages, and the markers above them (tests/test_docs.py)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"<!-- (test|ci|illustrative)(?::\s*(.*?))? -->")
FENCE = re.compile(r"^```([\w-]*)\s*$")


def code_blocks(path: Path) -> list[dict]:
    """The fenced blocks of one page: language, text, line, and the marker above the fence."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        marker = MARKER.fullmatch(lines[i - 1].strip()) if i else None
        blocks.append(
            {
                "page": path.relative_to(ROOT).as_posix(),
                "line": i + 1,
                "language": opening.group(1),
                "text": "\n".join(lines[i + 1 : end]) + "\n",
                "kind": marker.group(1) if marker else "test",
                "note": (marker.group(2) or "") if marker else "",
            }
        )
        i = end + 1
    return blocks


def commands(text: str) -> list[list[str]]:
    return [shlex.split(line, comments=True) for line in text.splitlines() if shlex.split(line, comments=True)]
