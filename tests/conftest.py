import os

# One BLAS thread, set before NumPy and SciPy load their OpenBLAS (the subprocesses the CLI tests start
# inherit it). The suite's problems are small: with a thread per core, OpenBLAS's threads spin against
# each other and against other processes on the 2-core CI machine, and one L-BFGS fit of the
# membership-inference attack took 4 ms per iteration instead of 0.1 ms under load. Set the variable to override.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# The CLI's tables take their width from COLUMNS when not on a terminal; the tests that read them expect
# the piped width (or set COLUMNS themselves), whatever the shell or pytest-xdist's workers (COLUMNS=80) set.
for _var in ("COLUMNS", "LINES"):
    os.environ.pop(_var, None)

#: A test not marked slow whose run (setup, call, teardown) takes longer than this is named at the end of
#: the session: the fast lane (`-m "not slow"`, docs/install.md) must stay under a minute on 2 cores.
FAST_LANE_LIMIT_S = 5.0

import pytest
import torch

from audit.datasets import from_arrays

from synthetic import synthetic


@pytest.fixture(autouse=True)
def _one_thread():
    # Deterministic and fast on the 2-core CI machine.
    torch.set_num_threads(1)


@pytest.fixture
def binary_data():
    return synthetic()


@pytest.fixture
def small_arrays():
    X, y = synthetic(n=1500, d=6, seed=3)
    return from_arrays(X.numpy(), y.numpy(), seed=0)


_over_the_limit: dict[str, float] = {}


def pytest_runtest_logreport(report):
    if "slow" not in report.keywords and report.duration > 0:
        _over_the_limit[report.nodeid] = _over_the_limit.get(report.nodeid, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    slow = sorted(((t, n) for n, t in _over_the_limit.items() if t > FAST_LANE_LIMIT_S), reverse=True)
    if slow:
        terminalreporter.section("fast lane")
        terminalreporter.write_line(
            f"{len(slow)} test(s) not marked slow took over {FAST_LANE_LIMIT_S:g} s: make them "
            "cheaper or mark them @pytest.mark.slow (docs/install.md, running the tests)"
        )
        for t, nodeid in slow:
            terminalreporter.write_line(f"{t:8.1f} s  {nodeid}")
