#!/usr/bin/env bash
# The CUDA check, run on a lent GPU machine (the device tool) from the repository root:
#   carry .whl (the wheels its image lacks: docs/benchmarks.md) and .gpudata/mnist (the IDX files),
#   command: bash bench/device_check.sh
# It installs nothing into the system: the wheels go to /tmp/site, the package runs from src/.
# Writes $OUT/times.tsv (name, wall seconds, exit code) and $OUT/device.tgz (every log and report).
set -uo pipefail
FINAL="${OUT:-/tmp/device-out}"; OUT=/tmp/dev; mkdir -p "$OUT" "$FINAL"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || { echo "wheel install failed"; exit 1; }
export PYTHONPATH="/tmp/site:$PWD/src:$PWD/tests" PYTHONUNBUFFERED=1
nvidia-smi -L | tee "$OUT/gpu.log"
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))" | tee -a "$OUT/gpu.log"
timed() {  # name, timeout, command...: wall seconds and exit code into $OUT/times.tsv
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s%N); timeout "$limit" "$@" >"$OUT/$name.log" 2>&1; local rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf '%s\t%d.%03d\t%s\n' "$name" $((ms / 1000)) $((ms % 1000)) "$rc" | tee -a "$OUT/times.tsv"
}
# 1. The CUDA tests (trials on the GPU, shard-size independence), then the CPU-only contract on this machine.
timed cuda_tests 150 python3 -m pytest -p no:cacheprovider -n 0 -q tests/test_cuda.py
# 2. The default audit (Adult, r2d), GPU and this machine's CPU, same command otherwise.
timed adult_cuda 60 python3 -m audit run --method r2d --epsilon 1 --device cuda --out /tmp/a_cuda
timed adult_cpu 60 python3 -m audit run --method r2d --epsilon 1 --device cpu --out /tmp/a_cpu
# 3. The CNN on 2,000 MNIST images with every default attack: CNS (the speed target: 5 minutes on 2 CPU cores)
#    and certified noisy fine-tuning (its re-run trials), on the GPU; the CPU's time is bench/bench_images.py's.
CNN="--dataset idx:.gpudata/mnist --model cnn --max-train 2000"
timed cnn2000_cns_cuda 300 python3 -m audit run $CNN --method cns --device cuda --out /tmp/c_cuda
timed cnn2000_noisyft_cuda 240 python3 -m audit run $CNN --method noisy-ft --device cuda --out /tmp/n_cuda
timed cnn2000_cns_cuda_f32 300 python3 -m audit run $CNN --method cns --dtype float32 --device cuda --out /tmp/f_cuda
# 4. The caller's own code on the GPU (issue 25): the model and records reach train_fn on cuda, local and 2 workers.
timed caller_cuda 180 python3 bench/bench_caller.py --device cuda --trials 12 --out "$OUT/caller-cuda.json"
# 5. Is the caller's CNN training bit-reproducible here (the audit's determinism check, then deterministic algorithms)?
timed cuda_reproducibility 240 python3 bench/cuda_reproducibility.py
for d in a_cuda a_cpu c_cuda n_cuda f_cuda; do [ -f /tmp/$d/report.json ] && cp /tmp/$d/report.json "$OUT/$d.report.json"; done
cat "$OUT/times.tsv"; cp "$OUT/times.tsv" "$FINAL/"; tar -C /tmp -czf "$FINAL/device.tgz" dev
