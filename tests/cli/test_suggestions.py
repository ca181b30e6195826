"""Unknown-name suggestions: what the user typed extended first, canonical ids over aliases, an empty
name said as such."""

from __future__ import annotations

from quantadvise.errors import UnknownNameError


def test_a_typed_prefix_offers_the_name_it_starts():
    # 'h10' starts 'h100' (data/hardware.yaml: the h100-sxm row's alias); h20 is only a family neighbour
    err = UnknownNameError("GPU", "h10", ["h20", "h100-sxm", "h100", "h100-nvl"], suggestions=["h20", "h100-nvl"])
    assert err.suggestions[0] == "h100"
    # with the alias -> id map the id is offered
    err = UnknownNameError("GPU", "h10", ["h20", "h100-sxm", "h100"], suggestions=["h20"],
                           ids={"h100": "h100-sxm", "h100-sxm": "h100-sxm", "h20": "h20"})
    assert err.suggestions == ["h100-sxm", "h20"]


def test_ids_win_over_an_alias_that_differs_only_in_case():
    # data/schemes.yaml: the w4a16 row has the alias W4A16; the id comes first in the candidates
    err = UnknownNameError("scheme", "w4a1", ["w4a16", "W4A16", "w4a16-sym"])
    assert "W4A16" not in err.suggestions and err.suggestions[0] == "w4a16"


def test_an_empty_name_says_so():
    err = UnknownNameError("GPU", "  ", ["l4", "t4"])
    assert err.suggestions == [] and str(err) == "the GPU name is empty"


def test_cli_gpu_suggestions(cli):
    r = cli("size", "llama-3-8b", "--gpu", "h10")
    assert r.code == 2 and "did you mean 'h100'" in r.stderr
    r = cli("size", "llama-3-8b", "--gpu", "")
    assert r.code == 2 and "Error: the GPU name is empty" in r.stderr and "did you mean" not in r.stderr
    r = cli("size", "llama-3-8b", "--scheme", "w4a1")
    assert r.code == 2 and "did you mean 'w4a16'" in r.stderr and "'W4A16'" not in r.stderr
