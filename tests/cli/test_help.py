"""Every command says what it does in its own ``--help``; every option says what it takes.

The walk covers ``build_parser()`` whole (nested commands such as ``runs show`` too), so a
command or option added tomorrow without help fails here the day it is added. What is checked
is what a user reads: a command's description (``gpuscout X --help``), not only the one line
of the command list; each option's help text; each choice of a ``choices`` option named in it
(a bare ``{cheapest,fastest,balanced}`` says nothing about what they mean); and the default,
where an option has one, stated in it.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from gpuscout.cli import build_parser
from tests.conftest import run_cli, run_in_process

Command = tuple[tuple[str, ...], argparse.ArgumentParser, str]
Option = tuple[tuple[str, ...], argparse.Action]


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[Command]:
    """(path, parser, its one-line help in the command list) for every command, nested too."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            one_line = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield (*path, name), sub, one_line.get(name, "")
                yield from _commands(sub, (*path, name))


COMMANDS = list(_commands(build_parser()))
OPTIONS: list[Option] = [
    (path, action)
    for path, sub, _ in COMMANDS
    for action in sub._actions
    if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)
    and action.help != argparse.SUPPRESS
]


def _id(path: tuple[str, ...], action: argparse.Action | None = None) -> str:
    if action is None:
        return " ".join(path)
    return " ".join((*path, action.option_strings[-1] if action.option_strings else action.dest))


def _help(action: argparse.Action) -> str:
    return str(action.help or "").strip()


def test_the_walk_sees_every_command_and_option() -> None:
    names = {" ".join(path) for path, _, _ in COMMANDS}
    assert {"scout", "bench", "soak", "memory", "runs", "runs show", "specs", "prices"} <= names
    assert len(OPTIONS) >= 200, len(OPTIONS)  # the walk found the options, not an empty list


@pytest.mark.parametrize(
    ("path", "parser", "one_line"), COMMANDS, ids=[_id(c[0]) for c in COMMANDS]
)
def test_every_command_has_a_description(
    path: tuple[str, ...], parser: argparse.ArgumentParser, one_line: str
) -> None:
    """``gpuscout X --help`` opens with what X does, longer than its line in the list."""
    description = (parser.description or "").strip()
    assert description, f"'gpuscout {' '.join(path)} --help' has no description"
    assert one_line.strip(), f"'{' '.join(path)}' has no line in its command list"
    assert description != one_line.strip() and len(description) > len(one_line), (
        f"'gpuscout {' '.join(path)}' describes itself only in its one line: {description!r}"
    )


@pytest.mark.parametrize(("path", "action"), OPTIONS, ids=[_id(*o) for o in OPTIONS])
def test_every_option_has_help(path: tuple[str, ...], action: argparse.Action) -> None:
    assert _help(action), f"{_id(path, action)} has no help text"


CHOOSING = [(path, a) for path, a in OPTIONS if a.choices]


@pytest.mark.parametrize(("path", "action"), CHOOSING, ids=[_id(*o) for o in CHOOSING])
def test_each_choice_is_named_in_the_help(path: tuple[str, ...], action: argparse.Action) -> None:
    """The usage line lists the choices; the help must say what each one means."""
    text = _help(action).lower()
    unexplained = [str(c) for c in action.choices or () if str(c).lower() not in text]
    assert not unexplained, f"{_id(path, action)}: help does not explain {unexplained}"


def _stated(default: object) -> list[str] | None:
    """Ways a help text may state ``default``; None where no default needs stating."""
    if default is None or default is False or default in ("", []):
        return None
    if isinstance(default, bool):  # --x/--no-x on by default
        return ["default: on", "default on", "(default)", "default"]
    if isinstance(default, int):
        return [f"{default}", f"{default:,}"]
    if isinstance(default, float):
        return [f"{default:g}"]
    if isinstance(default, str):
        return [default]
    return ["default"]  # a parsed list: said in words


DEFAULTED = [(p, a) for p, a in OPTIONS if _stated(a.default) and a.option_strings]


@pytest.mark.parametrize(("path", "action"), DEFAULTED, ids=[_id(*o) for o in DEFAULTED])
def test_each_default_is_stated(path: tuple[str, ...], action: argparse.Action) -> None:
    text = _help(action)
    ways = _stated(action.default) or []
    if isinstance(action, argparse.BooleanOptionalAction):
        ways = ["default"]
    assert "%(default)" in text or any(w in text for w in ways), (
        f"{_id(path, action)}: help does not state its default {action.default!r}"
    )


def test_a_description_shows_in_the_commands_own_help() -> None:
    """As a user runs it (a fresh interpreter, TensorFlow blocked: help must not load it)."""
    r = run_cli("memory", "--help", block_tf=True)
    assert r.code == 0, r.err
    assert "Does training fit in one GPU's memory" in " ".join(r.out.split())
    assert "e.g. gpuscout memory --params 7e9" in " ".join(r.out.split())


def test_soak_help_names_each_verdict_and_its_exit_code() -> None:
    r = run_in_process("soak", "--help")
    text = " ".join(r.out.split())
    assert r.code == 0, r.err
    for verdict in ("PASS", "FAIL", "INCONCLUSIVE", "INCOMPLETE"):
        assert verdict in text, verdict
    assert "0 pass, 1 fail, 3 incomplete, 4 inconclusive" in text
