"""The group guard: ends the measuring child's process group once the child is gone, however.

The measuring child leads its own session and process group, and the kernel kills it when
gpuscout dies (:mod:`gpuscout.measure.lifeline`). That does not reach what the user's code
started: a process the ``--model`` builder or ``--data`` function forked, or a
``multiprocessing`` worker, has the child as its parent and no death signal of its own
(``PR_SET_PDEATHSIG`` is cleared on fork). On its normal paths gpuscout ends the child's whole
group itself (:mod:`gpuscout.measure.process_group`); killed outright (SIGKILL, the
out-of-memory killer), it cannot, and such a worker would hold memory and the GPU for ever
(issue 31). So, as its first act, the child starts this guard in its group, and the guard
SIGKILLs that group (itself included) the moment the child has ended, for whatever reason.

The guard is ``python -m gpuscout.measure.group_guard CHILD_PID``, started by ``posix_spawn``
rather than a bare fork: a spawn is safe in a process with threads (the lifeline's watcher
where there is no ``prctl``), inherits no framework (it starts before the child imports one
and exec drops the rest), and its command line says what it is (tests and ``ps`` look for
``gpuscout.measure.child``; the guard is not one). Its stdio is ``/dev/null`` and the child's
result pipe is closed in it: it never holds gpuscout's pipes open (see process_group). It
ignores the interrupts a group may be sent (SIGINT, SIGTERM, SIGHUP): only SIGKILL ends it,
its own or gpuscout's ``end_group``, which on the normal paths kills the group guard included,
exactly as before. It waits without polling where it can (a pidfd of the child, Linux 5.3+),
elsewhere (macOS) by checking its parent's pid every ``POLL_S``.

A process that leaves the group on purpose (``setsid``, a daemon) is out of its reach, as it
is of ``end_group``. A guard reparented to init once the child is gone is reaped by init.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

POLL_S = 0.2  # where no pidfd: how often the guard checks that the child still runs


def start_guard(close_fds: tuple[int, ...] = ()) -> int | None:
    """Start the guard of this process's group; its pid, or None where it cannot run.

    Only a group leader has a group of its own to guard (the measuring child is started in a
    new session): anywhere else the guard would kill a group that is not the measurement's.
    ``close_fds``: this process's inheritable descriptors besides stdio (the result pipe), so
    that the guard does not hold them open. Without a guard (no ``posix_spawn``, no process
    to spare) the measurement still runs; only the killed-outright case is then uncovered.
    """
    if not hasattr(os, "posix_spawn") or not sys.executable or os.getpgrp() != os.getpid():
        return None
    actions: list[tuple[int, ...] | tuple[int, int, str, int, int]] = [
        (os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)
    ]
    actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in close_fds]
    argv = [sys.executable, "-m", "gpuscout.measure.group_guard", str(os.getpid())]
    try:
        return os.posix_spawn(sys.executable, argv, os.environ, file_actions=actions)
    except OSError:
        return None


def guard(child: int, use_pidfd: bool = True) -> None:
    """Wait until process ``child`` (this one's parent, leader of this group) has ended, then
    SIGKILL the whole group. Returns only when this process does not belong to ``child``'s
    group: it never kills a group it was not started to guard."""
    if os.getpgrp() != child:
        return
    _wait_for_end(child, use_pidfd)
    os.killpg(0, signal.SIGKILL)


def _wait_for_end(child: int, use_pidfd: bool) -> None:
    pidfd = None
    if use_pidfd and hasattr(os, "pidfd_open"):
        try:
            pidfd = os.pidfd_open(child)
        except OSError:  # a kernel before 5.3, or the child already reaped
            pidfd = None
    # Checked after the pidfd is opened: while the child is still this process's parent, its
    # pid cannot have been reused, so the pidfd names the child.
    if os.getppid() != child:
        return
    if pidfd is not None:
        select.select([pidfd], [], [])  # readable once the child has exited
        return
    while os.getppid() == child:  # reparented (to init or a subreaper) when the child ends
        time.sleep(POLL_S)


def _main(argv: list[str]) -> int:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)  # the group's interrupts are the child's
    guard(int(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
