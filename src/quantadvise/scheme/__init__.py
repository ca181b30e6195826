"""The six-axis scheme (``axes.py``), its number formats (``formats.py``), a checkpoint format's on-disk
layout (``layout.py``) and regrouped presets (``regroup.py``). Pure."""
