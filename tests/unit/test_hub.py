"""Model sources: the Hub path through huggingface_hub, with its errors, without any network."""

from __future__ import annotations

import json

import pytest

from quantadvise import catalog, hub
from quantadvise.errors import SourceUnavailableError, UnknownNameError


@pytest.fixture
def online(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)


def test_hub_download_is_config_json_only(online, monkeypatch, tmp_path):
    cfg = catalog.bundled_config(catalog.find_bundled_model("Qwen/Qwen3-8B"))
    target = tmp_path / "config.json"
    target.write_text(json.dumps(cfg))
    calls = []

    def fake_download(repo_id, filename, **kw):
        calls.append((repo_id, filename))
        return str(target)

    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    src, got = hub.resolve_model("someorg/qwen3-finetune")
    assert src.kind == "hub" and got["hidden_size"] == 4096
    assert calls == [("someorg/qwen3-finetune", "config.json")]


@pytest.mark.parametrize(
    "exc_name, match",
    [("GatedRepoError", "gated"), ("EntryNotFoundError", "no config.json"), ("RepositoryNotFoundError", "unknown model")],
)
def test_hub_errors_are_one_line(online, monkeypatch, exc_name, match):
    import huggingface_hub
    from huggingface_hub import errors as hf_errors

    exc_type = getattr(hf_errors, exc_name)

    def fake_download(repo_id, filename, **kw):
        raise exc_type.__new__(exc_type)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    with pytest.raises((SourceUnavailableError, UnknownNameError), match=match) as info:
        hub.resolve_model("someorg/private-model")
    assert "\n" not in str(info.value)


def test_network_failure_says_what_to_pass(online, monkeypatch):
    import huggingface_hub

    def fake_download(repo_id, filename, **kw):
        raise ConnectionError("no route to host")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    with pytest.raises(SourceUnavailableError, match="cannot reach the Hugging Face Hub") as info:
        hub.resolve_model("someorg/model")
    assert "huggingface-cli download someorg/model config.json" in str(info.value)


def test_offline_never_calls_the_hub(monkeypatch):
    import huggingface_hub

    def boom(*a, **k):
        raise AssertionError("the Hub was called while HF_HUB_OFFLINE=1")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", boom)
    with pytest.raises(SourceUnavailableError, match="HF_HUB_OFFLINE"):
        hub.resolve_model("someorg/model")
