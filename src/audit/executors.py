"""Where the shards of an audit run: in this process, in local worker processes, or on Ray.

Every executor computes the same function, :func:`audit.shards.compute_shard`, on the same
shared context, so the results are identical wherever they run (:mod:`audit.shards`); they differ
only in where and how many at once.

* ``local``: one shard after another in this process (the default).
* ``processes``: ``workers`` local processes (started with ``spawn``, so neither OpenMP's nor
  CUDA's state is forked); the context is pickled (cloudpickle: a caller's model class defined
  in a script travels too) and sent once per worker.
* ``ray``: tasks on a Ray cluster, an existing one (``ray_address``) or a local one started for
  the run with ``workers`` CPUs and shut down after it. The context is put in Ray's object store
  once; each task takes one CPU, and one GPU when the audit runs on CUDA. Ray is an optional
  extra (``pip install "unlearn-audit[ray]"``).

A shard whose worker fails (killed, out of memory, a node lost) is run again, up to
:data:`ATTEMPTS` times in all; then :class:`ShardFailed` names the shard and the error. Bad input
found by a worker (:class:`~certify.errors.InvalidInput`) is raised as it is, at once. On
Ctrl-C the shards in flight are lost and the finished ones stay in the run directory.

Executors are found by name in :data:`EXECUTORS`, apart from the implementations.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from audit.shards import Shard, ShardContext, compute_shard
from certify.errors import InvalidInput

log = logging.getLogger("unlearn_audit.execution")

#: Runs of a shard before its failure is reported (the first run and one retry).
ATTEMPTS = 2

Done = Callable[[Shard, dict], None]


class ShardFailed(RuntimeError):
    """A shard failed on every attempt (its worker died or raised)."""

    def __init__(self, shard: Shard, attempts: int, error: BaseException | str) -> None:
        self.shard, self.attempts = shard, attempts
        super().__init__(f"shard {shard.name} failed {attempts} times; last error: {error}")


def cpu_count() -> int:
    """CPUs this process may use (its affinity where the OS says)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class LocalExecutor:
    """Shards one after another in this process."""

    workers: int = 1

    def run(self, ctx: ShardContext, shards: Sequence[Shard], done: Done) -> None:
        for shard in shards:
            done(shard, compute_shard(ctx, shard))


# -- processes -----------------------------------------------------------------------------------
_WORKER_CONTEXT: dict[str, ShardContext] = {}


def _serialise(ctx: ShardContext) -> bytes:
    import cloudpickle

    return cloudpickle.dumps(ctx)


def _process_init(path: str, threads: int) -> None:
    import pickle

    import torch

    torch.set_num_threads(threads)
    with open(path, "rb") as handle:
        _WORKER_CONTEXT["ctx"] = pickle.load(handle)


def _process_shard(shard: Shard) -> dict:
    return compute_shard(_WORKER_CONTEXT["ctx"], shard)


