"""Parsing and checking ``--model`` / ``--data`` specifications before TensorFlow starts.

Checking here means a missing file or a malformed spec fails in a fraction of a second with
one line, instead of after a TensorFlow import.
"""

from __future__ import annotations

import ast
import zipfile
from dataclasses import dataclass
from pathlib import Path

from gpuscout.core.errors import UserError


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


def parse_function_spec(spec: str, flag: str, check: bool = True) -> FunctionSpec:
    """``FILE.py:FUNCTION`` checked: the form, the file, and (``check``) that the file defines
    the function, read without running it (:func:`check_defines`)."""
    path_str, sep, function = spec.rpartition(":")
    if not sep or not path_str.endswith(".py") or not function.isidentifier():
        raise UserError(
            f"{flag} '{spec}' is not of the form FILE.py:FUNCTION.",
            f"pass e.g. {flag} models/my_model.py:build_model.",
        )
    path = Path(path_str)
    if not path.is_file():
        raise UserError(f"{flag} file '{path}' does not exist.", "check the path.")
    found = FunctionSpec(path, function)
    if check:
        check_defines(found, flag)
    return found


# Top-level statements after which a name may exist that no ``def`` shows: a star import, or
# a module ``__getattr__``; where the file has one, the name is left to the import to find.
_DYNAMIC = ("__getattr__",)


def check_defines(spec: FunctionSpec, flag: str) -> None:
    """A misspelt function, or a file that is not Python, refused in one line before the
    backend loads (seconds of TensorFlow import otherwise): the file is parsed, not run, and
    its top-level names read. A name bound another way (an assignment, an import, a class)
    counts; a file whose names cannot be read statically (a star import, a module
    ``__getattr__``) is left to the import."""
    try:
        tree = ast.parse(spec.path.read_bytes(), filename=str(spec.path))
    except SyntaxError as exc:
        raise UserError(
            f"{flag} file '{spec.path}' has a syntax error at line {exc.lineno}: {exc.msg}.",
            "fix the file.",
        ) from None
    except (OSError, ValueError):  # unreadable, or null bytes: the import says why
        return
    bound: set[str] = set()
    functions: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            functions.append(node.name)
            bound.add(node.name)
        elif isinstance(node, ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.asname or a.name.split(".")[0] for a in node.names]
            if "*" in names:
                return
            bound.update(names)
        else:  # assignments, and anything under if/try/with at the top level
            bound.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name)
                         and isinstance(n.ctx, ast.Store))  # fmt: skip
            bound.update(n.name for n in ast.walk(node)
                         if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))  # fmt: skip
    if spec.function in bound or any(name in bound for name in _DYNAMIC):
        return
    raise UserError(
        f"{flag}: '{spec.path}' has no function '{spec.function}' (it has: "
        f"{', '.join(functions) or 'none'}).",
        "name a function that exists.",
    )


def parse_model_spec(spec: str, check: bool = True) -> ModelSpec:
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
    return ModelSpec(function=parse_function_spec(spec, "--model", check))


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
    check_keras_sizes(path)


# The JSON members Keras reads whole into memory (config.json: the layers, metadata.json):
# kilobytes for most models, a few megabytes for the largest functional graphs.
KERAS_JSON_MEMBERS = ("config.json", "metadata.json")
MAX_KERAS_JSON_BYTES = 64 * 2**20


def check_keras_sizes(path: Path) -> None:
    """The sizes the archive's directory declares, read before Keras unpacks anything: a 3 MB
    file whose config.json unpacks to 3 GB of spaces took 4.9 GB and 29 s before a MemoryError
    (issue 43), and an archive whose weights unpack to more than the memory available cannot
    be loaded either. Refused here in one line, in milliseconds."""
    import psutil

    from gpuscout.core.units import fmt_gb

    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (OSError, zipfile.BadZipFile, ValueError) as exc:
        raise UserError(
            f"--model '{path}' is not a readable Keras file: its zip directory cannot be read "
            f"({exc}).",
            "save the model again with model.save('name.keras') in Keras 3.",
        ) from None
    for member in members:
        if member.filename in KERAS_JSON_MEMBERS and member.file_size > MAX_KERAS_JSON_BYTES:
            raise UserError(
                f"--model '{path}': its {member.filename} unpacks to "
                f"{fmt_gb(member.file_size / 1e9)} (a Keras model's is kilobytes to a few MB, at "
                f"most {MAX_KERAS_JSON_BYTES // 2**20} MiB here), which Keras would read whole "
                "into memory.",
                "save the model again with model.save('name.keras'); the file is damaged or "
                "not a model Keras wrote.",
            )
    unpacked = sum(m.file_size for m in members)
    available = psutil.virtual_memory().available
    if unpacked > available:
        raise UserError(
            f"--model '{path}' unpacks to {fmt_gb(unpacked / 1e9)}, more than the "
            f"{fmt_gb(available / 1e9)} of memory available here to load it.",
            "free memory, or load it on a machine with more.",
        )


def is_torch_module_file(spec: ModelSpec) -> bool:
    """Whether ``--model`` names a builder in a file that imports ``torch`` and neither Keras
    nor TensorFlow: a plain PyTorch model, measured by the PyTorch backend without Keras.
    Read from the file's imports without running it (a fraction of a millisecond), so the
    command picks the backend before any framework starts."""
    if spec.function is None:
        return False
    try:
        tree = ast.parse(spec.function.path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return False
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            roots.add(node.module.split(".")[0])
    return "torch" in roots and not roots & {"keras", "tensorflow", "tf_keras"}


def backend_for_model(backend: str, typed: bool, spec: ModelSpec | None) -> str:
    """The backend a command runs ``spec`` on: a plain PyTorch model
    (:func:`is_torch_module_file`) runs on PyTorch whatever the default; ``--backend`` typed
    as another framework is refused in one line, as that framework cannot run it."""
    if spec is None or not is_torch_module_file(spec):
        return backend
    if typed and backend != "torch":
        assert spec.function is not None
        raise UserError(
            f"--model {spec.function.path}:{spec.function.function} is a plain PyTorch model "
            f"(its file imports torch, not Keras), which --backend {backend} cannot run.",
            "drop --backend, or pass --backend torch.",
        )
    return "torch"
