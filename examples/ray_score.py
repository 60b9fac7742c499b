#!/usr/bin/env python3
"""Bulk scoring with Ray Data: every line of a JSONL file answered by laya_c, one Agent per worker.

    pip install ./ "ray[data]"            # laya-c from this repository, and Ray
    python examples/ray_score.py --model tests/fixtures/ckpt/modernbert-tiny \
        --questions examples/ticket_questions.json --input tickets.jsonl --output scored/ \
        --workers 4 --batch-size 64

Input: one JSON object per line with an "id" and a "state" (a string, a dict or a turn list, as
Agent.predict takes). Output: JSONL files under --output, one line per input line:
{"id": ..., "result": "<Agent.predict's dict, as JSON text>"}.

How it runs: Ray Data reads the file as text lines (so every state reaches the worker exactly as
written: no Arrow schema is inferred over the states), `map_batches` sends batches of lines to a
pool of `--workers` actor processes, and each actor loads the checkpoint once (laya_c.Agent in
its constructor; the weights are memory-mapped, so workers on one machine share the page cache)
and answers each batch with one Agent.predict_batch call. Ray schedules the actors over every
node of the cluster it is connected to: the same script runs on a laptop (`ray.init()` starts a
local cluster) or on a Ray cluster (`--address auto`, the checkpoint at the same path on every node
or a Hub id in each node's HF cache). Results come back in no guaranteed order; join them on "id".
"""
import argparse
import json
import os


class LayaScorer:
    """One per Ray actor: a laya_c.Agent, loaded once, answering batches of JSONL lines."""

    def __init__(self, model, questions, threads=1, precision=None, device=None, predict_kwargs=None):
        import laya_c  # imported in the worker process

        self.agent = laya_c.Agent(model, device=device, threads=threads, precision=precision, quiet=True)
        self.questions = questions
        self.kwargs = predict_kwargs or {}

    def __call__(self, batch):
        rows = [json.loads(line) for line in batch["text"]]
        results = self.agent.predict_batch([r["state"] for r in rows], self.questions, **self.kwargs)
        return {"id": [r["id"] for r in rows],
                "result": [json.dumps(res) for res in results],
                "worker_pid": [os.getpid()] * len(rows)}


def score(input_path, model, questions, workers=2, batch_size=64, threads=1, precision=None, device=None,
          predict_kwargs=None):
    """The Ray Dataset of {"id", "result", "worker_pid"} rows (lazy: write or take it)."""
    import ray

    ds = ray.data.read_text(input_path)
    return ds.map_batches(LayaScorer, batch_size=batch_size, concurrency=workers, num_cpus=threads,
                          fn_constructor_kwargs={"model": model, "questions": questions, "threads": threads,
                                                 "precision": precision, "device": device,
                                                 "predict_kwargs": predict_kwargs})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="checkpoint directory, `laya convert` file or Hub id")
    ap.add_argument("--questions", required=True, help="JSON file: {question id: definition}")
    ap.add_argument("--input", required=True, help="JSONL with id and state per line")
    ap.add_argument("--output", required=True, help="directory for the JSONL results")
    ap.add_argument("--workers", type=int, default=2, help="actor processes (one Agent each)")
    ap.add_argument("--batch-size", type=int, default=64, help="lines per predict_batch call")
    ap.add_argument("--threads", type=int, default=1, help="CPU threads per worker")
    ap.add_argument("--precision", default=None, help="fp32, bf16, int8 (default: the backend's)")
    ap.add_argument("--device", default=None, help="cpu, cuda, cuda:N, auto (default: as laya.Agent)")
    ap.add_argument("--address", default=None, help="Ray cluster address (default: start a local one)")
    args = ap.parse_args()
    import ray

    ray.init(address=args.address)
    with open(args.questions) as f:
        questions = json.load(f)
    ds = score(os.path.abspath(args.input), args.model, questions, args.workers, args.batch_size, args.threads,
               args.precision, args.device)
    ds.drop_columns(["worker_pid"]).write_json(os.path.abspath(args.output))
    print("scored %s -> %s" % (args.input, args.output))


if __name__ == "__main__":
    main()
