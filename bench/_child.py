"""One child command timed as a user pays for it: wall time and its CPU (user + system, from
``getrusage`` of the children), shared by the benchmarks that run the CLI."""

from __future__ import annotations

import resource
import subprocess
import time


def timed_child(command: list[str], **run_options) -> tuple[float, float, subprocess.CompletedProcess]:
    """Run ``command`` (``subprocess.run`` options passed through); return (wall s, CPU s, result)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, **run_options)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), proc


def write_results(path, result: dict) -> str:
    """Write a benchmark's result as indented JSON to ``path`` (its folder made if missing) and
    return the text, which the benchmark prints."""
    import json

    text = json.dumps(result, indent=2)
    path.parent.mkdir(exist_ok=True)
    path.write_text(text + "\n")
    return text
