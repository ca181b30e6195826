"""Serving engines, version by version: what each accepts and how it treats a checkpoint. Pure.

- :mod:`.data` — the schema of ``data/engines/<engine>-<version>.yaml`` (:class:`EngineData`);
- :mod:`.library` — the checkpoint-format library file (:class:`FormatLibrary`: compressed-tensors' presets);
- :mod:`.resolution` — :func:`resolve`: the method an engine release resolves a checkpoint to, the
  scheme each config group dispatches to, every refusal or warning (:class:`Finding`);
- :mod:`.listing` — ``quantadvise engines`` list / show / diff results;
- :mod:`.inspection` — ``quantadvise inspect``: one checkpoint's axes, size on disk and per-engine verdicts;
- :mod:`.flags` — the engines' command-line flags, read and written from one table.

Nothing is imported here: each command loads only the modules it uses.
"""
