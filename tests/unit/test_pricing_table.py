"""data/pricing.yaml (issue 15, default $/GPU-hour): every row divides the instance price it quotes by
the GPUs in it, says where it was read and when; GPUs with no public on-demand list price in the
catalogs read have no row, so their cost figures stay empty until a price is given."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import pytest
import yaml

ROWS = yaml.safe_load((Path(__file__).resolve().parents[2] / "data" / "pricing.yaml").read_text())["gpus"]


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_each_price_is_its_offer_divided_by_its_gpus(row):
    # the offer reads "<cloud> on-demand <instance>: $<price>/hour for <n> x <gpu>"
    m = re.search(r"\$([\d.,]+)/hour for (\d+) x ", row["offer"])
    assert m, row["offer"]
    instance, gpus = float(m.group(1).replace(",", "")), int(m.group(2))
    assert row["usd_per_gpu_hour"] == pytest.approx(instance / gpus, abs=0.005)
    assert row["kind"] == "list price" and row["source"] and isinstance(row["as_of"], date)


def test_the_datacenter_gpus_the_issue_named_have_a_price_now():
    ids = {r["id"] for r in ROWS}
    # h200 (Nebius 8 x H200 at $28.00/hour -> $3.50), l40s, mi300x had none before
    assert {"h200", "l40s", "mi300x", "h100-sxm", "b200"} <= ids
    assert next(r for r in ROWS if r["id"] == "h200")["usd_per_gpu_hour"] == 3.50
    # no public list price read for these: left out, never made up
    assert not ids & {"l4", "t4", "a10g", "h20", "rtx-4090"}


def test_a_priced_and_an_unpriced_gpu_through_the_api():
    from quantadvise.api.speed import price_for
    from quantadvise.catalog import get_gpu

    assert price_for(get_gpu("h200"), None).usd_per_gpu_hour == 3.50
    assert price_for(get_gpu("l4"), None) is None
    assert price_for(get_gpu("l4"), 0.8).usd_per_gpu_hour == 0.8  # a given price always wins
