#!/usr/bin/env bash
# The checks that need a GPU, as one short run (a lent GPU machine's time is scarce):
#   1. tests/test_gpu.py: the Pallas kernels compiled by Triton, against CPU;
#   2. benchmarks/kernels.py: Pallas kernels vs the xla kernels of the same ops;
#   3. benchmarks/gpu_models.py: a GPT training step, PyTorch vs jflow;
#   4. benchmarks/gpu/profile_step.py: where that step's time goes (a jax.profiler summary).
# Each part has its own time limit and its own output file under $OUT (default /tmp/jflow-gpu),
# so a failing part does not cost the others. The limits add up to 530 s, inside one device call
# (600 s); on an H200 in session 19 the tests took 57 s and the GPT benchmark 57 s on a fresh machine. Uses the machine's Python (jax, torch,
# pytest installed there) with this checkout on PYTHONPATH.
set -u
OUT=${OUT:-/tmp/jflow-gpu}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 XLA_PYTHON_CLIENT_MEM_FRACTION=0.5
PY=${PY:-python3}
{ nvidia-smi -L; $PY -c "import jax, jflow, torch; print('jax', jax.__version__, jax.devices(),
'torch', torch.__version__)"; } 2>&1 | tee "$OUT/env.txt"
timeout "${T_TESTS:-150}" $PY -m pytest tests/test_gpu.py -q -p no:cacheprovider -rs \
    --durations=8 2>&1 | tee "$OUT/pallas_gpu_tests.txt" | tail -40
timeout "${T_KERNELS:-120}" $PY benchmarks/kernels.py --repeat 3 --number 10 \
    --out "$OUT/kernels.txt" 2>&1 | tail -20
timeout "${T_MODELS:-150}" $PY benchmarks/gpu_models.py --repeat 3 --number 5 \
    --out "$OUT/gpu_models.txt" 2>&1 | tail -20
timeout "${T_PROFILE:-110}" $PY benchmarks/gpu/profile_step.py --mode jit --top 30 \
    2>&1 | tee "$OUT/profile_jit.txt" | tail -40
