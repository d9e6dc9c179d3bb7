#!/usr/bin/env bash
# Run the numeric tests under every instruction-set level this CPU can emulate, one at a time:
# PyTorch's own kernels (ATEN_CPU_CAPABILITY=default, avx2, avx512) and oneDNN's (ONEDNN_MAX_CPU_ISA=
# SSE41, AVX2, AVX512_CORE, ... up to what the CPU has). A tolerance that holds under all of them holds
# on older and newer CPUs alike (each level sums and rounds in its own order, and has its own exp, tanh).
# Prints one line per setting (passed / FAILED) and a summary; exits 1 if any setting failed.
# Usage: scripts/isa_check.sh [pytest arguments]   (default: the numeric test files below)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PYTHON:-.venv/bin/python}
TESTS=("$@")
if [ ${#TESTS[@]} -eq 0 ]; then
  TESTS=(tests/test_checkpoint_releases.py tests/test_checkpoint_release_tokens.py tests/test_analysis_reapply.py
         tests/test_analysis_oscillation.py tests/test_analysis_gradflow.py tests/test_checkpoint_albertize.py
         tests/test_model_kernels.py tests/test_training_attention.py tests/test_training_optim.py)
fi
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
has() { [[ " $flags " == *" $1 "* ]]; }
settings=("ATEN_CPU_CAPABILITY=default")
has avx2 && settings+=("ATEN_CPU_CAPABILITY=avx2")
has avx512f && has avx512bw && has avx512vl && has avx512dq && settings+=("ATEN_CPU_CAPABILITY=avx512")
settings+=("ONEDNN_MAX_CPU_ISA=SSE41")
has avx2 && settings+=("ONEDNN_MAX_CPU_ISA=AVX2")
has avx512f && settings+=("ONEDNN_MAX_CPU_ISA=AVX512_CORE")
has avx512_vnni && settings+=("ONEDNN_MAX_CPU_ISA=AVX512_CORE_VNNI")
has avx512_bf16 && settings+=("ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16")
has amx_tile && settings+=("ONEDNN_MAX_CPU_ISA=AVX512_CORE_AMX")
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); tests: ${TESTS[*]}"
failed=0
for setting in "${settings[@]}"; do
  capability=$(env "$setting" "$PY" -c 'import torch; print(torch.backends.cpu.get_cpu_capability())' 2>/dev/null)
  log=$(mktemp)
  if env "$setting" "$PY" -m pytest -n 0 -q -p no:cacheprovider "${TESTS[@]}" >"$log" 2>&1; then
    echo "passed  $setting (torch capability: $capability): $(grep -E '[0-9]+ passed' "$log" | tail -1)"
  else
    failed=1
    echo "FAILED  $setting (torch capability: $capability): $(grep -E 'passed|failed' "$log" | tail -1)"
    grep -E '^(FAILED|ERROR)' "$log" | head -10 | sed 's/^/    /'
  fi
  rm -f "$log"
done
exit $failed
