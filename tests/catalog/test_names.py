"""Forgiving GPU names, ambiguity that lists the candidates, and did-you-mean."""

from __future__ import annotations

import re

import pytest

from gpuscout.catalog import Catalog, load_catalog
from gpuscout.core.errors import UserError


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


@pytest.mark.parametrize(
    ("name", "gpu"),
    [
        ("4090", "rtx-4090"),
        ("rtx4090", "rtx-4090"),
        ("RTX 4090", "rtx-4090"),
        ("3090", "rtx-3090"),
        ("3090 Ti", "rtx-3090-ti"),
        ("A100 80G SXM", "a100-80gb-sxm"),
        ("a100 80 GB pcie", "a100-80gb-pcie"),
        ("h100-sxm", "h100-sxm"),
        ("H100 PCIe", "h100-pcie"),
        ("l4", "l4"),
        ("L40S", "l40s"),
        ("a10", "a10"),
        ("A10G", "a10g"),
        ("rtx a6000", "rtx-a6000"),
        ("RTX 6000 Ada", "rtx-6000-ada"),
        ("v100-sxm2-32gb", "v100-sxm2-32gb"),
    ],
)
def test_forgiving_names(cat: Catalog, name: str, gpu: str) -> None:
    found = cat.resolve(name)
    assert found.gpu.id == gpu
    assert found.assumption is None


@pytest.mark.parametrize(
    ("name", "gpu"),
    [("a100-40gb", "a100-40gb-sxm"), ("A100 80GB", "a100-80gb-sxm"), ("h100", "h100-sxm")],
)
def test_naming_conventions_are_reported(cat: Catalog, name: str, gpu: str) -> None:
    found = cat.resolve(name)
    assert found.gpu.id == gpu
    assert found.assumption is not None and "pcie" in found.assumption


def test_ambiguous_name_lists_the_candidates(cat: Catalog) -> None:
    with pytest.raises(UserError) as err:
        cat.resolve("a100")
    text = str(err.value)
    assert "ambiguous" in text
    for gpu in ("a100-40gb-sxm", "a100-40gb-pcie", "a100-80gb-sxm", "a100-80gb-pcie"):
        assert gpu in text


def test_unknown_name_suggests(cat: Catalog) -> None:
    with pytest.raises(
        UserError, match=re.escape("unknown GPU 'rtx 4900'. Did you mean 'rtx-4090'")
    ):
        cat.resolve("rtx 4900")
    with pytest.raises(UserError, match="not a GPU name"):
        cat.resolve("--")


@pytest.mark.parametrize(
    ("device_name", "gpu"),
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H200", "h200"),
        ("NVIDIA A100-SXM4-40GB", "a100-40gb-sxm"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb-sxm"),
        ("NVIDIA A100-PCIE-40GB", "a100-40gb-pcie"),
        ("NVIDIA A100 80GB PCIe", "a100-80gb-pcie"),
        ("NVIDIA A10G", "a10g"),
        ("NVIDIA A10", "a10"),
        ("NVIDIA L4", "l4"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("NVIDIA GeForce RTX 3090 Ti", "rtx-3090-ti"),
        ("NVIDIA GeForce RTX 3090", "rtx-3090"),
        ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"),
        ("Tesla V100-SXM2-16GB", "v100-sxm2-16gb"),
        ("Tesla V100-PCIE-32GB", "v100-pcie-32gb"),
        ("Tesla T4", "t4"),
    ],
)
def test_driver_device_names(cat: Catalog, device_name: str, gpu: str) -> None:
    found = cat.find_device(device_name)
    assert found is not None and found.id == gpu


def test_unknown_device_has_no_peak(cat: Catalog) -> None:
    assert cat.find_device("NVIDIA GeForce GTX 1080") is None


@pytest.mark.parametrize("word", ["a", "to", "only", "grace cpu", "low", "profile"])
def test_a_form_factors_prose_names_no_gpu(cat: Catalog, word: str) -> None:
    """GH200's form factor is "Superchip (NVLink-C2C to a Grace CPU)": its words made 'a' the
    GH200 (an audit of 'a=1.4x b' judged a GH200). Only a form factor's interface names it."""
    with pytest.raises(UserError):
        cat.resolve(word)


@pytest.mark.parametrize(("name", "gpu"), [("h100 pcie", "h100-pcie"), ("v100 sxm2 32gb",
                          "v100-sxm2-32gb"), ("gh200 superchip", "gh200")])  # fmt: skip
def test_a_form_factors_interface_still_names_it(cat: Catalog, name: str, gpu: str) -> None:
    assert cat.resolve(name).gpu.id == gpu


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("5090ti", "rtx-5090"), ("rtx 5080 supr", "rtx-5080"), ("3090tie", "rtx-3090-ti"),
     ("rtx4900", "rtx-4090")],
)  # fmt: skip
def test_a_model_number_decides_the_suggestion_before_spelling(typed: str, meant: str) -> None:
    """'5090ti' is one character from '3090ti' and two from '5090': the number the user typed
    names the card they mean (issue 42); a number no card has falls back to spelling."""
    with pytest.raises(UserError) as err:
        load_catalog().resolve(typed)
    assert f"Did you mean '{meant}'?" in err.value.problem
