"""Parsing and checking ``--model`` / ``--data`` specifications before TensorFlow starts.

Checking here means a missing file or a malformed spec fails in a fraction of a second with
one line, instead of after a TensorFlow import.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

from gpuscout.errors import UserError


@dataclass(frozen=True)
class FunctionSpec:
    """``path/to/file.py:function``."""

    path: Path
    function: str


@dataclass(frozen=True)
class ModelSpec:
    function: FunctionSpec | None = None
    keras_file: Path | None = None

    @property
    def path(self) -> Path:
        path = self.keras_file or (self.function.path if self.function else None)
        assert path is not None
        return path


def parse_function_spec(spec: str, flag: str) -> FunctionSpec:
    path_str, sep, function = spec.rpartition(":")
    if not sep or not path_str.endswith(".py") or not function.isidentifier():
        raise UserError(
            f"{flag} '{spec}' is not of the form FILE.py:FUNCTION.",
            f"pass e.g. {flag} models/my_model.py:build_model.",
        )
    path = Path(path_str)
    if not path.is_file():
        raise UserError(f"{flag} file '{path}' does not exist.", "check the path.")
    return FunctionSpec(path, function)


def parse_model_spec(spec: str) -> ModelSpec:
    if spec.endswith(".keras"):
        path = Path(spec)
        if not path.is_file():
            raise UserError(f"--model file '{path}' does not exist.", "check the path.")
        check_keras_archive(path)
        return ModelSpec(keras_file=path)
    if ":" not in spec:
        raise UserError(
            f"--model '{spec}' is neither FILE.py:FUNCTION nor a .keras file.",
            "pass --model my_model.py:build_model or --model saved.keras.",
        )
    return ModelSpec(function=parse_function_spec(spec, "--model"))


def check_keras_archive(path: Path) -> None:
    """UserError unless ``path`` can be read and is a zip archive, as every Keras 3 ``.keras``
    file is.

    Checked here, without TensorFlow, because Keras itself answers a corrupt or truncated file
    with "File not found", which sends the user looking for a file that is right there.
    """
    try:
        with path.open("rb") as handle:
            handle.read(4)
    except OSError as exc:
        raise UserError(
            f"--model '{path}' cannot be read: {exc.strerror}.",
            "check the file's permissions.",
        ) from None
    if not zipfile.is_zipfile(path):
        raise UserError(
            f"--model '{path}' is not a readable Keras file: it is not a zip archive, as every "
            "Keras 3 .keras file is (it may be truncated, or saved in another format).",
            "save the model again with model.save('name.keras') in Keras 3.",
        )
