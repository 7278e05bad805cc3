"""A real PostgreSQL server for the store's tests: the one GPUSCOUT_TEST_POSTGRES names, or a
throwaway cluster started from the machine's PostgreSQL binaries (Debian's ``postgresql``
package, which ``.ci/run`` installs). Tests that need it skip, saying why, where neither is."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ENV = "GPUSCOUT_TEST_POSTGRES"


def _binary(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else shutil.which(name)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def server() -> Iterator[tuple[str | None, str]]:
    """(URL of a maintenance database, or None, and why not)."""
    given = os.environ.get(ENV)
    if given:
        yield given, ""
        return
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if not initdb or not pg_ctl:
        yield None, f"no PostgreSQL: set {ENV}=postgresql://... or install Debian's postgresql"
        return
    as_user: list[str] = []
    data = Path(tempfile.mkdtemp(prefix="gpuscout-pg-"))
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root: run it as its own user
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            yield None, "running as root and there is no 'postgres' user to run PostgreSQL as"
            return
        os.chown(data, user.pw_uid, user.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    port = _free_port()
    run = {"check": True, "capture_output": True, "timeout": 120}
    try:
        subprocess.run([*as_user, initdb, "-D", str(data / "db"), "-U", "postgres",
                        "--auth=trust", "-E", "UTF8"], **run)  # type: ignore[call-overload]  # fmt: skip
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {data} -c fsync=off"
        subprocess.run([*as_user, pg_ctl, "-D", str(data / "db"), "-o", options, "-w",
                        "-l", str(data / "log"), "start"], **run)  # type: ignore[call-overload]  # fmt: skip
    except (subprocess.SubprocessError, OSError) as exc:
        shutil.rmtree(data, ignore_errors=True)
        yield None, f"could not start PostgreSQL: {exc}"
        return
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres", ""
    finally:
        subprocess.run([*as_user, pg_ctl, "-D", str(data / "db"), "-m", "immediate", "stop"],
                       capture_output=True, timeout=60)  # fmt: skip
        shutil.rmtree(data, ignore_errors=True)


def fresh_database(maintenance_url: str) -> str:
    """A new empty database on the server; its URL."""
    from sqlalchemy import create_engine, make_url

    name = f"t_{uuid.uuid4().hex[:12]}"
    engine = create_engine(make_url(maintenance_url).set(drivername="postgresql+psycopg"),
                           isolation_level="AUTOCOMMIT")  # fmt: skip
    with engine.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    engine.dispose()
    return make_url(maintenance_url).set(database=name).render_as_string(hide_password=False)
