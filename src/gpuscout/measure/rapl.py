"""CPU package energy from the RAPL counters Linux exposes in sysfs.

Why sysfs and not a library: the kernel's powercap driver (``intel-rapl``, which also serves
AMD's RAPL on recent kernels) already turns the CPU's model-specific registers into one
cumulative microjoule counter per domain, readable as a file; older kernels' ``amd_energy``
hwmon driver does the same per socket. Only *package* domains (``intel-rapl:N`` named
``package-*``; ``Esocket*`` for amd_energy) are read: the core, uncore and DRAM sub-domains
(``intel-rapl:N:M``) are parts of a package or beside it, and ``psys`` covers the whole
platform, so adding any of them would count energy twice or count something else.

A counter wraps at ``max_energy_range_uj`` (minutes to hours at full load): each reading's
increase is taken from the last, adding the range back when the value went down, so reading
it more often than it can wrap (the monitor's 10 Hz) keeps the sum right. Since Linux 5.10
``energy_uj`` is readable by root only (CVE-2020-8694, "Platypus": power side channels), and
VMs and containers usually hide it: then :func:`open_rapl` says why in one line, and the run
says "not reported" rather than failing. The roots are parameters, so the tests read a
directory tree built in ``tmp_path``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

POWERCAP = Path("/sys/class/powercap")
HWMON = Path("/sys/class/hwmon")
RAPL_PACKAGE = "rapl package"
AMD_ENERGY = "amd_energy socket"


class RaplError(Exception):
    """A counter that could not be read, or went backwards without a range to wrap at."""


@dataclass
class Counter:
    """One domain's microjoule counter and the joules it has counted since the first read."""

    name: str
    path: Path
    range_uj: int | None  # where it wraps (max_energy_range_uj); None: a 64-bit sum, no wrap
    last_uj: int | None = None
    total_j: float = 0.0

    def read(self) -> float:
        raw = _read_int(self.path)
        if self.last_uj is not None:
            delta = raw - self.last_uj
            if delta < 0:
                if self.range_uj is None:
                    raise RaplError(f"{self.path} went backwards ({self.last_uj} to {raw})")
                delta += self.range_uj  # wrapped once since the last reading
            self.total_j += delta / 1e6
        self.last_uj = raw
        return self.total_j


class Rapl:
    """Every CPU package's counter: :meth:`read` gives joules per package since opened."""

    def __init__(self, source: str, counters: list[Counter]) -> None:
        self.source = source  # RAPL_PACKAGE or AMD_ENERGY
        self.counters = counters

    def read(self) -> dict[str, float]:
        """Cumulative joules per package (RaplError if any counter cannot be read)."""
        return {c.name: c.read() for c in self.counters}


class PackageMeter:
    """The CPU packages' joules for the monitor: :func:`open_rapl`'s reader, or its reason.

    :meth:`read` never raises: a counter that stops answering mid-run must not stop the
    monitor, so after a failure it reads ``{}`` and keeps why in :attr:`reason`.
    """

    def __init__(self, powercap: Path = POWERCAP, hwmon: Path = HWMON) -> None:
        self.reader, self.reason = open_rapl(powercap, hwmon)
        self.source = self.reader.source if self.reader else None

    @property
    def readable(self) -> bool:
        return self.reader is not None

    def read(self) -> dict[str, float]:
        if self.reader is None:
            return {}
        try:
            return self.reader.read()
        except RaplError as exc:
            self.reader, self.reason = None, str(exc)
            return {}


def open_rapl(powercap: Path = POWERCAP, hwmon: Path = HWMON) -> tuple[Rapl | None, str | None]:
    """A reader with every package read once (the baseline), and None; or None and why not,
    as one clause ("no /sys/class/powercap (...)", "...: permission denied (...)")."""
    counters, why = _powercap_packages(powercap)
    source = RAPL_PACKAGE
    if not counters:
        sockets = _amd_energy_sockets(hwmon)
        if not sockets:
            return None, why
        counters, source = sockets, AMD_ENERGY
    reader = Rapl(source, counters)
    try:
        reader.read()
    except RaplError as exc:
        return None, str(exc)
    return reader, None


def _powercap_packages(root: Path) -> tuple[list[Counter], str]:
    """The package domains under ``root`` (top-level ``intel-rapl:N`` only), or why none."""
    if not root.is_dir():
        return [], (
            f"no {root}: no powercap driver here (a VM or container that hides it, a kernel "
            "without it, or a CPU without RAPL)"
        )
    found: list[Counter] = []
    for domain in sorted(root.glob("intel-rapl:*"), key=_domain_order):
        if domain.name.count(":") != 1:  # intel-rapl:0:1 is a sub-domain of package 0
            continue
        try:
            name = (domain / "name").read_text().strip()
        except OSError:
            continue  # a domain without a readable name is not one we can tell is a package
        if not name.startswith("package"):  # psys (the platform) or dram: not a package
            continue
        if any(c.name == name for c in found):
            name = f"{name} ({domain.name})"
        try:
            wrap: int | None = _read_int(domain / "max_energy_range_uj")
        except RaplError:
            wrap = None
        found.append(Counter(name, domain / "energy_uj", wrap))
    return found, f"no RAPL package domain (intel-rapl:N named package-*) under {root}"


def _amd_energy_sockets(root: Path) -> list[Counter]:
    """The per-socket counters of the ``amd_energy`` hwmon driver (kernels before 5.13)."""
    found: list[Counter] = []
    for mon in sorted(root.glob("hwmon*")):
        try:
            if (mon / "name").read_text().strip() != "amd_energy":
                continue
        except OSError:
            continue
        for label in sorted(mon.glob("energy*_label")):
            try:
                text = label.read_text().strip()
            except OSError:
                continue
            if text.startswith("Esocket"):  # Ecore* are parts of a socket
                value = label.with_name(label.name.replace("_label", "_input"))
                found.append(Counter(f"socket {text.removeprefix('Esocket')}", value, None))
    return found


def _domain_order(path: Path) -> tuple[int, ...]:
    """intel-rapl:2 before intel-rapl:10."""
    return tuple(int(p) if p.isdigit() else -1 for p in path.name.split(":")[1:])


def _read_int(path: Path) -> int:
    """A counter file's integer; RaplError naming the file and the fix when unreadable."""
    try:
        text = path.read_text()
    except PermissionError:
        raise RaplError(
            f"{path}: permission denied (readable by root only since Linux 5.10, CVE-2020-8694; "
            f"run as root, or sudo chmod o+r {path})"
        ) from None
    except OSError as exc:
        raise RaplError(f"{path}: {exc.strerror or exc}") from None
    try:
        return int(text.strip())
    except ValueError:
        raise RaplError(f"{path}: not a counter ({text.strip()[:20]!r})") from None
