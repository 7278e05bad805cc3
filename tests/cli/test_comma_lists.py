"""A list option takes 'a,b', '--x a --x b' or both, and means the same by each.

``predict --gpus a,b`` always took a comma list; ``memory --gpu a,b`` refused one ("unknown GPU
'a,b'"), and ``specs --feature`` and ``specs A B`` took only repeats. Each is run here as a
user types it (in-process: none of them trains), and the two spellings compared.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpuscout.cli.parser import comma_items
from gpuscout.core.errors import UserError
from tests.conftest import assert_user_errors, run_in_process

LLM = ("--params", "7e9", "--layers", "32", "--hidden", "4096", "--heads", "32")


def _json(*args: str) -> Any:
    r = run_in_process(*args, "--json")
    assert r.code == 0, r.err
    return r.json()


def _memory_gpus(*gpu_args: str) -> list[str]:
    return [row["gpu"] for row in _json("memory", *LLM, *gpu_args)["gpus"]]


def test_memory_gpu_takes_a_comma_list_as_predict_gpus_does() -> None:
    listed = _memory_gpus("--gpu", "rtx-4090,h100-sxm")
    assert listed == ["rtx-4090", "h100-sxm"]
    assert _memory_gpus("--gpu", "rtx-4090", "--gpu", "h100-sxm") == listed  # still repeatable
    # both at once, an alias of a GPU already named counted once, in the order named
    both = _memory_gpus("--gpu", "4090, h100-sxm", "--gpu", "rtx-4090", "--gpu", "a100-80gb-sxm")
    assert both == ["rtx-4090", "h100-sxm", "a100-80gb-sxm"]
    every = _memory_gpus()
    assert len(every) > 20 and _memory_gpus("--gpu", "all") == every


def test_specs_features_and_names_take_comma_lists() -> None:
    def ids(*args: str) -> list[str]:
        return [g["id"] for g in _json("specs", *args)["gpus"]]

    together = ids("--feature", "fp8,nvlink")
    assert together and together == ids("--feature", "fp8", "--feature", "nvlink")
    assert len(together) < len(ids("--feature", "fp8"))  # both filters applied, not one
    assert ids("4090,h100-sxm") == ids("4090", "h100-sxm") == ["rtx-4090", "h100-sxm"]


def test_prices_names_take_a_comma_list() -> None:
    def gpus(*args: str) -> set[str]:
        return {p["gpu_id"] for p in _json("prices", *args)}

    assert gpus("4090,h100-sxm") == gpus("4090", "h100-sxm") == {"rtx-4090", "h100-sxm"}


def test_a_list_that_names_nothing_or_a_bad_name_is_refused_in_one_line() -> None:
    assert_user_errors(
        [
            (("memory", *LLM, "--gpu", " , "), "' , ' names no GPU"),
            (("memory", *LLM, "--gpu", "rtx-4090,nosuch"), "unknown GPU 'nosuch'"),
            (("specs", "--feature", ","), "--feature ',' names nothing"),
            (("specs", "--feature", "fp8,nvlnk"), "unknown feature 'nvlnk'"),
            (("specs", ","), "specs ',' names nothing"),
        ]
    )


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        (["a,b"], ["a", "b"]),
        (["a", "b"], ["a", "b"]),
        ([" a , b ", "c", "a"], ["a", "b", "c"]),  # spaces trimmed, repeats dropped, order kept
        (["a,,b,"], ["a", "b"]),  # an empty item between commas is a typo, not a name
        ([], []),
    ],
)
def test_comma_items_reads_both_spellings(texts: list[str], expected: list[str]) -> None:
    assert comma_items(texts, "--gpu", "a,b") == expected


def test_comma_items_refuses_an_entry_that_names_nothing() -> None:
    with pytest.raises(UserError, match=r"--gpu ' , ' names nothing\. To fix: give e\.g\. --gpu"):
        comma_items(["a", " , "], "--gpu", "rtx-4090,h100-sxm")
