"""Every call to a PostgreSQL server is bounded, and no message shows its password.

A server that accepts TCP and never answers (a plain socket in a thread here) once hung every
command; the statement timeout is checked on a real server (``pg_url``: skips, saying why,
without one), and so is the client's deadline on a server that stops answering mid-session."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import make_url, text

from gpuscout.core.errors import UserError
from gpuscout.store import Store, deadline
from gpuscout.store.engines import postgres_engine, postgres_timeouts, postgres_url, shown_url
from tests.conftest import run_in_process
from tests.postgres import ENV as PG_ENV
from tests.store.test_store import _result


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port whose listener accepts every connection and never writes a byte."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # closed: the test is over
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield int(listener.getsockname()[1])
    listener.close()
    for conn in held:
        conn.close()


def test_a_silent_server_ends_in_one_line_naming_it_and_the_limit(
    silent_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUSCOUT_DB_TIMEOUT", "2")
    url = f"postgresql://u:hunter2@127.0.0.1:{silent_port}/db"
    r = run_in_process("runs", "list", "--db", url)
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
    assert (
        f"the database at postgresql://u:***@127.0.0.1:{silent_port}/db did not answer "
        "within 2 s (the connection)" in r.err
    )
    assert "GPUSCOUT_DB_TIMEOUT" in r.err and "hunter2" not in r.err


def test_the_urls_own_connect_timeout_wins_and_a_query_password_is_hidden(
    silent_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUSCOUT_DB_TIMEOUT", "500")
    url = f"postgresql://u@127.0.0.1:{silent_port}/db?password=hunter2&connect_timeout=2"
    r = run_in_process("runs", "list", "--db", url)
    assert r.code == 2 and "did not answer within 2 s" in r.err, r.err
    assert "hunter2" not in r.err and "u:***@" in r.err


def test_defaults_and_bad_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUSCOUT_DB_TIMEOUT", raising=False)
    monkeypatch.delenv("GPUSCOUT_DB_STATEMENT_TIMEOUT", raising=False)
    assert postgres_timeouts(postgres_url("postgresql://u@h/db")) == (10.0, 60.0)
    for bad in ("abc", "0", "-1", "inf", "nan"):
        monkeypatch.setenv("GPUSCOUT_DB_STATEMENT_TIMEOUT", bad)
        with pytest.raises(UserError, match=f"GPUSCOUT_DB_STATEMENT_TIMEOUT '{bad}'"):
            postgres_timeouts(postgres_url("postgresql://u@h/db"))
    monkeypatch.delenv("GPUSCOUT_DB_STATEMENT_TIMEOUT")
    with pytest.raises(UserError, match=r"connect_timeout 'soon' .in postgresql://u:\*\*\*@h"):
        postgres_timeouts(postgres_url("postgresql://u:pw@h/db?connect_timeout=soon"))


def test_a_non_numeric_port_is_one_line() -> None:
    r = run_in_process("runs", "list", "--db", "postgresql://u:hunter2@127.0.0.1:abc/db")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
    assert "its port is not a number" in r.err and "hunter2" not in r.err


def test_the_statement_timeout_is_set_on_the_server_and_said_when_hit(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUSCOUT_DB_STATEMENT_TIMEOUT", "0.3")
    engine = postgres_engine(postgres_url(pg_url))
    try:
        with engine.connect() as conn:
            assert conn.execute(text("SHOW statement_timeout")).scalar() == "300ms"
            with pytest.raises(UserError, match=r"did not answer within 0\.3 s \(a statement\)"):
                conn.execute(text("SELECT pg_sleep(5)"))
    finally:
        engine.dispose()


# The client-side deadline (store/deadline.py): a server that accepted the connection and then
# stopped answering. Real ways to stop one: SIGSTOP on the backend of our own throwaway cluster,
# and a proxy that stops forwarding. Each hang is guarded by a thread join, so a missing
# deadline fails the test instead of hanging the suite. Statement timeout 0.5 s + 0.5 s grace.

GUARD_S = 30.0  # far above the 1 s deadline: only a missing deadline reaches it


def _short_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """For engines made from now on (so a migration before it keeps the default timeouts)."""
    monkeypatch.setenv("GPUSCOUT_DB_STATEMENT_TIMEOUT", "0.5")
    monkeypatch.setattr(deadline, "GRACE_S", 0.5)


@pytest.fixture
def short_engine(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """An engine on the test server with the short deadline (statement 0.5 s + 0.5 s grace),
    disposed after the test."""
    _short_deadline(monkeypatch)
    engine = postgres_engine(postgres_url(pg_url))
    try:
        yield engine
    finally:
        engine.dispose()


@contextmanager
def _stopped(pid: int) -> Iterator[None]:
    """SIGSTOP a backend of the throwaway cluster (never a server we were only lent) for the
    block; SIGCONT however the block ends."""
    if os.environ.get(PG_ENV):
        pytest.skip(f"{PG_ENV} names a server this test must not stop processes of")
    try:
        os.kill(pid, signal.SIGSTOP)
    except OSError as exc:
        pytest.skip(f"cannot signal the PostgreSQL backend {pid}: {exc}")
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def _guarded(call: Callable[[], Any], pid: int | None = None) -> Any:
    """``call()`` in a thread: its result or its exception, or a failure (after SIGCONT, which
    lets the stuck call end) if it is still waiting after GUARD_S."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = call()
        except BaseException as exc:  # handed to the test below
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(GUARD_S)
    if thread.is_alive():
        if pid is not None:
            os.kill(pid, signal.SIGCONT)
        thread.join(GUARD_S)
        pytest.fail(f"still waiting on the database after {GUARD_S:g} s: no client deadline")
    if "error" in out:
        raise out["error"]
    return out.get("value")


