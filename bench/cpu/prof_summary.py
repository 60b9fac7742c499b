#!/usr/bin/env python3
"""One line of where a CPU forward's time went, from LAYA_CPU_PROFILE's JSON lines (bench_ckpt's
stderr), for run_xeon.sh's prof step and amx_scaling.sh:

    LAYA_CPU_PROFILE=1 bench_ckpt CKPT ... 2>&1 | prof_summary.py LABEL

The first forward is bench_ckpt's warm-up and is left out when there are others. Reported: the
fastest timed forward's wall ms (and the median), its GEMM step's wall and task CPU ms, the GEMM
rate per busy core (task CPU) and over the wall, and the split / attention (encoder global + local
and the decision head's, as BENCHMARKS.md counts it) / norm steps' wall ms.
The GEMM count is ModernBERT-large's encoder linear layers (351 GFLOP at 512 tokens; the head's
GEMMs add a few percent): the shapes tools/scale_fixture_ckpt.py gives."""
import json
import sys

GFLOP_PER_TOKEN = 351.0 / 512


def main():
    label = " ".join(sys.argv[1:]) or "forward"
    rows = [json.loads(l) for l in sys.stdin if l.startswith('{"cpu_profile"')]
    if not rows:
        sys.exit(f"{label}: no profile lines")
    timed = rows[1:] or rows
    r = min(timed, key=lambda x: x["wall_ms"])
    walls = sorted(x["wall_ms"] for x in timed)
    g, split = r["gemm"], r.get("gemm_split", {"wall_ms": 0.0, "task_cpu_ms": 0.0})
    gflop = GFLOP_PER_TOKEN * r["tokens"]
    attn = sum(r[k]["wall_ms"] for k in ("attn_global", "attn_local", "attn_head"))
    print(f'{label}: forward {r["wall_ms"]:.1f} ms (median of {len(walls)}: {walls[len(walls) // 2]:.1f}); '
          f'GEMM {g["wall_ms"]:.1f} wall / {g["task_cpu_ms"]:.1f} task CPU ms ({g["tasks"]} tasks): '
          f'{gflop / g["task_cpu_ms"] * 1e3:.0f} GFLOP/s a busy core, {gflop / g["wall_ms"] * 1e3:.0f} over the wall; '
          f'split {split["wall_ms"]:.1f} / {split["task_cpu_ms"]:.1f}, attention {attn:.1f}, '
          f'norms {r["norm_convert"]["wall_ms"]:.1f}')


if __name__ == "__main__":
    main()
