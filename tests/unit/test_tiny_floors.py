"""The efficiency floor of a profile (perf.profiles.MIN_EFFICIENCY, 1% of peak) as `calibrate` meets it: a GPU
that measures under it would write a profile its own reader refuses, so the run stops first with one
InputError that says what was measured and what to check (it was a pydantic ValidationError traceback once
the floor existed, and before it a profile of ~0 efficiencies)."""

from __future__ import annotations

from datetime import date

import pytest

import quantadvise as api
from quantadvise import catalog
from quantadvise.calibration.backends import SimulatedBackend
from quantadvise.calibration.run import KERNELS, run_calibration
from quantadvise.errors import InputError


class SlowMemory(SimulatedBackend):
    """The simulated H100 with a read bandwidth of 0.5% of the spec sheet (another GPU, or a broken timer)."""

    def read_bandwidth(self, budget_s: float) -> tuple[float, int]:
        return 0.005 * self.bw, super().read_bandwidth(budget_s)[1]


def test_a_calibration_measuring_under_the_floor_stops_with_one_error():
    g = catalog.get_gpu("h100")
    schemes = {s: catalog.get_scheme(s) for s in KERNELS}
    with pytest.raises(InputError) as exc:
        run_calibration(SlowMemory(g, seed=0), arch=api.load_model("meta-llama/Meta-Llama-3-8B")[0],
                        model_id="meta-llama/Meta-Llama-3-8B", gpu=g, schemes=schemes, presets=schemes,
                        batches=(1, 2, 4, 8, 16, 32, 64), seconds=10, tool="test", today=date(2026, 11, 29))
    # 0.005 x the spec sheet's 3.35 TB/s measured: 0.50% of it, under the 1% floor
    assert "read bandwidth 0.50% of the h100-sxm spec sheet" in str(exc.value)
    assert "check --gpu" in str(exc.value) and exc.value.field == "gpu"
