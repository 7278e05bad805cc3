"""Every numeric option has a finite range from ``cli/parser.py``; every option a text names
exists.

The walk covers every option of every command (``build_parser()``), so an option added
tomorrow is checked tomorrow: a numeric option without one of parser.py's ranges fails
:func:`test_every_typed_option_takes_a_range_or_is_known_text`, and its range is then fed
infinity, NaN, huge and negative values by :func:`test_impossible_numbers_are_refused`.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpuscout.cli import bench, build_parser, main, report
from gpuscout.cli.output import dumps_strict, finite_or_none
from gpuscout.cli.parser import (
    CountText,
    FloatRange,
    GpuCounts,
    HoursRange,
    IntListRange,
    IntRange,
    KeyedNumbers,
    Range,
    cost_option,
    devices,
    gpu_names,
    model_spec,
)

SRC = Path(__file__).parents[2] / "src" / "gpuscout"
BAD = ("inf", "-inf", "nan", "1e308", "1e400", "-1")
# Types of options whose values are text, not numbers (each checked where it is defined).
TEXT_TYPES = {Path, model_spec, gpu_names, cost_option, devices, bench._note, report._answers}


def _options(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.Action]]:
    """(command path, action) for every argument of every command, nested ones included.

    A positional's path ends with a placeholder "1" for each positional before it, so that
    ``[*path, value]`` puts the value in its place.
    """
    before: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, (*path, name))
        elif path and not isinstance(action, argparse._HelpAction):
            yield (*path, *before), action
            if not action.option_strings and action.nargs != argparse.REMAINDER:
                before.append("1")


OPTIONS = list(_options(build_parser()))
RANGED = [(path, a) for path, a in OPTIONS if isinstance(a.type, Range)]


def _name(path: tuple[str, ...], action: argparse.Action) -> str:
    return " ".join((*path, action.option_strings[-1] if action.option_strings else action.dest))


def _run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def test_the_walk_sees_every_command_and_the_numeric_options() -> None:
    commands = {path[0] for path, _ in OPTIONS}
    assert {"bench", "audit", "cost", "predict", "memory", "specs", "soak", "runs"} <= commands
    assert len(RANGED) >= 60, len(RANGED)  # the walk found the options, not an empty list


@pytest.mark.parametrize(
    ("path", "action"), OPTIONS, ids=[_name(p, a) for p, a in OPTIONS]
)  # fmt: skip
def test_every_typed_option_takes_a_range_or_is_known_text(
    path: tuple[str, ...], action: argparse.Action
) -> None:
    """A new numeric option with ``type=float`` (or int, or a helper of its own) fails here
    the day it is added: give it a named range in cli/parser.py."""
    if action.type is None:
        assert not isinstance(action.default, int | float) or isinstance(action.default, bool), (
            f"{_name(path, action)} has a numeric default and no type: give it a range"
        )
        return
    assert isinstance(action.type, Range) or action.type in TEXT_TYPES, (
        f"{_name(path, action)} takes type {action.type!r}: a numeric option takes a range "
        "from gpuscout.cli.parser (float_in, int_in, ...), a text one goes in TEXT_TYPES"
    )


@pytest.mark.parametrize(
    ("path", "action"), RANGED, ids=[_name(p, a) for p, a in RANGED]
)  # fmt: skip
def test_impossible_numbers_are_refused(path: tuple[str, ...], action: argparse.Action) -> None:
    for bad in BAD:
        args = [*path, *action.option_strings[-1:], bad]
        code, _, err = _run(args)
        where = f"gpuscout {' '.join(args)}: {err}"
        assert code == 2, where
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, where
        names = action.option_strings or [action.dest, str(action.metavar)]
        if bad.startswith("-") and not action.option_strings:  # argparse reads it as an option
            continue
        assert any(f"argument {n}" in err or f"/{n}:" in err for n in names), where
        assert ".. To fix" not in err, where


@pytest.mark.parametrize(
    ("path", "action"), RANGED, ids=[_name(p, a) for p, a in RANGED]
)  # fmt: skip
def test_each_range_is_finite_and_takes_its_own_bounds(
    path: tuple[str, ...], action: argparse.Action
) -> None:
    parse: Any = action.type  # a Range: callable
    kind = parse
    if isinstance(kind, KeyedNumbers):  # GPU=X: the number after '='
        keyed: Any = action.type
        kind = kind.value
        parse = lambda text: keyed(f"key={text}")  # noqa: E731
    if isinstance(kind, IntListRange | CountText):
        kind = kind.item
    if isinstance(kind, HoursRange):
        kind = kind.hours
    if isinstance(kind, GpuCounts):
        assert kind([f"{kind.machines.high}x{kind.per_machine.high}"][0])
        return
    assert isinstance(kind, FloatRange | IntRange)
    assert math.isfinite(kind.low) and math.isfinite(kind.high) and kind.low >= 0
    top = 2**63 - 1 if isinstance(kind, IntRange) else 1e16  # run ids: SQLite's integers
    assert kind.high <= top, f"{_name(path, action)}: {kind.bounds()} is not a sensible range"
    if isinstance(kind, IntRange) or kind.high_included:
        assert parse(str(kind.high)) is not None  # the top is allowed
    else:
        assert parse(str(kind.high * 0.999)) is not None
    with pytest.raises(argparse.ArgumentTypeError, match="must be"):
        parse(str(kind.high * 2 + 1))
    if isinstance(kind, IntRange) or kind.low_included:
        parse(str(kind.low))  # e.g. 0 failures, a seed of 0
    else:
        with pytest.raises(argparse.ArgumentTypeError, match=f"must be above {kind.low:g}"):
            parse(str(kind.low))


def test_errors_read_the_same_for_every_range() -> None:
    messages = []
    for _, action in RANGED:
        if isinstance(action.type, FloatRange | IntRange):
            with pytest.raises(argparse.ArgumentTypeError) as info:
                action.type("-1")
            messages.append(str(info.value))
    pattern = re.compile(
        r"^must be (a whole number )?(above|at least) \S+ and (at most|below) \S+, got -1$"
    )
    assert messages and all(pattern.match(m) for m in messages), messages


def test_json_output_is_strict_whatever_is_derived() -> None:
    data = {"a": math.inf, "b": [-math.inf, math.nan, 1.5], "c": ({"d": math.nan},), "e": 2}
    assert finite_or_none(data) == {"a": None, "b": [None, None, 1.5], "c": [{"d": None}], "e": 2}
    text = dumps_strict(data)
    json.loads(text, parse_constant=lambda token: pytest.fail(f"{token} in {text}"))
    assert dumps_strict({"s": {"x"}}, default=sorted) == '{\n  "s": [\n    "x"\n  ]\n}'


def test_every_json_output_of_the_cli_goes_through_the_strict_writer() -> None:
    """``json.dump(..., sys.stdout)`` writes ``Infinity`` for an overflowing value: only
    gpuscout.cli.output may write JSON to stdout."""
    for path in (SRC / "cli").glob("*.py"):
        if path.name != "output.py":
            assert "json.dump(" not in path.read_text(), f"{path.name} writes JSON itself"


# ---- texts that name options --------------------------------------------------------------

TOKEN = re.compile(r"(?<![\w-])(--[a-z][a-z0-9]*(?:-[a-z0-9]+)*)")
ALL_OPTIONS = {o for _, a in OPTIONS for o in a.option_strings} | {"--help", "--version"}
BY_COMMAND: dict[str, set[str]] = {}
for _path, _action in OPTIONS:
    BY_COMMAND.setdefault(_path[0], {"--help"}).update(_action.option_strings)


def _texts(path: Path) -> Iterator[str]:
    """Every string a module holds, an f-string as one text, docstrings left out."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    parts: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            pieces = [v for v in node.values if isinstance(v, ast.Constant)]
            parts.update(id(v) for v in pieces)
            yield "".join(str(v.value) for v in pieces)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in parts | docstrings
        ):
            yield node.value


