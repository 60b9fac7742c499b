"""Record decide / decide_batch / predict_long from the real laya 0.4.15 on the tiny checkpoints.

    /opt/layaref/bin/python tools/router/surfaces_fixtures.py tests/fixtures/surfaces

Writes decide.jsonl and predict_long.jsonl: one line per case with the checkpoint, the call
("decide", "decide_batch" or "predict_long"), the request exactly as laya.c's C API takes it,
and either the result or the error (exception class and message). The checkpoints are the ref
engineer's tests/fixtures/ckpt/{modernbert-tiny,mmbert-tiny}; nothing is downloaded.
"""
import dataclasses
import json
import os
import random
import sys
import warnings

import laya

warnings.simplefilter("ignore")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CKPTS = ["modernbert-tiny", "mmbert-tiny"]
rng = random.Random(7)

WORDS = ("the invoice was charged twice and the customer asks for a refund before friday "
         "server outage login error password reset shipping delayed parcel lost angry calm "
         "quarterly report revenue forecast meeting agenda deadline urgent please thanks "
         "Rechnung Paket verspätet bitte schnell remboursement commande livraison retard").split()


def text(n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


SCHEMAS = [
    {"type": "object", "properties": {"intent": {"enum": ["refund", "help", "other"]},
                                      "urgent": {"type": "boolean"},
                                      "anger": {"type": "integer", "minimum": 1, "maximum": 4}}},
    {"properties": {"code": {"enum": [1, 2, 3.5, None, True]}, "flag": {"enum": [True, False]},
                    "one": {"const": "yes"}}},
    {"properties": {"level": {"type": ["integer", "null"], "minimum": 0, "maximum": 2,
                              "description": "How bad is `request`?"},
                    "maybe": {"anyOf": [{"type": "boolean"}, {"type": "null"}],
                              "description": "Is `request` a question?"}}},
    {"$defs": {"Color": {"enum": ["red", "green"], "description": "A colour."}},
     "properties": {"c": {"$ref": "#/$defs/Color"},
                    "d": {"allOf": [{"$ref": "#/$defs/Color"}], "description": "Pick one"}}},
    {"definitions": {"Size": {"type": "integer", "minimum": -2, "maximum": 2}},
     "properties": {"s": {"$ref": "#/definitions/Size"}, "t": {"oneOf": [{"type": "boolean"}]}}},
]
BAD_SCHEMAS = [
    {"properties": {"name": {"type": "string"}}},
    {"properties": {"tags": {"type": "array"}}},
    {"properties": {"addr": {"type": "object"}}},
    {"properties": {"n": {"type": "number"}}},
    {"properties": {"n": {"type": "integer", "minimum": 0, "maximum": 10}}},
    {"properties": {"n": {"type": "integer", "minimum": 3, "maximum": 1}}},
    {"properties": {"n": {"type": "integer", "minimum": 0.5, "maximum": 3}}},
    {"properties": {"e": {"enum": []}}},
    {"properties": {"e": {"enum": "abc"}}},
    {"properties": {"e": {"enum": [1, "1"]}}},
    {"properties": {"e": {"enum": list(range(33))}}},
    {"properties": {("p%d" % i): {"type": "boolean"} for i in range(33)}},
    {"properties": {"u": {"anyOf": [{"type": "boolean"}, {"enum": ["a"]}]}}},
    {"properties": {"u": {"type": ["integer", "boolean"]}}},
    {"properties": {"r": {"$ref": "#/$defs/Missing"}}},
    {"$defs": {"A": {"$ref": "#/$defs/A"}}, "properties": {"r": {"$ref": "#/$defs/A"}}},
    {"properties": {"x": 5}},
    {"properties": {"x": {"format": "date"}}},
    {"type": "array", "properties": {"x": {"type": "boolean"}}},
    {"type": "object"},
    {"properties": {}},
    [1, 2],
]


def jsonable(x):
    if dataclasses.is_dataclass(x):
        return {f.name: jsonable(getattr(x, f.name)) for f in dataclasses.fields(x)}
    if isinstance(x, dict):
        return {k: jsonable(v) for k, v in x.items()}
    if isinstance(x, list):
        return [jsonable(v) for v in x]
    return x


def record(out, ckpt, call, request, fn):
    row = {"checkpoint": ckpt, "call": call, "request": request}
    try:
        row["result"] = jsonable(fn())
    except Exception as e:  # noqa: BLE001 - the error is the recorded outcome
        row["error"] = {"kind": type(e).__name__, "message": str(e)}
    out.write(json.dumps(row, ensure_ascii=False) + "\n")


def main(out_dir):
    dec = open(os.path.join(out_dir, "decide.jsonl"), "w", encoding="utf-8")
    lng = open(os.path.join(out_dir, "predict_long.jsonl"), "w", encoding="utf-8")
    n_dec = n_long = 0
    for ck in CKPTS:
        agent = laya.load(os.path.join(ROOT, "tests", "fixtures", "ckpt", ck), device="cpu")
        for schema in SCHEMAS:
            for details in (False, True):
                state = {"request": text(rng.randint(5, 40))}
                req = {"state": state, "schema": schema}
                if details:
                    req["return_details"] = True
                record(dec, ck, "decide", req, lambda: agent.decide(state, schema, return_details=details))
                n_dec += 1
            state = text(30)
            req = {"state": state, "schema": schema, "return_details": True, "min_confidence": 0.6}
            record(dec, ck, "decide", req,
                   lambda: agent.decide(state, schema, return_details=True, min_confidence=0.6))
            n_dec += 1
            states = [text(rng.randint(3, 60)) for _ in range(4)]
            req = {"states": states, "schema": schema, "batch_size": 2}
            record(dec, ck, "decide_batch", req, lambda: agent.decide_batch(states, schema, batch_size=2))
            n_dec += 1
        for schema in BAD_SCHEMAS:
            req = {"state": "x", "schema": schema}
            record(dec, ck, "decide", req, lambda: agent.decide("x", schema))
            n_dec += 1
        qs = {"a": {"type": "noul", "instructions": "Is `request` urgent?"}}
        record(dec, ck, "decide", {"state": "hi", "questions": qs}, lambda: agent.decide("hi", questions=qs))
        record(dec, ck, "decide", {"state": "hi"}, lambda: agent.decide("hi"))
        record(dec, ck, "decide", {"state": "hi", "schema": SCHEMAS[0], "questions": qs},
               lambda: agent.decide("hi", SCHEMAS[0], questions=qs))
        record(dec, ck, "decide", {"state": "hi", "schema": SCHEMAS[0], "min_confidence": 1.5},
               lambda: agent.decide("hi", SCHEMAS[0], min_confidence=1.5))
        record(dec, ck, "decide_batch", {"states": "abc", "schema": SCHEMAS[0]},
               lambda: agent.decide_batch("abc", SCHEMAS[0]))
        n_dec += 5

        # predict_long
        qsets = [
            {"topic": {"type": "choice", "instructions": "What is `text` about?",
                       "criteria": {"billing": "money", "tech": "computers", "other": None}},
             "urgent": {"type": "noul", "instructions": "Is it urgent?"},
             "tone": {"type": "score", "instructions": "How angry?", "criteria": ["calm", "cross", "furious"]}},
            {"flag": {"type": "noul", "instructions": "Does it mention a refund?", "labels": ["no", "yes"]}},
        ]
        for i in range(12):
            qsx = qsets[i % 2]
            n = rng.choice([20, 120, 300, 500])
            state = text(n) if i % 3 else {"document": text(n), "id": i}
            req = {"state": state, "questions": qsx}
            kw = {}
            if i % 4 == 1:
                kw["window"] = rng.choice([50, 100, 2000])
            if i % 4 == 2:
                kw["window"] = 120
                kw["stride"] = rng.choice([60, 120])
            if i % 5 == 3:
                kw["batch_size"] = 2
            req.update(kw)
            record(lng, ck, "predict_long", req, lambda: agent.predict_long(state, qsx, **kw))
            n_long += 1
        big = {"big": {"type": "choice", "instructions": "Pick",
                       "criteria": {("label_%d" % k): ("a long description " * 6) for k in range(40)}}}
        errs = [({"state": text(500), "questions": qsets[1], "aggregate": "mean"}, {"aggregate": "mean"}),
                ({"state": text(500), "questions": qsets[1], "window": 100, "stride": 150},
                 {"window": 100, "stride": 150}),
                ({"state": text(250), "questions": big}, {}),
                ({"state": text(50), "questions": {"q": {"type": "maybe", "instructions": "x"}}}, {})]
        for req, kw in errs:
            record(lng, ck, "predict_long", req,
                   lambda: agent.predict_long(req["state"], req["questions"], **kw))
            n_long += 1
    print("decide cases: %d, predict_long cases: %d" % (n_dec, n_long))


if __name__ == "__main__":
    main(sys.argv[1])
