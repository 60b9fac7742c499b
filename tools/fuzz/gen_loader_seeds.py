"""Writes the seed corpora of the loader fuzz targets (tests/fuzz/seeds/{safetensors,model_config,
artifact}): small valid inputs and the hostile ones of issue 18's attack list, so both libFuzzer and
the CTest replay (fuzz/replay_*) start from them.

    python3 tools/fuzz/gen_loader_seeds.py
"""
import json
import os
import re
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEEDS = os.path.join(ROOT, "tests", "fuzz", "seeds")
CKPT = os.path.join(ROOT, "tests", "fixtures", "ckpt")


def write(sub, name, data):
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
    d = os.path.join(SEEDS, sub)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def st(header, data=b""):
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data


def safetensors():
    f32 = struct.pack("<3f", 1.5, -2.0, 0.25)
    write("safetensors", "000_valid_three_dtypes", st(
        {"__metadata__": {"format": "pt"}, "a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]},
         "b": {"dtype": "F16", "shape": [1, 3], "data_offsets": [12, 18]},
         "c": {"dtype": "BF16", "shape": [3, 1], "data_offsets": [18, 24]}},
        f32 + struct.pack("<3H", 0x3E00, 0xC000, 0x3400) + struct.pack("<3H", 0x3FC0, 0xC000, 0x3E80)))
    # the shape whose element count overflowed int64 to 0 (UBSan abort; release took it as 0 bytes)
    write("safetensors", "001_overflow_2p32_2p32", st(
        {"big": {"dtype": "F32", "shape": [2 ** 32, 2 ** 32], "data_offsets": [0, 0]}}))
    write("safetensors", "002_overflow_4d", st(
        {"big": {"dtype": "BF16", "shape": [65536, 65536, 65536, 65536], "data_offsets": [0, 0]}}))
    # an empty tensor between two that overlap (hid the overlap from a neighbours-only check)
    write("safetensors", "003_overlap_hidden_by_empty", st(
        {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
         "e": {"dtype": "F32", "shape": [0], "data_offsets": [2, 2]},
         "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, f32))
    write("safetensors", "004_nan_inf", st(
        {"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]},
         "h": {"dtype": "F16", "shape": [2], "data_offsets": [12, 16]}},
        struct.pack("<3I", 0x7fc00000, 0x7f800000, 0x3f800000) + struct.pack("<2H", 0x7c00, 0x3c00)))
    write("safetensors", "005_header_past_end", struct.pack("<Q", 1 << 40) + b"{}")
    write("safetensors", "006_offsets_past_end", st(
        {"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, f32))
    # the tiny fixture's real header (its data cut off: offsets past the end, a realistic refusal)
    raw = open(os.path.join(CKPT, "modernbert-tiny", "model.safetensors"), "rb").read()
    (hl,) = struct.unpack("<Q", raw[:8])
    write("safetensors", "007_fixture_header_only", raw[:8 + hl])


def model_config():
    for ck in ("modernbert-tiny", "mmbert-tiny"):
        enc = open(os.path.join(CKPT, ck, "encoder", "config.json"), "rb").read()
        agent = open(os.path.join(CKPT, ck, "rl_agent_config.json"), "rb").read()
        write("model_config", "enc_%s" % ck, b"\x00" + enc)
        write("model_config", "agent_%s" % ck, b"\x01" + agent)
    base = json.loads(open(os.path.join(CKPT, "modernbert-tiny", "encoder", "config.json")).read())
    for key, val in (("num_hidden_layers", 10 ** 7), ("hidden_size", 2 ** 30), ("vocab_size", 2 ** 31 - 1),
                     ("intermediate_size", 10 ** 9), ("num_attention_heads", 100000),
                     ("max_position_embeddings", 2 ** 31 - 1), ("num_hidden_layers", 0)):
        write("model_config", "enc_bomb_%s_%d" % (key, val), b"\x00" + json.dumps(dict(base, **{key: val})).encode())
    write("model_config", "enc_transformers5", b"\x00" + json.dumps(dict(
        base, rope_parameters={"full_attention": {"rope_theta": 160000.0}, "sliding_attention": {"rope_theta": 10000.0}},
        layer_types=["full_attention", "sliding_attention", "sliding_attention"] * 2)).encode())
    agent = json.loads(open(os.path.join(CKPT, "modernbert-tiny", "rl_agent_config.json")).read())
    for key, val in (("max_len", 10 ** 9), ("max_len", 0), ("max_len", -4), ("head_max_len", 0),
                     ("head_max_len", -1), ("head_layers", 10 ** 9), ("temperature", [1.0, "x"]),
                     ("temperature_by_options", {"choice:2": float("nan")})):
        write("model_config", "agent_bomb_%s_%s" % (key, str(val).replace(" ", "")[:16]),
              b"\x01" + json.dumps(dict(agent, **{key: val})).encode())


def artifact():
    # just past the magic check: truncated headers and a header pointing past the file
    hdr = b"LAYAPAK\x00" + struct.pack("<II", 1, 0)
    write("artifact", "000_magic_only", b"LAYAPAK\x00")
    write("artifact", "001_header_truncated", hdr + b"\x00" * 8)
    index = json.dumps({"format": "laya-artifact", "version": 1, "arrays": {}, "files": {}}).encode()
    body = hdr + struct.pack("<QQQQ", 64, len(index), 64 + len(index), 64) + b"\x00" * 16
    write("artifact", "002_empty_index", body + index)
    write("artifact", "003_index_past_end", hdr + struct.pack("<QQQQ", 1 << 40, 1 << 20, 64, 64) + b"\x00" * 16)


if __name__ == "__main__":
    safetensors()
    model_config()
    artifact()
