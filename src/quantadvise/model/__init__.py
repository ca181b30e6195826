"""A model architecture from its config.json: the types (``arch.py``), multimodal towers
(``towers.py``), the parameter inventory (``inventory.py``) and the parser (``parse.py``). Pure."""
