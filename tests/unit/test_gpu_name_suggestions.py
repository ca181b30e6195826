"""GPU names that do not resolve to one row: ambiguous prefixes list their matches, unknown names are
answered with the GPUs named most like them (data/hardware.yaml rows)."""

from __future__ import annotations

import pytest

from quantadvise import catalog
from quantadvise.errors import AmbiguousNameError, UnknownNameError
from quantadvise.hardware import family_suggestions

# data/hardware.yaml: rows whose display name carries "GeForce"
GEFORCE = {"rtx-3090", "rtx-4090", "rtx-5090"}


@pytest.mark.parametrize(("typed", "matches"), [
    # data/hardware.yaml has two A100 rows, a100-40gb and a100-80gb, and no row or alias named "a100"
    ("a100", ["a100-40gb", "a100-80gb"]),
    ("A100", ["a100-40gb", "a100-80gb"]),
    # aliases a100-sxm4-40gb / a100-sxm4-80gb; the driver names "NVIDIA A100-SXM4-40GB" / "-80GB"
    ("a100-sxm4", ["a100-40gb", "a100-80gb"]),
    ("NVIDIA A100", ["a100-40gb", "a100-80gb"]),
])
def test_a_name_several_gpus_share_is_ambiguous(typed, matches):
    with pytest.raises(AmbiguousNameError) as e:
        catalog.get_gpu(typed)
    assert sorted(e.value.suggestions) == matches
    assert isinstance(e.value, UnknownNameError)  # handled wherever an unresolved name is
    assert str(e.value).startswith(f"GPU '{typed}' is ambiguous: it matches 'a100-40gb', 'a100-80gb'")


@pytest.mark.parametrize("typed", ["h100", "v100", "a10", "mi300", "l4"])
def test_a_name_on_file_is_not_ambiguous(typed):
    # h100 is an alias of h100-sxm, v100 of v100-sxm2-32gb, mi300 of mi300x; a10 and l4 are ids
    assert catalog.get_gpu(typed).id


@pytest.mark.parametrize("typed", ["gtx1080", "GeForce GTX 1080 Ti", "titan5"])
def test_an_unknown_geforce_name_is_answered_with_geforce_gpus(typed):
    # no row's names start with "gtx": the GeForce line (GTX -> RTX) is the next closest naming
    with pytest.raises(UnknownNameError) as e:
        catalog.get_gpu(typed)
    assert e.value.suggestions and set(e.value.suggestions) <= GEFORCE
    assert "hgx-h100" not in str(e.value)


def test_closest_model_number_first_within_the_line():
    with pytest.raises(UnknownNameError) as e:
        catalog.get_gpu("gtx1080")
    # |3090 - 1080| < |4090 - 1080| < |5090 - 1080|
    assert e.value.suggestions == ["rtx-3090", "rtx-4090", "rtx-5090"]


def test_an_unknown_amd_name_is_answered_with_amd_gpus():
    # "rx7900": a Radeon name; data/hardware.yaml's AMD rows (vendor: amd) are the Instinct MI300X/325X/355X
    with pytest.raises(UnknownNameError) as e:
        catalog.get_gpu("rx7900")
    assert set(e.value.suggestions) == {"mi300x", "mi325x", "mi355x"}


def test_one_suggestion_function_for_every_family():
    rows = [("x100", ("x100",), "nvidia"), ("x200", ("x200",), "nvidia"), ("rtx-9090", ("NVIDIA GeForce RTX 9090",),
                                                                             "nvidia"), ("mi9", ("AMD Instinct MI9",), "amd")]
    assert family_suggestions("x150", rows) == ["x100", "x200"]  # same letters, closest first (ties by id)
    assert family_suggestions("gtx8080", rows) == ["rtx-9090"]  # same line (GeForce)
    assert family_suggestions("radeon rx10", rows) == ["mi9"]  # same vendor
    assert family_suggestions("zz", rows) == []  # no model number: nothing to go by


def test_cli_says_ambiguous_with_exit_2(cli):
    r = cli("size", "llama-3-8b", "--gpu", "a100")
    assert r.code == 2
    assert r.stderr.strip().splitlines()[-1].startswith("Error: GPU 'a100' is ambiguous: it matches 'a100-40gb', "
                                                         "'a100-80gb'")
    r = cli("size", "llama-3-8b", "--gpu", "gtx1080")
    assert r.code == 2 and "Error: unknown GPU 'gtx1080'; did you mean 'rtx-3090'" in r.stderr
