"""The speed model: a decode/prefill step priced from the model's linear layers (``step.py``,
``datapath.py``), efficiency profiles and their resolution (``profiles.py``, ``efficiency.py``), the
roofline report (``roofline.py``), calibration on a GPU (``calibration.py``, ``fit.py``,
``validation.py``, timing ``backends.py``) and the profile file (``profile_file.py``)."""
