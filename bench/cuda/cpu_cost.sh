#!/usr/bin/env bash
# bench/cuda/cpu_cost.sh: what a build costs on the CPU (BENCHMARKS.md, CUDA backend, "A CUDA build on
# the CPU"): for builds given as NAME=BUILD_DIR, interleaved one of each in turn,
#   - `laya --model tests/fixtures/ckpt/modernbert-tiny --preset triage "some text"`: peak RSS
#     (/usr/bin/time -f %M) and wall (date +%s%N), median of N (default 10);
#   - laya-serve with both fixture checkpoints (LAYA_EXTRA_MODELS, LAYA_PACK_CACHE=0): VmHWM after
#     /ready and one /v1/systemone request, and how many CUDA library mappings it holds.
# Run from the repository root:  bench/cuda/cpu_cost.sh old=../main/build new=build cpuonly=/tmp/build-cpu
set -u
N=${N:-10}
F=$PWD/tests/fixtures/ckpt
declare -A W R
med() { printf "%s\n" $1 | sort -n | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
for i in $(seq "$N"); do
  for spec in "$@"; do
    n=${spec%%=*} b=${spec#*=}
    s=$(date +%s%N)
    /usr/bin/time -f "%M" -o /tmp/cpu_cost.rss "$b/laya" --model "$F/modernbert-tiny" --preset triage "some text" >/dev/null 2>&1
    e=$(date +%s%N)
    W[$n]+="$(( (e - s) / 1000000 )) " R[$n]+="$(cat /tmp/cpu_cost.rss) "
  done
done
for spec in "$@"; do
  n=${spec%%=*}
  echo "$n laya triage: wall median $(med "${W[$n]}") ms, peak RSS median $(med "${R[$n]}") kB (walls: ${W[$n]})"
done
port=$((18600 + RANDOM % 1000))
for spec in "$@"; do
  n=${spec%%=*} b=${spec#*=}
  port=$((port + 1))
  HF_HOME=/tmp/cpu_cost-hf HF_HUB_OFFLINE=1 LAYA_HOST=127.0.0.1 LAYA_PORT=$port LAYA_PACK_CACHE=0 \
    LAYA_EXTRA_MODELS="{\"english\": \"$F/modernbert-tiny\", \"multilingual\": \"$F/mmbert-tiny\"}" \
    "$b/laya-serve" >/tmp/cpu_cost-serve.log 2>&1 &
  pid=$!
  for _ in $(seq 300); do curl -sf "http://127.0.0.1:$port/ready" >/dev/null && break; sleep 0.02; done
  curl -sf -X POST "http://127.0.0.1:$port/v1/systemone" -H 'content-type: application/json' \
    -d '{"state": "I was charged twice", "questions": {"u": {"type": "noul", "instructions": "urgent?"}}}' >/dev/null ||
    echo "$n: the request failed"
  echo "$n laya-serve: VmHWM $(awk '/VmHWM/{print $2}' /proc/$pid/status) kB, CUDA mappings $(grep -c 'cublas\|cudart\|laya_cuda' /proc/$pid/maps)"
  kill $pid; wait $pid 2>/dev/null
done
