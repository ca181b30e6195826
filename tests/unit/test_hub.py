"""Model sources: the Hub path through huggingface_hub, with its errors, without any network."""

from __future__ import annotations

import json

import pytest

from quantadvise import catalog
from quantadvise.catalog import hub
from quantadvise.errors import SourceUnavailableError, UnknownNameError


@pytest.fixture
def online(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)


@pytest.fixture(autouse=True)
def _hub_not_remembered_down():
    """Each test starts with no memory of an unreachable Hub (hub.py remembers one per process)."""
    hub.forget_unreachable()
    yield
    hub.forget_unreachable()


class _Meta:
    etag = "x"


def _probe_ok(url, **kw):
    return _Meta()


def test_hub_download_is_config_json_only(online, monkeypatch, tmp_path):
    cfg = catalog.bundled_config(catalog.find_bundled_model("Qwen/Qwen3-8B"))
    target = tmp_path / "config.json"
    target.write_text(json.dumps(cfg))
    calls = []

    def fake_download(repo_id, filename, **kw):
        calls.append((repo_id, filename))
        return str(target)

    import huggingface_hub

    probed = []
    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", lambda url, **kw: probed.append(url) or _Meta())
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    src, got = hub.resolve_model("someorg/qwen3-finetune")
    assert src.kind == "hub" and got["hidden_size"] == 4096
    assert calls == [("someorg/qwen3-finetune", "config.json")]
    assert probed and probed[0].endswith("/someorg/qwen3-finetune/resolve/main/config.json")


@pytest.mark.parametrize(
    "exc_name, match",
    [("GatedRepoError", "gated"), ("RemoteEntryNotFoundError", "has no config.json"),
     ("RepositoryNotFoundError", "unknown model")],
)
def test_hub_errors_are_one_line(online, monkeypatch, exc_name, match):
    """What the probe raises when the Hub answers (huggingface_hub 2.x raises these from the HEAD)."""
    import huggingface_hub
    from huggingface_hub import errors as hf_errors

    exc_type = getattr(hf_errors, exc_name)

    def fake_probe(url, **kw):
        raise exc_type.__new__(exc_type)

    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", fake_probe)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", lambda *a, **k: pytest.fail("downloaded after a refusal"))
    with pytest.raises((SourceUnavailableError, UnknownNameError), match=match) as info:
        hub.resolve_model("someorg/private-model")
    assert "\n" not in str(info.value)


def test_a_dead_network_fails_fast_with_the_truth(online, monkeypatch):
    """No network: huggingface_hub 2.x's HEAD raises httpx2.ConnectError (checked against the installed
    version: `get_hf_file_metadata` with no route raises it, no retries). One probe, one true line, the
    `hf` CLI named (huggingface_hub 2.x installs no `huggingface-cli`)."""
    import time

    import httpx2
    import huggingface_hub

    def no_route(url, **kw):
        raise httpx2.ConnectError("[Errno -2] Name or service not known")

    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", no_route)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", lambda *a, **k: pytest.fail("retried the download"))
    t0 = time.perf_counter()
    with pytest.raises(SourceUnavailableError) as info:
        hub.resolve_model("someorg/model")
    assert time.perf_counter() - t0 < 3
    text = str(info.value)
    assert "cannot reach the Hugging Face Hub" in text and "ConnectError" in text
    assert "`hf download someorg/model config.json`" in text and "huggingface-cli" not in text
    assert "no config.json" not in text and "\n" not in text


def test_a_connection_lost_during_the_download_is_not_a_missing_file(online, monkeypatch):
    """hf_hub_download ends a connection failure (after its own retries) with LocalEntryNotFoundError,
    a subclass of EntryNotFoundError: that is "cannot reach", never "has no config.json on the Hub"."""
    import huggingface_hub
    from huggingface_hub import errors as hf_errors

    assert issubclass(hf_errors.LocalEntryNotFoundError, hf_errors.EntryNotFoundError)

    def lost(*a, **k):
        raise hf_errors.LocalEntryNotFoundError("An error happened while trying to locate the file on the Hub")

    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", _probe_ok)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", lost)
    with pytest.raises(SourceUnavailableError, match="cannot reach the Hugging Face Hub") as info:
        hub.resolve_model("someorg/model")
    assert "no config.json" not in str(info.value)


def test_a_hub_that_never_answers_is_abandoned_at_the_deadline(online, monkeypatch):
    """A DNS lookup or a dead proxy can block past the socket timeout: the probe runs under a deadline."""
    import threading
    import time

    import huggingface_hub

    from quantadvise import defaults

    assert defaults.HUB_TIMEOUT_S + 0.3 < 2  # the deadline `size` honours with the shipped default
    release = threading.Event()
    monkeypatch.setattr(defaults, "HUB_TIMEOUT_S", 0.2)
    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", lambda url, **kw: release.wait(30))
    t0 = time.perf_counter()
    try:
        with pytest.raises(SourceUnavailableError, match=r"no answer within 0\.5 s"):
            hub.resolve_model("someorg/model")
    finally:
        release.set()
    assert time.perf_counter() - t0 < 2


def test_size_with_the_hub_unreachable_exits_2_fast(tmp_path):
    """End to end, a fresh process with no HF_HUB_OFFLINE and a Hub endpoint that refuses connections
    (a closed port on this machine: no traffic leaves it). Fast: no retry waits — within 2 s of the same
    process start-up reading a bundled model (timed the same way, after a first run has byte-compiled
    what both import, so a loaded machine or a fresh `pip install --no-compile` does not decide it)."""
    import os
    import subprocess
    import sys
    import time

    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    env.update(HF_ENDPOINT="http://127.0.0.1:9", HF_HOME=str(tmp_path / "hf"), NO_PROXY="*", no_proxy="*")
    for k in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        env.pop(k, None)

    def run(model: str) -> tuple[subprocess.CompletedProcess, float]:
        t0 = time.perf_counter()
        res = subprocess.run([sys.executable, "-m", "quantadvise", "size", model], env=env, capture_output=True,
                             text=True, timeout=60)
        return res, time.perf_counter() - t0

    run("someorg/any-model")  # byte-compiles what the Hub path imports
    _, startup = run("meta-llama/Llama-3-8B")
    res, took = run("someorg/any-model")
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: cannot reach the Hugging Face Hub"), res.stderr
    assert "Traceback" not in res.stderr and res.stdout == ""
    assert took < startup + 2, (took, startup)


def test_offline_never_calls_the_hub(monkeypatch):
    import huggingface_hub

    def boom(*a, **k):
        raise AssertionError("the Hub was called while HF_HUB_OFFLINE=1")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", boom)
    with pytest.raises(SourceUnavailableError, match="HF_HUB_OFFLINE"):
        hub.resolve_model("someorg/model")
