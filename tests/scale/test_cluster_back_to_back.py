"""Two ``bench --cluster`` runs in a row on one machine, on the same ports, on each backend.

Issue 43: the second run's chief refused its port ("already in use") 4 times in 7, because the
first run's connections to it were still in TIME_WAIT and the port check bound without
``SO_REUSEADDR`` (the real server, gRPC's, binds with it); its other rank then waited out
its connect timeout. Here the second run starts the moment the first has ended, with the
same port base: both end ok and the store holds both runs. The second run is ``--quiet``, so
its lines are checked too: the worker that stored nothing says so, not "run None: ok".
TIME_WAIT is not certain to be there (it depends on which side closed first), so the
deterministic check of the port itself is in ``test_cluster_values.py``; this is the
end-to-end case, as short as a multi-worker run can be.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpuscout.store import Store
from tests.conftest import leftovers
from tests.scale.test_cluster_e2e import (
    MAIN,
    MANAGERS,
    QUICK,
    finish,
    free_port_pair,
    skypilot,
    start,
)

SHORT = ("--steps", "5")  # after QUICK's: the later value wins


@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_two_cluster_runs_back_to_back_on_the_same_ports_both_end_ok(
    tmp_path: Path, backend: str
) -> None:
    if backend == "jax":
        pytest.importorskip("jax")
    port = free_port_pair()
    db = tmp_path / "runs.sqlite"
    args = ("--cluster", "skypilot", "--port-base", str(port), "--backend", backend, *SHORT)
    first = finish([start(skypilot(i), db, *args, "--worker-timeout", "60") for i in (0, 1)], 240)
    for code, _, err in first:
        assert code == 0, err
    # at once, on the same ports; --quiet, not --json: the line each rank prints is checked
    second = finish([_start_quiet(i, db, *args, "--worker-timeout", "60") for i in (0, 1)], 240)
    for code, _, err in second:
        assert code == 0, err
        assert "already in use" not in err
    (chief_out, _), (worker_out, worker_err) = [(o, e) for _, o, e in second]
    assert re.fullmatch(r"run \d+: ok, \S+ samples/s\n", chief_out), chief_out
    assert worker_out.startswith("worker 1 (stored in the chief's run): ok"), worker_out
    assert "run None" not in worker_out + worker_err
    with Store(db) as store:
        assert len(store.list()) == 2  # one stored run per measurement, by each chief
    assert not leftovers()


def _start_quiet(rank: int, db: Path, *args: str) -> subprocess.Popen[str]:
    """Rank ``rank`` as :func:`start` starts it, printing the ``--quiet`` line, not JSON."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(MANAGERS)}
    return subprocess.Popen(
        [sys.executable, "-c", MAIN, "bench", *QUICK, *args, "--db", str(db), "--quiet"],
        env={**env, **skypilot(rank), "COLUMNS": "200"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
