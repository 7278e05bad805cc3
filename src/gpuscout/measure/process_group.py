"""The measuring child's process group: everything the user's code started belongs to it.

A ``--model`` builder or ``--data`` function may fork (a data-loader worker), start a
``multiprocessing`` worker or a non-daemon thread. Such a worker holds the child's pipe to
gpuscout open (so its end never comes) or keeps the child's interpreter from exiting (it waits
for non-daemon threads and processes). The child is started in its own session, so its process
group holds all of them; once the child has sent its last word, or failed to, the parent ends
that whole group, and nothing the user's code started outlives the command (issue 31).

When the parent cannot (killed outright: SIGKILL, the out-of-memory killer), the child dies
with it (:mod:`gpuscout.measure.lifeline`), and the group guard the child started in its group
(:mod:`gpuscout.measure.group_guard`) kills the rest of the group the moment the child is gone.
The guard also acts when the child ends on its own, so its leftovers may already be dead when
:func:`end_group` signals the group; it ends the guard with the rest on the normal paths.

The leader is checked without being reaped (``waitid`` with ``WNOWAIT``) until the group has
been signalled: a reaped leader's pid could name another process's group later.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time

# After its last message, the child normally exits within a second (the backend's teardown);
# one kept alive by what the user's code left running is ended this long after it.
EXIT_GRACE_S = 2.0
_POLL_S = 0.05


def has_exited(pid: int) -> bool:
    """Whether child ``pid`` has ended, leaving it to be reaped (a zombie keeps its group id)."""
    if not hasattr(os, "waitid"):  # no WNOWAIT here: ask the kernel whether it still runs
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False
    try:
        found = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:  # already reaped
        return True
    return found is not None


def kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the child and every process in its group (it leads its own session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()  # in case the group could not be signalled


def end_group(proc: subprocess.Popen[str], grace_s: float) -> int:
    """Give the child ``grace_s`` seconds to exit, end its whole group, and reap it.

    Whatever the child started is killed even when the child itself exited in time: a forked
    worker does not die with its parent. Returns the child's exit code (negative: a signal).
    """
    deadline = time.monotonic() + grace_s
    while not has_exited(proc.pid) and time.monotonic() < deadline:
        time.sleep(_POLL_S)
    kill_group(proc)
    return proc.wait()
