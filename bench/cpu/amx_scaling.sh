#!/usr/bin/env bash
# bench/cpu/amx_scaling.sh: how the CPU GEMMs' rate per busy core changes with the thread count,
# on the device machine's Xeon host (AMX), from binaries built on a development machine. The fast
# modes' 1 x 512 goal (BENCHMARKS.md, "The AMX ceiling") needs the 8-thread AMX GEMMs at a third to
# half of the tile peak; this says where the per-core rate is lost as cores are added.
#
# On the development machine (bench_ckpt beside the test binaries):
#
#   tests/device/run_prebuilt.sh --collect build out/dv/pre
#   cp build/bench/cpu/bench_ckpt out/dv/pre/bin/ && tar -C out -cJf out/dv.tar.xz dv
#
# then, in the repository root on the device (carry out/dv.tar.xz), about 3 minutes:
#
#   mkdir -p /tmp/x && tar -xJf out/dv.tar.xz -C /tmp/x && bench/cpu/amx_scaling.sh /tmp/x/dv/pre
#
# One line per precision x shape x thread count (prof_summary.py: the fastest timed forward, its
# GEMM step's wall and task CPU ms and the GEMM rate per busy core). PRECS, SHAPES, THREADS pick the
# grid; LAYA_CPU_ISA passes through (amx by CPUID on that host). TASKS (space-separated
# LAYA_CPU_GEMM_TASKS values, "default" for none; default: default only) adds a GEMM task-shape
# axis: "512,1" makes each task all rows of its panels at 1 x 512 (every weight panel read into L2
# once a GEMM, the panel-major order the L3 bandwidth hypothesis of "The AMX ceiling" favours),
# "64,4" the opposite, e.g. TASKS="default 512,1 512,2 64,4" THREADS="1 8".
set -u
pre=${1:?the collected binaries (run_prebuilt.sh --collect DEST)}
export LD_LIBRARY_PATH=$pre/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ckpt=${CKPT:-/tmp/large}
[ -f "$ckpt/model.safetensors" ] || python3 tools/scale_fixture_ckpt.py tests/fixtures/ckpt/modernbert-tiny "$ckpt" > /dev/null || exit 1
lscpu | grep -E "Model name|^CPU\(s\)|L2|L3" | cut -c1-70
uptime
for p in ${PRECS:-bf16 int8 fp32}; do
  for s in ${SHAPES:-1x512 1x128}; do
    for t in ${THREADS:-1 2 4 8 16}; do
      for g in ${TASKS:-default}; do
        if [ "$g" = default ]; then unset LAYA_CPU_GEMM_TASKS; lbl=""; else export LAYA_CPU_GEMM_TASKS=$g; lbl=" tasks $g"; fi
        LAYA_CPU_PROFILE=1 timeout 60 "$pre/bin/bench_ckpt" "$ckpt" --precision "$p" --shapes "$s" --reps 2 --threads "$t" 2>&1 |
          python3 bench/cpu/prof_summary.py "$p $s threads $t$lbl"
      done
    done
  done
done
