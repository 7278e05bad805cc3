"""``gpuscout launch``: N workers on this machine, started as N machines would start them.

Each worker is the very command a cluster manager runs on each machine,
``gpuscout bench ... --cluster tf-config`` with its place in ``TF_CONFIG`` (as a Kubernetes job
or Ray Train sets it; :mod:`gpuscout.scale.cluster` reads it), here on free loopback ports: a
thin local driver over the same rendezvous layer a cluster uses. Each stores
its run in a scratch database; the launcher reads them back and stores one combined run: the
chief's timing (task 0) with every worker's status, speed as it saw it, and environment. The
chief's run already holds the row each worker sent it (as under a cluster manager); the
launcher keeps its own rows, which also say when each worker exited and why one failed
(:func:`with_sent_rows`).

Failure paths end in bounded time with no process left behind: when one worker fails, the
others get ``FAIL_GRACE_S`` to report their own failure (a collective aborted by the dead
peer), then each is sent SIGTERM and, ``TERM_GRACE_S`` later, SIGKILL. A launcher that is
killed outright takes its workers with it, and each worker its measuring process, even
mid-collective (see ``gpuscout.measure.lifeline``). How many workers this machine can take
is checked before any starts (``gpuscout.core.limits.check_workers``). The scratch folder goes on
every way out; one that a launcher killed outright left behind is removed by the next launch
(:func:`sweep_stale`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gpuscout.core import interrupts
from gpuscout.measure import lifeline

try:
    import fcntl
except ImportError:  # not on Windows: scratch folders are then not swept
    fcntl = None  # type: ignore[assignment]
from gpuscout.core.records import BenchConfig, Distribution, RunResult, WorkerRun
from gpuscout.measure.benchmark import failed
from gpuscout.scale import distribute

FAIL_GRACE_S = 15.0
TERM_GRACE_S = 5.0
POLL_S = 0.1
HOST = "127.0.0.1"


@dataclass
class _Worker:
    index: int
    address: str
    proc: subprocess.Popen[bytes]
    db: Path
    log: Path
    started: float
    exited_after_s: float | None = None

    def poll(self) -> int | None:
        code = self.proc.poll()
        if code is not None and self.exited_after_s is None:
            self.exited_after_s = time.monotonic() - self.started
        return code


def launch(
    config: BenchConfig,
    bench_args: list[str],
    workers: int,
    on_event: Callable[[str], None] | None = None,
) -> RunResult:
    """Run ``gpuscout bench BENCH_ARGS`` as ``workers`` local workers; one combined result.

    ``config`` is what ``bench_args`` parse to (already checked by the caller); it labels the
    result when no worker produced one.
    """
    interrupts.raise_if_received()  # one a library swallowed: no worker starts
    say = on_event or (lambda _: None)
    for folder in sweep_stale():
        say(f"removed {folder}, left behind by a launcher that was killed")
    addresses = [f"{HOST}:{port}" for port in distribute.free_ports(workers)]
    config = config.model_copy(update={"workers": addresses, "task_index": 0})
    tmp, lock = _scratch()
    try:  # the scratch folder goes on every way out: done, failed, interrupted
        started: list[_Worker] = []
        try:  # an interrupt while they start still stops those already started
            for i in range(workers):
                with interrupts.held():  # started and recorded, or neither: each is stopped
                    started.append(_start(i, addresses, bench_args, tmp))
            say(f"started {workers} workers on {', '.join(addresses)}")
            _wait(started, say)
        except KeyboardInterrupt:
            say("interrupted: stopping the workers (each stores what it measured)")
            for w in started:
                _signal(w, signal.SIGTERM)
            _wait(started, say, limit_s=FAIL_GRACE_S)
        finally:
            _stop(started)
        runs = [_stored_run(w) for w in started]
        reports = [_report(w, run) for w, run in zip(started, runs, strict=True)]
    finally:
        _remove(tmp, lock)
    return combine(config, runs[0] if runs else None, reports)


# The scratch folder's lock, held (flock) by its launcher while it runs: the kernel lets go of
# it when the launcher dies, however it dies, so a folder whose lock is free was left behind.
LOCK_NAME = ".launcher.lock"
PREFIX = "gpuscout-launch-"


def _scratch() -> tuple[Path, int]:
    """A new scratch folder in the system temp dir, and the open, locked descriptor of its
    lock file. The lock is taken under another name and renamed into place, so that a
    launcher sweeping at the same moment never finds the lock file there and free."""
    tmp = Path(tempfile.mkdtemp(prefix=PREFIX))
    if fcntl is None:
        return tmp, -1
    fd = os.open(tmp / f"{LOCK_NAME}.new", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.rename(tmp / f"{LOCK_NAME}.new", tmp / LOCK_NAME)
    return tmp, fd


def _remove(tmp: Path, lock: int) -> None:
    """Remove the scratch folder, even when a second Ctrl-C or SIGTERM comes meanwhile (then
    finish the removal, and let the interrupt go on)."""
    try:
        shutil.rmtree(tmp, ignore_errors=True)
    except KeyboardInterrupt:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if lock >= 0:
            os.close(lock)


def sweep_stale(root: Path | None = None) -> list[Path]:
    """Remove the scratch folders (``gpuscout-launch-*`` in ``root``, default the system temp
    dir) that launchers killed outright left behind; returns them.

    SIGKILL, the out-of-memory killer or a power cut leave no way to clean up on the way
    out (issue 17: an interrupted launch left one with 879 files). A folder is removed only
    when it is this user's and its lock is free: its launcher is gone. Folders without the
    lock file (made by an older gpuscout, or not a launcher's) are left alone.
    """
    if fcntl is None:
        return []
    removed: list[Path] = []
    for folder in Path(root or tempfile.gettempdir()).glob(f"{PREFIX}*"):
        try:
            if folder.is_symlink() or folder.stat().st_uid != os.getuid():
                continue
            fd = os.open(folder / LOCK_NAME, os.O_RDWR)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its launcher is running
            os.close(fd)
            continue
        try:
            shutil.rmtree(folder, ignore_errors=True)
        finally:
            os.close(fd)
        removed.append(folder)
    return removed


def _start(index: int, addresses: list[str], bench_args: list[str], tmp: Path) -> _Worker:
    db, log = tmp / f"worker{index}.sqlite", tmp / f"worker{index}.log"
    command = [
        sys.executable, "-m", "gpuscout", "bench", *bench_args,
        "--cluster", "tf-config", "--db", str(db), "--quiet",
    ]  # fmt: skip
    # Each worker is told its place as a cluster manager tells it (TF_CONFIG, as Kubernetes
    # jobs and Ray Train set it), so the rendezvous layer a cluster uses is the one tested
    # here. It dies with this process (a worker blocked in a collective would otherwise wait
    # for ever): the CLI's entry reads the variable before anything else.
    env = {
        **os.environ,
        "TF_CONFIG": tf_config(addresses, index),
        lifeline.PARENT_ENV: str(os.getpid()),
    }
    with log.open("wb") as out:
        # Its own session: the terminal's Ctrl-C reaches the launcher only, which stops the
        # workers itself, in order.
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            env=env,
            start_new_session=True,
        )
    return _Worker(index, addresses[index], proc, db, log, time.monotonic())


def tf_config(addresses: list[str], index: int) -> str:
    """The ``TF_CONFIG`` of worker ``index`` of ``addresses`` (worker 0 is the chief)."""
    return json.dumps(
        {"cluster": {"worker": addresses}, "task": {"type": "worker", "index": index}}
    )


def _wait(workers: list[_Worker], say: Callable[[str], None], limit_s: float | None = None) -> None:
    """Until every worker has exited, or FAIL_GRACE_S after the first one failed."""
    start = time.monotonic()
    failed_at: float | None = None
    while [w.poll() for w in workers].count(None):
        now = time.monotonic()
        if limit_s is not None and now - start > limit_s:
            return
        if failed_at is None:
            bad = [w for w in workers if w.poll() not in (None, 0)]
            if bad:
                failed_at = now
                say(
                    f"worker {bad[0].index} failed; giving the others {FAIL_GRACE_S:g} s to "
                    "report before stopping them"
                )
        elif now - failed_at > FAIL_GRACE_S:
            return
        time.sleep(POLL_S)


def _signal(worker: _Worker, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(worker.proc.pid, sig)


def _stop(workers: list[_Worker]) -> None:
    """SIGTERM every worker still running, SIGKILL it TERM_GRACE_S later; reap them all."""
    running = [w for w in workers if w.poll() is None]
    for w in running:
        _signal(w, signal.SIGTERM)
    deadline = time.monotonic() + TERM_GRACE_S
    for w in running:
        try:
            w.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal(w, signal.SIGKILL)
            w.proc.wait()
        w.poll()


def _stored_run(worker: _Worker) -> RunResult | None:
    if not worker.db.exists():
        return None
    from gpuscout.store import Store

    with Store(worker.db) as store:
        rows = store.list(limit=1)
        return store.get(rows[0].id) if rows else None


def _report(worker: _Worker, run: RunResult | None) -> WorkerRun:
    if run is None and worker.index > 0 and worker.proc.returncode == 0:
        # it sent its row to the chief's run and stored none of its own (bench): its speed
        # and environment come from that row (with_sent_rows)
        return WorkerRun(
            task_index=worker.index,
            address=worker.address,
            status="ok",
            exited_after_s=worker.exited_after_s,
        )
    if run is None:
        return WorkerRun(
            task_index=worker.index,
            address=worker.address,
            status="error",
            message=_why(worker),
            exited_after_s=worker.exited_after_s,
        )
    sps = run.samples_per_second
    return WorkerRun(
        task_index=worker.index,
        address=worker.address,
        status=run.status,
        message=run.message,
        samples_per_second=sps.median if sps else None,
        exited_after_s=worker.exited_after_s,
        env=run.env,
    )


def _why(worker: _Worker) -> str:
    """What a worker that stored no run said last, else how it ended."""
    lines = worker.log.read_text(errors="replace").splitlines()
    said = [ln for ln in lines if ln.startswith("gpuscout:")]
    if said:
        return said[-1].removeprefix("gpuscout: ").removeprefix("error: ")
    code = worker.proc.returncode
    if code is not None and code < 0:
        return f"killed by {signal.Signals(-code).name}"
    return f"exited with code {code} without storing a run"


def combine(config: BenchConfig, chief: RunResult | None, reports: list[WorkerRun]) -> RunResult:
    """The launched run: the chief's, with every worker's report; failed if any worker failed."""
    result = chief or failed(config, "error", "the chief (worker 0) produced no result")
    bad = sorted(
        (w for w in reports if w.status != "ok"), key=lambda w: w.exited_after_s or float("inf")
    )
    why = "; ".join(f"worker {w.task_index} ({w.address}): {w.message}" for w in bad)
    if bad and result.status == "ok":  # every step was all-reduced: the timing stands
        result = result.model_copy(
            update={"warnings": [*result.warnings, f"a worker failed after the run: {why}"]}
        )
    elif bad:
        # In the order they ended: the first is the cause, a peer's aborted collective follows.
        result = result.model_copy(update={"status": bad[0].status, "message": why})
    spread = result.distribution or Distribution(
        strategy=distribute.MULTI_WORKER,
        replicas=len(reports),
        devices=[],
        logical_devices=False,
        workers=len(reports),
        per_replica_batch=config.batch_size or 0,
        global_batch=0,
    )
    note = (
        f"launched by 'gpuscout launch': {len(reports)} workers on this machine's loopback "
        f"({HOST}), sharing its CPU cores (and GPUs, if any); the run is the chief's (worker 0)"
    )
    rows = with_sent_rows(reports, spread.worker_runs)
    return result.model_copy(
        update={
            "distribution": spread.model_copy(update={"worker_runs": rows}),
            "assumptions": [*result.assumptions, note],
        }
    )


def with_sent_rows(reports: list[WorkerRun], sent: list[WorkerRun]) -> list[WorkerRun]:
    """The launcher's own rows, which know what the chief's cannot: when each worker exited,
    and why one failed (a worker that failed after the rows were gathered, or never sent
    one, stays failed here). The chief's run holds the row each worker sent it over the
    run's collectives (``gpuscout.measure.worker_rows``); a worker that stored no run of its
    own (bench stores none once its row reached the chief; a failed one may have sent it
    first) takes its speed and environment from it. One that stored none and whose row is
    not there either is said so."""
    by_index = {w.task_index: w for w in sent}
    out = []
    for report in reports:
        row = by_index.get(report.task_index)
        unknown = not report.env and report.samples_per_second is None
        if row is not None and unknown:
            report = report.model_copy(
                update={"samples_per_second": row.samples_per_second, "env": row.env}
            )
        elif unknown and report.status == "ok":
            report = report.model_copy(
                update={
                    "status": "error",
                    "message": "it stored no run, and its row did not reach the chief",
                }
            )
        out.append(report)
    return out
