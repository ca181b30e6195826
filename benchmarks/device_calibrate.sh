#!/usr/bin/env bash
# Measure the GPU of this machine with `quantadvise calibrate` and validate the result: the ONE
# prepared script a session lent a GPU machine runs (docs/calibration.md, "Shipping a profile").
#
#   OUT=/some/dir bash benchmarks/device_calibrate.sh        # ~4 minutes on an H100/H200
#
# Writes, under $OUT (the folder the device tool brings back; default ./calibration-out):
#   profiles/<gpu>-<date>.yaml   the profile: copy it to data/profiles/ and commit it
#   calibrate.txt / .json        the measured table (ceilings, ms per scheme and batch, fits)
#   validate.txt / .json         predicted vs measured, error % for every model (leave-one-out)
#   validate.png                 the overlay (when matplotlib is importable)
#   env.txt                      nvidia-smi, python, torch, pip freeze (provenance)
# Budget: calibrate gets CAL_SECONDS (default 150) of timing; the whole script stays under 5 minutes.
# A dry run without a GPU: BACKEND=simulated GPU=h200 bash benchmarks/device_calibrate.sh
# Exit status: calibrate's (2 when there is no CUDA torch), else validate's (1 when the calibrated
# model misses a measurement by more than 15%).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-calibration-out}"
CAL_SECONDS="${CAL_SECONDS:-150}"
BACKEND="${BACKEND:-torch}"
GPU_ARGS=()
[ -n "${GPU:-}" ] && GPU_ARGS=(--gpu "$GPU")
MODEL="${MODEL:-meta-llama/Meta-Llama-3-8B}"
PY="${PYTHON:-python3}"
mkdir -p "$OUT/profiles"
export HF_HUB_OFFLINE=1 PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"

# 1. torch with CUDA: use the one installed, else install the [gpu] extra.
if [ "$BACKEND" = torch ] && ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    echo "installing quantadvise[gpu] (torch) ..." >&2
    "$PY" -m pip install -q ".[gpu]" >&2 || echo "pip could not install the [gpu] extra" >&2
fi
# 2. quantadvise's own (light) dependencies, run from the source tree.
if ! "$PY" -c "import typer, pydantic, rich, yaml, huggingface_hub" 2>/dev/null; then
    "$PY" -m pip install -q "typer>=0.26" "pydantic>=2.7" "rich>=13" "huggingface_hub>=0.24" "pyyaml>=6" >&2
fi

{
    date -u
    nvidia-smi 2>&1 || true
    "$PY" -c "import sys, torch; print('python', sys.version.split()[0]); print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))" 2>&1 || true
    "$PY" -m pip freeze 2>/dev/null | grep -iE "^(torch|nvidia-|triton|typer|pydantic|rich|pyyaml|huggingface)" || true
} > "$OUT/env.txt"

# 3. calibrate (the profile goes to $OUT first; its id names the file: <gpu id>-<date>).
timeout 270 "$PY" -m quantadvise calibrate --model "$MODEL" --seconds "$CAL_SECONDS" --backend "$BACKEND" \
    "${GPU_ARGS[@]}" --no-progress --out "$OUT/profile.yaml" --format json > "$OUT/calibrate.json"
rc=$?
if [ $rc -ne 0 ]; then
    echo "calibrate failed (exit $rc)" >&2
    exit $rc
fi
ID=$("$PY" -c "import json, sys; print(json.load(open(sys.argv[1]))['profile']['id'])" "$OUT/calibrate.json")
mv "$OUT/profile.yaml" "$OUT/profiles/$ID.yaml"
"$PY" -c "
import json, sys
from quantadvise.calibration.run import CalibrationResult
from quantadvise.report import render
r = CalibrationResult.model_validate(json.load(open(sys.argv[1])))
print(render('calibrate', 'table', r.model_copy(update={'profile_path': sys.argv[2]})))
" "$OUT/calibrate.json" "data/profiles/$ID.yaml" > "$OUT/calibrate.txt" || { echo "rendering calibrate.txt failed" >&2; exit 1; }

# 4. validate: the error table (and the plot when matplotlib is there).
PLOT=()
"$PY" -c "import matplotlib" 2>/dev/null && PLOT=(--plot "$OUT/validate.png")
"$PY" -m quantadvise validate "$OUT/profiles/$ID.yaml" "${PLOT[@]}" > "$OUT/validate.txt"
vrc=$?
"$PY" -m quantadvise validate "$OUT/profiles/$ID.yaml" --format json > "$OUT/validate.json"
cat "$OUT/calibrate.txt" "$OUT/validate.txt"
echo "profile: $OUT/profiles/$ID.yaml -> copy to data/profiles/$ID.yaml" >&2
exit $vrc
