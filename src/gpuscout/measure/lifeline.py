"""Processes gpuscout starts die with the process that started them.

A measuring child and a launched worker each run in their own session (so a terminal's Ctrl-C
reaches them once, through their parent, which stops them in order). Nothing else would stop
them if that parent were killed outright (SIGKILL, the out-of-memory killer): a worker blocked
in a collective waits for ever for a peer and takes no signal but SIGKILL. So each one asks to
be killed when its parent goes, as its first act:

* on Linux the kernel does it (``prctl(PR_SET_PDEATHSIG, SIGKILL)``), whatever the main
  thread is blocked in; the parent is checked right after, in case it died before that;
* elsewhere a daemon thread polls the parent's pid once a second and kills this process.

A launched worker learns its launcher from :data:`PARENT_ENV` (``python -m gpuscout`` has no
other way to be told), read once by the CLI's entry.

This reaches the process that asked, not what it forks: the kernel clears the death signal on
fork, and a forked process's parent is the one that forked it. So a measuring child also starts
a group guard (:mod:`gpuscout.measure.group_guard`) that kills the child's whole process group
once the child is gone: a killed launcher takes its workers, each worker its measuring child,
and each child what the user's code forked in it (a data-loader worker, ``multiprocessing``).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from gpuscout.core.ranges import NotWhole, whole

PARENT_ENV = "GPUSCOUT_DIE_WITH_PID"
_POLL_S = 1.0


def die_with_parent(parent: int) -> None:
    """Have this process SIGKILLed as soon as process ``parent`` (its parent) ends."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, int(signal.SIGKILL))
        if os.getppid() != parent:  # the parent died before that took effect
            os.kill(os.getpid(), signal.SIGKILL)
        return

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_POLL_S)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="gpuscout-parent-watch", daemon=True).start()


def from_environment() -> None:
    """When started by ``gpuscout launch`` (``PARENT_ENV`` set), die with the launcher.

    The variable is removed here, so the processes this one starts do not inherit a
    grandparent's pid: each of them gets its own parent's (see ``measure.child``).
    """
    text = os.environ.pop(PARENT_ENV, None)
    try:  # a pid: ASCII digits ('²' passes isdigit() and then fails int())
        parent = whole(text, 1, 2**31 - 1) if text else None
    except NotWhole:
        parent = None  # not one gpuscout launch wrote: nothing to die with
    if parent is not None:
        die_with_parent(parent)
