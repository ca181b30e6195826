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


def test_edit_distance_by_hand():
    from quantadvise.errors import edit_distance

    assert edit_distance("kitten", "sitting") == 3  # k->s, e->i, +g
    assert edit_distance("llama-3-8x", "llama-3-8b") == 1
    assert edit_distance("", "abc") == edit_distance("abc", "") == 3
    assert edit_distance("same", "same") == 0


def test_suggestions_rank_by_edit_distance_over_ids_and_aliases():
    from quantadvise.errors import closest

    # data/models.yaml: meta-llama/Meta-Llama-3-8B has the alias meta-llama/Llama-3-8B; the other row is
    # meta-llama/Llama-3.1-8B. 'meta-llama/Llama-3-8x' is one substitution from the alias and three edits
    # from Llama-3.1-8B (insert '.1', substitute x->B), so the alias comes first
    names = ["meta-llama/Meta-Llama-3-8B", "meta-llama/Llama-3.1-8B", "meta-llama/Llama-3-8B"]
    assert closest("meta-llama/Llama-3-8x", names, n=2, cutoff=0.9) == ["meta-llama/Llama-3-8B",
                                                                       "meta-llama/Llama-3.1-8B"]
    # an extension of what was typed still comes before a spelling neighbour, shortest first
    assert closest("h10", ["h20", "h100-nvl", "h100"], n=3) == ["h100", "h100-nvl", "h20"]
    # nothing near: nothing invented
    assert closest("someorg/any-model", names, cutoff=0.9) == []


def test_cli_suggests_the_alias_one_character_away(cli, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    r = cli("size", "meta-llama/Llama-3-8x")
    assert r.code == 2 and r.stderr.count("\n") == 1
    assert "did you mean 'meta-llama/Llama-3-8B'" in r.stderr  # the alias, named first


def test_a_scheme_alias_is_offered_as_its_id_once(cli):
    # data/schemes.yaml: NVFP4A16 is an alias of nvfp4-a16 (llm-compressor's preset name); offered by
    # its id, one scheme is one suggestion
    r = cli("size", "--scheme", "nvfp")
    assert r.code == 2
    offered = r.stderr.split("did you mean ")[1].split("?")[0]
    names = [n.strip(" '") for n in offered.split(",")]
    assert "nvfp4-a16" in names and "NVFP4A16" not in names and len(names) == len(set(names))
