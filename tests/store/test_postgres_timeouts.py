"""Every call to a PostgreSQL server is bounded, and no message shows its password.

A server that accepts TCP and never answers (a plain socket in a thread here) once hung every
command; the statement timeout is checked on a real server (``pg_url``: skips, saying why,
without one)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import text

from gpuscout.errors import UserError
from gpuscout.store.engines import postgres_engine, postgres_timeouts, postgres_url
from tests.conftest import run_in_process


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