def _backend_pid(conn: Any) -> int:
    return int(conn.execute(text("SELECT pg_backend_pid()")).scalar())


def _one_line_deadline(exc: UserError, url: str, what: str) -> None:
    line = str(exc)
    assert "\n" not in line, line
    assert (
        f"the database at {shown_url(postgres_url(url))} did not answer within 1 s ({what}, "
        "bounded by GPUSCOUT_DB_STATEMENT_TIMEOUT 0.5 s + 0.5 s grace)"
    ) in line
    assert "GPUSCOUT_DB_STATEMENT_TIMEOUT=SECONDS" in line


def test_a_stopped_backend_ends_a_statement_in_one_line_and_nothing_is_committed(
    short_engine: Any, pg_url: str
) -> None:
    engine = short_engine
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (x int)"))
    with engine.connect() as conn:
        conn.execute(text("INSERT INTO t VALUES (1)"))
        pid = _backend_pid(conn)
        with _stopped(pid), pytest.raises(UserError) as caught:
            _guarded(lambda: conn.execute(text("SELECT 1")), pid)
    _one_line_deadline(caught.value, pg_url, "a statement")
    with engine.connect() as conn:  # a new connection: the stopped one was thrown away
        assert _backend_pid(conn) != pid
        assert conn.execute(text("SELECT count(*) FROM t")).scalar() == 0


def test_a_stopped_backend_ends_a_commit_saying_its_outcome_is_unknown(
    short_engine: Any, pg_url: str
) -> None:
    engine = short_engine
    with engine.connect() as conn:
        pid = _backend_pid(conn)
        with _stopped(pid), pytest.raises(UserError) as caught:
            _guarded(conn.commit, pid)
    _one_line_deadline(caught.value, pg_url, "a COMMIT")
    assert "whether it was stored is unknown" in str(caught.value)


def test_a_stopped_pooled_connection_fails_its_ping_and_the_read_uses_a_new_one(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    Store(pg_url).close()  # a gpuscout database, migrated with the default timeouts
    _short_deadline(monkeypatch)
    store = Store(pg_url, readonly=True)
    try:
        with store.engine.connect() as conn:  # the one pooled connection
            pid = _backend_pid(conn)
        with _stopped(pid):
            assert _guarded(store.count, pid) == 0  # the ping's deadline, then a reconnect
        with store.engine.connect() as conn:
            assert _backend_pid(conn) != pid
    finally:
        store.close()


@contextmanager
def _freezing_proxy(url: str, marker: bytes) -> Iterator[str]:
    """A TCP proxy to the server at ``url`` that stops forwarding, for good, once the client
    sends ``marker`` (a proxy or a network path that died mid-session); the URL through it."""
    target = make_url(url)
    listener = socket.create_server(("127.0.0.1", 0))
    frozen = threading.Event()
    sockets: list[socket.socket] = [listener]

    def pump(src: socket.socket, dst: socket.socket, watch: bool) -> None:
        seen = b""
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                seen = (seen + data)[-4096:]
                if watch and marker in seen:
                    frozen.set()
                if not frozen.is_set():
                    dst.sendall(data)

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = listener.accept()
                server = socket.create_connection((target.host, target.port or 5432))
                sockets.extend((client, server))
                for args in ((client, server, True), (server, client, False)):
                    threading.Thread(target=pump, args=args, daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield target.set(host="127.0.0.1", port=listener.getsockname()[1]).render_as_string(
            hide_password=False
        )
    finally:
        for s in sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        assert frozen.is_set(), "the proxy never saw the statement it was to stop"


def test_runs_list_through_a_proxy_that_stops_forwarding_is_one_line(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    Store(pg_url).close()  # a gpuscout database, migrated with the default timeouts
    _short_deadline(monkeypatch)
    with _freezing_proxy(pg_url, b"ORDER BY runs.id DESC") as proxied:
        url = make_url(proxied).set(password="hunter2").render_as_string(hide_password=False)
        r = _guarded(lambda: run_in_process("runs", "list", "--db", url))
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
    assert "did not answer within 1 s (a statement, bounded by GPUSCOUT_DB_STATEMENT_TIMEOUT" in (
        r.err
    )
    assert "hunter2" not in r.err and ":***@127.0.0.1" in r.err


def test_a_run_whose_insert_gets_no_answer_is_kept_in_a_file_and_not_stored(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Store(pg_url).close()  # a gpuscout database, migrated with the default timeouts
    _short_deadline(monkeypatch)
    with _freezing_proxy(pg_url, b"INSERT INTO runs") as proxied:
        store = Store(proxied)
        try:
            with pytest.raises(UserError) as caught:
                _guarded(lambda: store.save(_result()))
        finally:
            store.close()
    assert "did not answer within 1 s (a statement" in str(caught.value)
    assert "the run was kept in" in str(caught.value)
    assert len(list(tmp_path.glob("gpuscout-unsaved-run-*.json"))) == 1
    with Store(pg_url, readonly=True) as store:
        assert store.count() == 0  # the transaction was never committed


def test_client_sockets_have_keepalives_and_a_user_timeout(short_engine: Any) -> None:
    engine = short_engine
    with engine.connect() as conn:
        fd = conn.connection.dbapi_connection.fileno()  # type: ignore[union-attr]
        with socket.socket(fileno=os.dup(fd)) as sock:
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 30
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == 1000