@dataclass(frozen=True)
class ProcessExecutor:
    """Shards on ``workers`` local processes."""

    workers: int

    def run(self, ctx: ShardContext, shards: Sequence[Shard], done: Done) -> None:
        import multiprocessing
        import tempfile

        threads = max(1, cpu_count() // self.workers)
        attempts = {shard: 0 for shard in shards}
        pending = list(shards)
        # the context (data, model, fitted method) is read by each worker from a private file
        # (mode 0600, removed after the run) rather than pushed through each worker's start-up pipe
        with tempfile.TemporaryDirectory(prefix="unlearn-audit-") as private:
            path = os.path.join(private, "context.pickle")
            with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as handle:
                handle.write(_serialise(ctx))
            self._run(path, threads, attempts, pending, done, multiprocessing.get_context("spawn"))

    def _run(self, path: str, threads: int, attempts: dict, pending: list, done: Done, context) -> None:
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

        while pending:
            pool = ProcessPoolExecutor(
                max_workers=min(self.workers, len(pending)),
                mp_context=context,
                initializer=_process_init,
                initargs=(path, threads),
            )
            try:
                futures = {pool.submit(_process_shard, shard): shard for shard in pending}
                pending = []
                while futures:
                    finished, _ = wait(futures, return_when=FIRST_COMPLETED)
                    for future in finished:
                        shard = futures.pop(future)
                        attempts[shard] += 1
                        try:
                            result = future.result()
                        except InvalidInput:
                            raise
                        except Exception as exc:  # a dead worker (BrokenProcessPool) or an error in it
                            _retry_or_fail(shard, attempts[shard], exc)
                            pending.append(shard)
                            continue
                        done(shard, result)
            except BaseException:
                _stop(pool)
                raise
            pool.shutdown(wait=True)


def _stop(pool) -> None:
    """End a pool now: the shards in flight are lost (the finished ones are kept by the caller)."""
    processes = list(getattr(pool, "_processes", {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5)


def _retry_or_fail(shard: Shard, attempts: int, exc: BaseException) -> None:
    if attempts >= ATTEMPTS:
        raise ShardFailed(shard, attempts, f"{type(exc).__name__}: {exc}") from exc
    log.warning(
        "shard %s failed (%s: %s); running it again (attempt %d of %d)",
        shard.name,
        type(exc).__name__,
        exc,
        attempts + 1,
        ATTEMPTS,
    )


# -- ray -------------------------------------------------------------------------------------------
_RAY_CONTEXTS: dict[str, ShardContext] = {}


def _ray_shard(payload: bytes, key: str, threads: int, shard: Shard) -> dict:
    """A Ray task: the context is unpickled once per worker process (cached by its key)."""
    import pickle

    import torch

    if key not in _RAY_CONTEXTS:
        _RAY_CONTEXTS.clear()
        _RAY_CONTEXTS[key] = pickle.loads(payload)
    torch.set_num_threads(threads)
    return compute_shard(_RAY_CONTEXTS[key], shard)


def _import_ray():
    try:
        import ray
    except ImportError:
        raise InvalidInput(
            "executor", 'local or processes, or ray once Ray is installed (pip install "unlearn-audit[ray]")', "ray"
        ) from None
    return ray


#: Seconds a Ray cluster's head has to answer at start-up (a live head on a network answers in
#: milliseconds; ``ray.init`` itself retries an unreachable one for minutes).
RAY_CONNECT_TIMEOUT = 5.0
#: An HTTP/2 client preface and an empty SETTINGS frame: a gRPC server (Ray's GCS and its Ray
#: Client server are) answers with a SETTINGS frame of its own.
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
_H2_SETTINGS = 4


def check_ray_cluster(address: str | None, timeout: float = RAY_CONNECT_TIMEOUT) -> None:
    """Refuse, before any training, a Ray run that cannot start: Ray not installed, or no gRPC
    server (a Ray head) answering at ``address`` within ``timeout`` seconds. ``ray.init`` has no
    connect timeout of its own, so the head's port is tried with a plain socket: a TCP connection
    and an HTTP/2 handshake (skipped for a cluster with TLS, ``RAY_USE_TLS=1``)."""
    import importlib.util

    from audit.config import RayAddress, ray_endpoint

    if importlib.util.find_spec("ray") is None:
        _import_ray()  # raises the one sentence saying how to install it
    if address is None:
        return
    endpoint = ray_endpoint(address)
    if endpoint is None:
        raise RayAddress().fail("ray_address", address)
    problem = _grpc_problem(endpoint, timeout, handshake=os.environ.get("RAY_USE_TLS", "0") in ("0", "false"))
    if problem:
        raise InvalidInput(
            "ray_address",
            "the address of a running Ray cluster (ray start --head prints it), or none to start a local one",
            address,
            hint=f"No Ray head answered at {endpoint[0]}:{endpoint[1]} within {timeout:g} s ({problem}).",
        )


def _grpc_problem(endpoint: tuple[str, int], timeout: float, *, handshake: bool) -> str | None:
    """Why no gRPC server answers at ``endpoint`` (None if one does)."""
    import socket

    try:
        with socket.create_connection(endpoint, timeout=timeout) as conn:
            if not handshake:
                return None
            conn.sendall(_H2_PREFACE)
            head = conn.recv(9)
    except TimeoutError:
        return "no answer"
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    if len(head) < 4 or head[3] != _H2_SETTINGS:
        return "something answered, but not a gRPC server"
    return None


@dataclass(frozen=True)
class RayExecutor:
    """Shards as Ray tasks: on the cluster at ``address``, or on a local one with ``workers`` CPUs."""

    workers: int
    address: str | None = None
    gpus_per_shard: float = 0.0

    def run(self, ctx: ShardContext, shards: Sequence[Shard], done: Done) -> None:
        ray = _import_ray()
        started = False
        if not ray.is_initialized():
            try:
                if self.address:
                    ray.init(
                        address=self.address,
                        include_dashboard=False,
                        log_to_driver=False,
                        logging_level=logging.WARNING,
                    )
                else:
                    ray.init(
                        num_cpus=self.workers,
                        num_gpus=int(self.gpus_per_shard > 0) or None,
                        include_dashboard=False,
                        log_to_driver=False,
                        logging_level=logging.WARNING,
                    )
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise InvalidInput(
                    "ray_address",
                    "the address of a running Ray cluster (ray start --head prints it), or none to start a local one",
                    self.address,
                    hint=f"Ray said: {exc}",
                ) from None
            started = True
        try:
            self._run(ray, ctx, shards, done)
        finally:
            if started:
                ray.shutdown()

    def _run(self, ray, ctx: ShardContext, shards: Sequence[Shard], done: Done) -> None:
        from ray.exceptions import RayError, RayTaskError

        payload = ray.put(_serialise(ctx))
        key = ctx.key()
        threads = 1
        task = ray.remote(_ray_shard).options(num_cpus=1, num_gpus=self.gpus_per_shard, max_retries=0)
        attempts = {shard: 0 for shard in shards}
        refs = {task.remote(payload, key, threads, shard): shard for shard in shards}
        try:
            while refs:
                ready, _ = ray.wait(list(refs), num_returns=1)
                shard = refs.pop(ready[0])
                attempts[shard] += 1
                try:
                    result = ray.get(ready[0])
                except RayTaskError as exc:
                    cause = exc.as_instanceof_cause()
                    if isinstance(cause, InvalidInput):
                        raise InvalidInput(cause.field, cause.allowed, cause.got, cause.hint) from None
                    _retry_or_fail(shard, attempts[shard], exc)
                    refs[task.remote(payload, key, threads, shard)] = shard
                    continue
                except RayError as exc:  # the worker or its node died
                    _retry_or_fail(shard, attempts[shard], exc)
                    refs[task.remote(payload, key, threads, shard)] = shard
                    continue
                done(shard, {k: np.asarray(v) for k, v in result.items()})
        except BaseException:
            for ref in refs:
                ray.cancel(ref, force=True)
            raise


#: The executors by name (``executor`` in the configuration).
EXECUTORS = ("local", "processes", "ray")


def make_executor(name: str, workers: int | None, *, address: str | None = None, device: str = "cpu"):
    """The executor ``name`` with ``workers`` (None: every CPU this process may use)."""
    if name not in EXECUTORS:
        raise InvalidInput("executor", "one of " + ", ".join(EXECUTORS), name)
    if address is not None and name != "ray":
        raise InvalidInput("ray_address", "used only with executor = ray", address)
    count = workers if workers is not None else (1 if name == "local" else cpu_count())
    if name == "local":
        return LocalExecutor(count)
    if name == "processes":
        return ProcessExecutor(count)
    return RayExecutor(count, address, gpus_per_shard=1.0 if device.startswith("cuda") else 0.0)


# -- the run ---------------------------------------------------------------------------------------
def execute(
    ctx: ShardContext,
    shards: Sequence[Shard],
    executor,
    *,
    store=None,
    tick: Callable[[str, int, int], None] = lambda stage, done, total: None,
) -> tuple[dict[Shard, dict], list[Shard]]:
    """Every shard's result, and the shards read back from ``store`` instead of computed: each result: read from ``store`` (a :class:`~audit.runstore.RunStore`) when it is
    there, computed by ``executor`` otherwise (and then stored as it arrives). Progress: stage
    ``"shards"`` (finished shards of all) and the trial counts of each role."""
    results: dict[Shard, dict] = {}
    total = {role: sum(s.size for s in shards if s.role == role) for role in ("trials", "shadows")}
    made = {role: 0 for role in total}

    def finished(shard: Shard, result: dict, *, resumed: bool = False) -> None:
        results[shard] = result
        made[shard.role] += shard.size
        tick(shard.role, made[shard.role], total[shard.role])
        if not resumed:  # the resumed ones are reported together, once (a rate counts only computed ones)
            tick("shards", len(results), len(shards))

    todo = []
    for shard in shards:
        stored = store.load(shard) if store is not None else None
        if stored is None:
            if store is not None and store.file(shard).exists():
                log.warning("shard %s in %s could not be read back; computing it again", shard.name, store.path)
            todo.append(shard)
        else:
            finished(shard, stored, resumed=True)
    resumed = sorted(results)
    if results:
        log.info(
            "resuming from %s: %d of %d shards already done, skipped: %s",
            store.path,
            len(results),
            len(shards),
            ", ".join(s.name for s in sorted(results)),
        )
    tick("shards", len(results), len(shards))

    def computed(shard: Shard, result: dict) -> None:
        if store is not None:
            store.save(shard, result)
        finished(shard, result)

    if todo:
        executor.run(ctx, todo, computed)
    return results, resumed
