#!/usr/bin/env python3
"""The CPU benchmark, one command: laya.c (fp32, bf16, int8) against Python Laya's stock CPU path
(PyTorch fp32) and ONNX Runtime on Laya's ONNX export (fp32 and int8), same machine, same run,
same thread count, same shapes and token ids; one engine at a time.

    /opt/layaref/bin/python bench/cpu/run.py --build build --work /tmp/laya-bench \\
        --model large=CKPT_DIR --model mmbert=CKPT_DIR [--threads 2] [--reps 3] [--shapes ...]

Checkpoints: tools/make_random_ckpt.py {modernbert-large,mmbert-base} DIR (full size, random
weights, Laya's layout). The run converts each to artifacts (`laya convert`, one per precision)
and exports the ONNX graphs (bench_py.py export) into --work, then times:
  - forward pass per shape (best and median of --reps after a warm-up call; when the first call
    takes over 3 s it is the only sample, to keep the run short): laya.c packs rows back to back,
    the others pad to the longest row of the batch as Laya's collate does ("tokens" vs "real
    tokens");
  - peak RSS of each engine's process (ru_maxrss);
  - cold start: process start to first answer (open the model, answer one question, exit),
    wall clock around the whole process, page cache warm.
`--avx2 bf16` adds laya.c runs on its AVX2 kernel table (what a CPU without AVX-512 runs); `--avx2
fp32` also adds PyTorch pinned to AVX2 (TORCH_AVX2: ATen, oneDNN and MKL).
Prints a Markdown report (and writes it with the raw JSON to --work).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable
# PyTorch held to AVX2 (what a CPU without AVX-512 runs): its own kernels, oneDNN, and MKL (the fp32
# GEMM of the x86 wheels; without MKL_ENABLE_INSTRUCTIONS it keeps AVX-512 on an AVX-512 CPU)
TORCH_AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}


def sh(cmd, env=None):
    """Run a command; return (stdout lines as JSON objects, wall seconds)."""
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        sys.stderr.write(f"FAILED ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-3000:]}\n")
        raise SystemExit(1)
    out = []
    for line in p.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out, wall


def log(msg):
    sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


def machine():
    model = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    flags = ""
    try:
        txt = open("/proc/cpuinfo").read()
        flags = " ".join(f for f in ["avx512f", "avx512_bf16", "avx512_vnni"] if f in txt)
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} CPUs ({flags}), {platform.system()} {platform.release()}"


def loadavg():
    try:
        return open("/proc/loadavg").read().split()[0]
    except OSError:
        return "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="CMake build directory (laya, bench/cpu/*)")
    ap.add_argument("--work", required=True, help="directory for artifacts, ONNX graphs and results")
    ap.add_argument("--model", action="append", required=True, help="NAME=CKPT_DIR")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--shapes", default="1x128,1x512,8x256,32xmixed")
    ap.add_argument("--avx2", default="", help="comma list of laya.c precisions (fp32,bf16,int8) to run a second "
                    "time on the AVX2 table (LAYA_CPU_ISA=avx2), as on a CPU without AVX-512; the competitors "
                    "keep whatever their libraries pick (AVX-512 here)")
    ap.add_argument("--skip", default="", help="comma list of engines to skip: torch,ort,ort-int8,fp32,bf16,int8; "
                    "'cold' skips the cold starts (a run split over several quiet windows)")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    skip = set(s for s in a.skip.split(",") if s)
    laya = os.path.join(a.build, "laya")
    bench_ckpt = os.path.join(a.build, "bench", "cpu", "bench_ckpt")
    cold = os.path.join(a.build, "bench", "cpu", "cold_start")
    env = dict(os.environ, LAYA_THREADS=str(a.threads), OMP_NUM_THREADS=str(a.threads))
    results = {"machine": machine(), "threads": a.threads, "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "load_at_start": loadavg(), "models": {}}
    for spec in a.model:
        name, ckpt = spec.split("=", 1)
        cfg = json.load(open(os.path.join(ckpt, "encoder", "config.json")))
        vocab = cfg["vocab_size"]
        R = results["models"][name] = {"ckpt": ckpt, "runs": [], "cold": {}, "sizes": {}}
        arts = {}
        for p in ["fp32", "bf16", "int8"]:
            if p in skip:
                continue
            art = os.path.join(a.work, f"{name}.{p}.laya")
            if not os.path.exists(art):
                log(f"{name}: laya convert --precision {p}")
                sh([laya, "convert", ckpt, art, "--precision", p], env)
            arts[p] = art
            R["sizes"][f"artifact {p}"] = os.path.getsize(art) / 1e6
        R["sizes"]["model.safetensors"] = os.path.getsize(os.path.join(ckpt, "model.safetensors")) / 1e6
        onnx = os.path.join(a.work, f"{name}.onnx")
        onnx8 = os.path.join(a.work, f"{name}.int8.onnx")
        if not ({"ort", "ort-int8"} <= skip) and not os.path.exists(onnx8):
            log(f"{name}: ONNX export")
            sh([PY, os.path.join(HERE, "bench_py.py"), "export", ckpt, onnx], env)
        # forward passes, one engine per process
        jobs = [(f"laya.c {p}", [bench_ckpt, arts[p], "--shapes", a.shapes, "--reps", str(a.reps),
                                 "--threads", str(a.threads)]) for p in ["fp32", "bf16", "int8"] if p in arts]
        for p in [p for p in a.avx2.split(",") if p]:
            art = arts.get(p) or os.path.join(a.work, f"{name}.{p}.laya")
            if not os.path.exists(art):
                sh([laya, "convert", ckpt, art, "--precision", p], env)
            jobs.append((f"laya.c {p} AVX2", [bench_ckpt, art, "--shapes", a.shapes, "--reps", str(a.reps),
                                              "--threads", str(a.threads)], {"LAYA_CPU_ISA": "avx2"}))
        if "torch" not in skip:
            jobs.append(("pytorch fp32", [PY, os.path.join(HERE, "bench_py.py"), "torch", ckpt, "--shapes", a.shapes,
                                          "--reps", str(a.reps), "--threads", str(a.threads)]))
        if "torch" not in skip and "fp32" in a.avx2.split(","):
            # torch pinned to AVX2: its fp32 Linear runs in MKL, which only MKL_ENABLE_INSTRUCTIONS
            # holds back (ATEN_CPU_CAPABILITY and ONEDNN_MAX_CPU_ISA leave MKL on AVX-512)
            jobs.append(("pytorch fp32 AVX2", [PY, os.path.join(HERE, "bench_py.py"), "torch", ckpt, "--shapes",
                                               a.shapes, "--reps", str(a.reps), "--threads", str(a.threads)],
                         TORCH_AVX2))
        if "ort" not in skip:
            jobs.append(("onnxruntime fp32", [PY, os.path.join(HERE, "bench_py.py"), "ort", onnx, "--shapes", a.shapes,
                                              "--reps", str(a.reps), "--threads", str(a.threads), "--vocab", str(vocab)]))
        if "ort-int8" not in skip:
            jobs.append(("onnxruntime int8", [PY, os.path.join(HERE, "bench_py.py"), "ort", onnx8, "--shapes",
                                              a.shapes, "--reps", str(a.reps), "--threads", str(a.threads),
                                              "--vocab", str(vocab)]))
        for label, cmd, *extra in jobs:
            log(f"{name}: {label} (load {loadavg()})")
            out, wall = sh(cmd, dict(env, **extra[0]) if extra else env)
            for o in out:
                if extra and label.startswith("laya.c"):  # the AVX2 runs: same engine, other kernel table
                    if o.get("kernels", "avx2") != "avx2":
                        sys.stderr.write(f"{label}: ran the {o['kernels']} kernel table, not avx2\n")
                        raise SystemExit(1)
                    o["engine"] = label
                o.setdefault("engine", label)
                o["load_avg"] = loadavg()
                R["runs"].append(o)
            log(f"{name}: {label} done in {wall:.0f}s")
        # cold starts: process start to first answer
        colds = []
        if "bf16" in arts:
            colds.append(("laya.c bf16, artifact", [cold, arts["bf16"]], 3))
            colds.append(("laya.c bf16, checkpoint dir", [cold, ckpt, "bf16"], 1))
        if "int8" in arts:
            colds.append(("laya.c int8, artifact", [cold, arts["int8"]], 3))
        if "torch" not in skip:
            colds.append(("pytorch fp32", [PY, os.path.join(HERE, "bench_py.py"), "cold", "torch", ckpt,
                                           "--threads", str(a.threads)], 1))
        if "ort" not in skip:
            colds.append(("onnxruntime fp32", [PY, os.path.join(HERE, "bench_py.py"), "cold", "ort", ckpt, onnx,
                                               "--threads", str(a.threads)], 1))
        if "cold" in skip:
            colds = []
        for label, cmd, n in colds:
            walls = []
            for _ in range(n):
                _, w = sh(cmd, env)
                walls.append(w)
            R["cold"][label] = statistics.median(walls) * 1e3
            log(f"{name}: cold start {label}: {R['cold'][label]:.0f} ms")
        save(results, a)  # after every model, so a long run leaves what it finished
    print(save(results, a))


def save(results, a):
    results["load_at_end"] = loadavg()
    results["ended"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    with open(os.path.join(a.work, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    md = report(results, a)
    with open(os.path.join(a.work, "report.md"), "w") as f:
        f.write(md)
    return md


def report(res, a):
    L = []
    L.append(f"Machine: {res['machine']}; {res['threads']} threads for every engine; run {res['started']} - "
             f"{res['ended']}, load average {res['load_at_start']} at start, {res['load_at_end']} at end.\n")
    for name, R in res["models"].items():
        runs = [r for r in R["runs"] if "shape" in r]
        rss = {r["engine"]: r["peak_rss_mb"] for r in R["runs"] if "peak_rss_mb" in r}
        engines = []
        for r in runs:
            if r["engine"] not in engines:
                engines.append(r["engine"])
        shapes = []
        for r in runs:
            if r["shape"] not in shapes:
                shapes.append(r["shape"])
        get = {(r["engine"], r["shape"]): r for r in runs}
        L.append(f"### {name} ({R['ckpt']})\n")
        L.append("Forward pass, median ms (tokens/s of real tokens):\n")
        L.append("| shape | real tokens | " + " | ".join(engines) + " |")
        L.append("|---|---|" + "---|" * len(engines))
        for s in shapes:
            row = [s]
            real = next((get[(e, s)]["real_tokens"] for e in engines if (e, s) in get), 0)
            row.append(str(real))
            for e in engines:
                r = get.get((e, s))
                row.append(f"{r['median_ms']:.0f} ({real / r['median_ms'] * 1e3:.0f}/s)" if r else "-")
            L.append("| " + " | ".join(row) + " |")
        L.append("")
        L.append("Ratios (competitor median / laya.c median; > 1 means laya.c is faster):\n")
        pairs = [("laya.c bf16", "pytorch fp32", 4.0), ("laya.c bf16", "onnxruntime fp32", 2.0),
                 ("laya.c int8", "onnxruntime int8", 1.0), ("laya.c fp32", "pytorch fp32", None),
                 ("laya.c fp32", "onnxruntime fp32", None), ("laya.c bf16 AVX2", "pytorch fp32", None),
                 ("laya.c bf16 AVX2", "onnxruntime fp32", None), ("laya.c fp32 AVX2", "pytorch fp32", None),
                 ("laya.c fp32 AVX2", "pytorch fp32 AVX2", 1.8)]
        pairs = [p for p in pairs if p[0] in engines and p[1] in engines]
        L.append("| shape | " + " | ".join(f"{b} / {x}" + (f" (goal >= {g:g})" if g else "") for x, b, g in pairs) + " |")
        L.append("|---|" + "---|" * len(pairs))
        for s in shapes:
            row = [s]
            for x, b, g in pairs:
                rx, rb = get.get((x, s)), get.get((b, s))
                if rx and rb:
                    ratio = rb["median_ms"] / rx["median_ms"]
                    mark = "" if g is None else (" met" if ratio >= g else " **missed**")
                    row.append(f"{ratio:.2f}{mark}")
                else:
                    row.append("-")
            L.append("| " + " | ".join(row) + " |")
        L.append("")
        if "32xmixed" in shapes:
            r = get.get(("laya.c bf16", "32xmixed"))
            p = get.get(("pytorch fp32", "32xmixed"))
            if r:
                L.append(f"Mixed batch: laya.c runs {r['tokens']} tokens (the real ones); the padded engines run "
                         f"{p['tokens'] if p else 32 * 512} (rows padded to 512).\n")
        sizes = R["sizes"]
        L.append("Peak RSS (MB) and weights on disk (MB):\n")
        L.append("| engine | peak RSS MB | weights MB | RSS - weights |")
        L.append("|---|---|---|---|")
        for e in engines:
            key = f"artifact {e.split()[1]}" if e.startswith("laya.c") else None
            wmb = sizes.get(key) if key else None
            L.append(f"| {e} | {rss.get(e, float('nan')):.0f} | {wmb:.0f} | {rss.get(e, 0) - wmb:.0f} |" if wmb else
                     f"| {e} | {rss.get(e, float('nan')):.0f} | (fp32 in memory) | |")
        L.append("")
        L.append("Cold start (process start to first answer, ms): " +
                 ", ".join(f"{k} {v:.0f}" for k, v in R["cold"].items()) + "\n")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
