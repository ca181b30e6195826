"""What a model costs in memory: bytes per component under a scheme (``sizing.py``) and the KV cache
(``kvcache.py``), with the one fit budget every command uses. Pure."""
