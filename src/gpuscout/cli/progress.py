"""The live display while a benchmark runs: a phase line, then warm-up and measurement bars."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from gpuscout.measure.protocol import Progress as Snapshot


class BenchProgress:
    """Receives the protocol's snapshots and draws them on stderr (nothing when disabled)."""

    def __init__(self, console: Console, enabled: bool) -> None:
        self.enabled = enabled
        self.bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self.task = self.bar.add_task("starting", total=None, detail="")

    def __enter__(self) -> BenchProgress:
        if self.enabled:
            self.bar.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.enabled:
            self.bar.stop()

    def phase(self, text: str) -> None:
        self.bar.update(self.task, description=text, total=None, detail="")

    def update(self, s: Snapshot) -> None:
        if s.phase == "warmup":
            self.bar.update(
                self.task, description="warming up", total=None, detail=f"{s.steps} steps"
            )
            return
        rule = s.rule
        if rule.fixed_steps is not None:
            total, done = float(rule.fixed_steps), float(s.measured)
        elif rule.budget_s is not None:
            total, done = rule.budget_s, min(s.elapsed_s, rule.budget_s)
        else:
            total, done = 1.0, 0.0
        ci = (
            f"CI ±{s.rel_halfwidth:.1%} (target ±{rule.target_rel_ci:.0%})"
            if s.rel_halfwidth and s.rel_halfwidth != float("inf")
            else ""
        )
        self.bar.update(
            self.task,
            description="measuring",
            total=total,
            completed=done,
            detail=f"{s.measured} steps {ci}",
        )
