"""A checkpoint's ``quantization_config`` read back into the six axes, placed on the model, named.

- ``parse``: where the config is (config.json, side files) and which dialect parser reads it
- ``quant``: what every parser returns (``CheckpointQuant``, ``QuantGroup``, ``QArgs``)
- ``args``: typed field reads shared by the parsers (errors name the field)
- the dialects: ``compressed_tensors``, ``gptq_awq`` (AWQ, GPTQ, AutoRound), ``modelopt``,
  ``fp8_mxfp4``, ``quark``, ``bnb_gguf_mlx`` (bitsandbytes, GGUF, MLX)
- ``presets``: the scheme preset and compressed-tensors preset with a group's axes
- ``placement``: which module each group quantizes, and the bytes on disk

Pure: dicts in, frozen models out. Nothing is imported here (``import quantadvise`` stays cheap).
"""
