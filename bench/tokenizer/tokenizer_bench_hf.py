#!/usr/bin/env python3
"""HF `tokenizers` side of bench/tokenizer/tokenizer_bench.sh: load time and single-thread encode throughput.

    RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false python bench/tokenizer/tokenizer_bench_hf.py CORPUS ROUNDS NAME=PATH...

Wall and process CPU time (process_time: the fairer figure on a loaded machine; with one Rayon
thread the encode work runs on the calling thread). Two modes per tokenizer, best of ROUNDS each: `encode_batch` over the whole corpus (one
Rust call, one thread: the fastest way to use HF from Python) and `encode` in a Python loop.
"""
import json
import sys
import time

import tokenizers
from tokenizers import Tokenizer


def main():
    corpus_path, rounds = sys.argv[1], int(sys.argv[2])
    texts = []
    with open(corpus_path, encoding="utf-8") as f:
        for line in f:
            s = json.loads(line)
            if any(0xD800 <= ord(c) <= 0xDFFF for c in s):
                continue
            texts.append(s)
    total = sum(len(s.encode("utf-8")) for s in texts)
    for arg in sys.argv[3:]:
        name, path = arg.split("=", 1)
        best_load = best_load_cpu = 1e9
        for _ in range(3):
            t0, c0 = time.perf_counter(), time.process_time()
            tok = Tokenizer.from_file(path + "/tokenizer.json")
            best_load = min(best_load, time.perf_counter() - t0)
            best_load_cpu = min(best_load_cpu, time.process_time() - c0)
        tok.no_truncation()
        tok.no_padding()
        for mode in ("encode_batch", "encode_loop"):
            best = best_cpu = 1e9
            for _ in range(rounds):
                t0, c0 = time.perf_counter(), time.process_time()
                if mode == "encode_batch":
                    out = tok.encode_batch(texts, add_special_tokens=False)
                    n_ids = sum(len(e.ids) for e in out)
                else:
                    n_ids = 0
                    for s in texts:
                        n_ids += len(tok.encode(s, add_special_tokens=False).ids)
                best = min(best, time.perf_counter() - t0)
                best_cpu = min(best_cpu, time.process_time() - c0)
            print(json.dumps({"impl": "hf-tokenizers " + tokenizers.__version__ + " " + mode, "tokenizer": name,
                              "strings": len(texts), "bytes": total, "ids": n_ids, "load_s": round(best_load, 4),
                              "load_cpu_s": round(best_load_cpu, 4), "encode_s": round(best, 4),
                              "encode_cpu_s": round(best_cpu, 4), "mb_per_s": round(total / best / 1e6, 2),
                              "mb_per_cpu_s": round(total / best_cpu / 1e6, 2)}), flush=True)


if __name__ == "__main__":
    main()