# Options of other programs that gpuscout's texts name on purpose (the commands it writes or
# tells the user to run), each with the program it belongs to.
OTHER_PROGRAMS = {
    "--down": "sky launch (SkyPilot)",
    "--kill-after": "timeout (coreutils)",
    "--traced": "benchmarks/finetuning_accuracy.py (the fine-tuning check from PyTorch's step)",
}


def test_every_option_any_text_names_exists() -> None:
    """Errors, hints, help and notes anywhere in gpuscout name only options the CLI has (or
    another program's, listed by name in OTHER_PROGRAMS)."""
    missing = {
        (token, path.relative_to(SRC).as_posix())
        for path in SRC.rglob("*.py")
        for text in _texts(path)
        for token in TOKEN.findall(text)
        if token not in ALL_OPTIONS and token not in OTHER_PROGRAMS
    }
    assert not missing, sorted(missing)


def test_each_command_names_only_its_own_options() -> None:
    """A command's module suggests its own options, or another command's when it names that
    command ('bench --scaling'); never an option the command would refuse."""
    modules: dict[str, set[str]] = {}
    parser = build_parser()
    for command in {path[0] for path, _ in OPTIONS}:
        handler = parser.parse_args([command, *_required(command)]).__dict__.get("handler")
        if handler is not None:
            modules.setdefault(handler.__module__, set()).add(command)
    assert {"gpuscout.cli.advise", "gpuscout.cli.audit", "gpuscout.cli.cost"} <= set(modules)
    wrong = []
    for module, commands in modules.items():
        file = SRC.parent / (module.replace(".", "/") + ".py")
        own = set().union(*(BY_COMMAND[c] for c in commands))
        for text in _texts(file):
            named = {c for c in BY_COMMAND if re.search(rf"\b{c}\b", text)} - commands
            allowed = own.union(*(BY_COMMAND[c] for c in named))
            if TOKEN.fullmatch(text):  # a bare option name is data (launch's list of bench's)
                allowed = ALL_OPTIONS
            wrong += [
                (module, t, text[:60])
                for t in TOKEN.findall(text)
                if t not in allowed and t not in OTHER_PROGRAMS
            ]
    assert not wrong, wrong


def _required(command: str) -> list[str]:
    """Just enough arguments for ``command`` to parse (its handler is what we want)."""
    return {
        "predict": ["--workload", "mlp"],
        "launch": ["--workers", "1"],
        "runs": ["list"],
        "cloud": ["collect", "."],
    }.get(command, [])


COMMANDS = sorted({tuple(p for p in path if p != "1") for path, _ in OPTIONS})


@pytest.mark.parametrize("path", COMMANDS, ids=[" ".join(p) for p in COMMANDS])
def test_help_shows_percent_signs_as_written(path: tuple[str, ...]) -> None:
    """argparse formats help with %, not descriptions: '95%%' in a description shows as
    typed; every help text renders, and none shows a doubled percent sign."""
    code, out, err = _run([*path, "--help"])
    assert code == 0, err
    assert "%%" not in out and "usage:" in out
