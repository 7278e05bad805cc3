"""Export, import and compare on real SQLite files; import reads files others made, so every
kind of bad file must be refused whole, naming the field, with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuscout.core.comparison import compare
from gpuscout.core.errors import UserError
from gpuscout.core.records import Distribution, Interval, RunResult
from gpuscout.store import Store
from gpuscout.store.exchange import export_csv, export_json, read_runs
from tests.conftest import assert_user_errors, run_cli
from tests.store.test_store import _result


def _full(i: int = 0) -> RunResult:
    """A run with everything an export must carry: steps, monitor timeline, distribution."""
    return _result(i).model_copy(
        update={
            "monitor_timeline": {"t": [0.0, 0.1], "cpu": [0.5, None]},
            "distribution": Distribution(
                strategy="MirroredStrategy",
                replicas=2,
                devices=["CPU:0", "CPU:1"],
                logical_devices=True,
                per_replica_batch=16,
                global_batch=32,
            ),
            "workload": "<script>alert(1)</script>",
            "note": 'first "quoted" note, with a comma',
        }
    )


def _stored(db: Path, runs: list[RunResult]) -> list[RunResult]:
    with Store(db) as store:
        return store.save_many(runs)


def test_export_then_import_round_trips_every_field(tmp_path: Path) -> None:
    runs = _stored(tmp_path / "a.sqlite", [_full(0), _result(1)])
    path = tmp_path / "runs.json"
    path.write_text(export_json(runs))
    back = read_runs(path)
    again = _stored(tmp_path / "b.sqlite", back)
    for original, copy in zip(runs, again, strict=True):
        assert copy.model_dump() == original.model_dump()  # ids restart in the new database
        assert copy.step_times_s == original.step_times_s
        assert copy.monitor_timeline == original.monitor_timeline
    assert again[0].workload == "<script>alert(1)</script>"  # kept as text, verbatim
    rows = export_csv(runs).splitlines()
    assert rows[0].startswith("id,created_at,status,workload,device")
    assert rows[1].split(",")[10] == "2"  # replicas
    assert rows[1].endswith(',"first ""quoted"" note, with a comma"')


def _write(tmp_path: Path, body: object, raw: str | None = None) -> Path:
    path = tmp_path / f"bad{len(list(tmp_path.glob('bad*.json')))}.json"
    path.write_text(raw if raw is not None else json.dumps(body))
    return path


def test_bad_files_are_refused_whole_naming_the_field(tmp_path: Path) -> None:
    good = json.loads(export_json(_stored(tmp_path / "a.sqlite", [_result(0), _result(1)])))
    db = tmp_path / "target.sqlite"
    _stored(db, [_result(5)])

    def bad_run(**change: object) -> dict[str, object]:
        return {**good, "runs": [good["runs"][0], {**good["runs"][1], **change}]}

    cases: list[tuple[Path, str]] = [
        (_write(tmp_path, None, raw="{not json"), "not valid JSON"),
        (_write(tmp_path, None, raw=json.dumps(good).replace("1000.0", "NaN")), "NaN"),
        (_write(tmp_path, None, raw=json.dumps(good).replace("1000.0", "1e999")), "finite"),
        (_write(tmp_path, None, raw="[" * 100_000 + "]" * 100_000), "not valid JSON"),
        (_write(tmp_path, {**good, "format": "other"}), "format 'other'"),
        (_write(tmp_path, {**good, "schema_version": 99}), "newer than this gpuscout"),
        (_write(tmp_path, {**good, "extra": 1}), "field 'extra'"),
        (_write(tmp_path, bad_run(evil=1)), "run 2 (index 1, id 2): field 'evil'"),
        (_write(tmp_path, bad_run(batch_size="many")), "field 'batch_size'"),
        (_write(tmp_path, bad_run(status="great")), "field 'status'"),
        (_write(tmp_path, bad_run(step_times_s=["x"])), "field 'step_times_s.0'"),
        (
            _write(tmp_path, bad_run(samples_per_second={"median": 1.0})),
            "field 'samples_per_second.ci_low'",
        ),
    ]
    for path, says in cases:
        with pytest.raises(UserError, match=says.replace("(", r"\(").replace(")", r"\)")):
            read_runs(path)
        # and through the command: one line, exit 2, the database untouched
        r = run_cli("runs", "import", str(path), "--db", str(db), block_tf=True)
        assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
    with Store(db) as store:
        assert len(store.list()) == 1


def test_export_import_commands_round_trip(tmp_path: Path) -> None:
    a, b, out = tmp_path / "a.sqlite", tmp_path / "other.sqlite", tmp_path / "runs.json"
    _stored(a, [_full(0), _result(1)])
    r = run_cli("runs", "export", "-o", str(out), "--db", str(a), block_tf=True)
    assert r.code == 0, r.err
    r = run_cli("runs", "import", str(out), "--db", str(b), block_tf=True)
    assert r.code == 0 and "imported 2 run(s)" in r.out, r.err
    r = run_cli("runs", "export", "--db", str(b), "--format", "csv", block_tf=True)
    assert r.code == 0 and len(r.out.splitlines()) == 3
    assert_user_errors(
        [
            (("runs", "export", "--ids", "9", "--db", str(a)), "no run with id 9"),
            (("runs", "import", str(tmp_path / "missing.json"), "--db", str(b)), "cannot read"),
        ]
    )


def test_compare_ranks_only_comparable_runs(tmp_path: Path) -> None:
    base = _result(0).model_copy(update={"env": {"tensorflow": "2.21.0", "device_name": "A"}})
    faster = base.model_copy(
        update={
            "samples_per_second": Interval(median=2000.0, ci_low=1980.0, ci_high=2020.0),
            "env": {**base.env, "device_name": "B"},
        }
    )
    c = compare(base, faster)
    assert c.comparable and c.speedup is not None
    assert c.speedup.median == pytest.approx(2.0)
    assert c.speedup.ci_low is not None and c.speedup.ci_low < 2.0 < (c.speedup.ci_high or 0)
    assert [d.what for d in c.differences] == ["device"]
    for change, what in [
        ({"precision": "mixed_float16"}, "precision"),
        ({"batch_size": 64}, "batch per device"),
        ({"env": {**base.env, "tensorflow": "2.20.0"}}, "tensorflow"),
        ({"workload": "cnn-small"}, "workload"),
    ]:
        other = compare(base, faster.model_copy(update=change))
        assert not other.comparable and other.speedup is None
        assert what in [d.what for d in other.differences if d.blocks]
    db = tmp_path / "c.sqlite"
    _stored(db, [base, faster.model_copy(update={"precision": "mixed_float16"})])
    r = run_cli("runs", "compare", "1", "2", "--db", str(db), block_tf=True)
    assert r.code == 0 and "not comparable: they differ in precision" in r.out, r.err


def test_names_and_messages_print_as_text_never_as_markup(tmp_path: Path) -> None:
    """A worker's error names "/job:worker/..." in brackets, which rich would take for a
    closing tag and fail on; a model path may hold anything."""
    failed = _full(0).model_copy(
        update={
            "status": "error",
            "message": "aborted at [/job:worker/replica:0/task:1] [bold]x",
            "device": "[red]GPU:0",
        }
    )
    db = tmp_path / "m.sqlite"
    _stored(db, [_full(0), failed])
    for args in (("runs", "show", "2"), ("runs", "list")):
        r = run_cli(*args, "--db", str(db), block_tf=True)
        assert r.code == 0, r.err
        assert "<script>alert(1)</script>" in r.out
    shown = run_cli("runs", "show", "2", "--db", str(db), block_tf=True).out
    assert "[/job:worker/replica:0/task:1] [bold]x" in shown and "[red]GPU:0" in shown


def test_a_run_without_a_batch_size_round_trips(tmp_path: Path) -> None:
    """A ScoutCallback run told no batch size stores steps/s and batch 0: a true record, which
    an import must take back (the impossible-value check asks for a batch only with a rate
    per sample)."""
    from gpuscout.measure.fit_run import compose_fit_run

    steps_only = compose_fit_run(
        [0.01] * 40, model_name="mine", device="CPU:0", device_name="a CPU", policy="float32",
        xla=False, batch_size=None, env={"hostname": "box"},
    )  # fmt: skip
    path = tmp_path / "fit.json"
    path.write_text(export_json([steps_only]))
    [back] = read_runs(path)
    assert back.batch_size == 0 and back.samples_per_second is None
    rated = json.loads(export_json([_result()]))
    rated["runs"][0]["batch_size"] = 0
    path.write_text(json.dumps(rated))
    with pytest.raises(UserError, match="batch_size"):
        read_runs(path)
