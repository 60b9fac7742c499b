#!/usr/bin/env python3
"""Build the two small fixture tokenizers with Hugging Face `tokenizers`.

They copy the component types, flags and id layout of the tokenizers the real Laya checkpoints
ship (see shared/reference/laya-ports-and-fast-path.md, A.2.1), with real BPE merges trained on
a multilingual corpus (tools/ref/corpus.py, Faker's locale data), at a size that fits a fixture:

  modernbert-mini  ModernBERT-large style: byte-level BPE, NFC, ByteLevel pre-tokenizer with the
                   GPT-2 regex, [CLS] $A [SEP] template, 116 added tokens (28 of them inside
                   model.vocab, among them runs of 2..24 spaces; 88 after it, from [UNK] on).
  mmbert-mini      mmBERT / Gemma-2 style: BPE with byte fallback (no <0x09>), <unk> + fuse_unk,
                   Replace " "->"▁", Metaspace (prepend always, split), Gemma decoder, special
                   ids <pad> 0 <eos> 1 <bos> 2 <unk> 3 <mask> 4, runs of newlines and tabs as
                   added tokens.

Usage: make_tokenizers.py [OUT_ROOT]   (default: tests/fixtures/tokenizers next to this repo)
Output is byte-identical across runs for pinned versions (see setup.sh).
"""
import json
import os
import sys
from collections import Counter

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bpe_train  # noqa: E402
import corpus  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))


def added(id_, content, special, normalized, lstrip=False, rstrip=False, single_word=False):
    return {"id": id_, "content": content, "single_word": single_word, "lstrip": lstrip,
            "rstrip": rstrip, "normalized": normalized, "special": special}


def learn(tokenizer, lines, alphabet, n_tokens):
    """Merges that bring `alphabet` up to exactly `n_tokens` distinct pieces."""
    counts = bpe_train.word_counts(tokenizer, lines)
    want = n_tokens - len(alphabet)
    merges = bpe_train.train(counts, alphabet, want + want // 4)
    out, seen = [], set(alphabet)
    for a, b in merges:
        if len(seen) == n_tokens:
            break
        out.append((a, b))
        seen.add(a + b)
    assert len(seen) == n_tokens, ("corpus too small for the vocabulary", len(seen), n_tokens)
    return list(alphabet) + [t for t in bpe_train.merged_tokens(out) if t not in set(alphabet)], out


# --------------------------------------------------------------------------------------------
# ModernBERT style
# --------------------------------------------------------------------------------------------

def build_modernbert(lines, n_vocab=4000):
    # ByteLevel.alphabet() has all 256 byte symbols; valid UTF-8 can never produce 13 of them
    # (0xC0, 0xC1, 0xF5..0xFF) and ModernBERT's vocab lacks exactly those, so drop them too.
    unreachable = {bytes([b]) for b in [0xC0, 0xC1] + list(range(0xF5, 0x100))}
    b2u = byte_to_unicode()
    alphabet = [u for b, u in b2u.items() if bytes([b]) not in unreachable]

    n_space_runs = 23          # "  " .. 24 spaces
    head = ["|||IP_ADDRESS|||", "<|padding|>"]
    tail_specials = ["|||EMAIL_ADDRESS|||", "|||PHONE_NUMBER|||", "<|endoftext|>"]
    n_trained = n_vocab - len(head) - n_space_runs - len(tail_specials)

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
    trained, merge_pairs = learn(tok, lines, alphabet, n_trained)

    tokens = list(head) + trained
    space_ids = {}
    # Longest run first, as in the OLMo/GPT-NeoX vocabulary ModernBERT inherits. The vocab key
    # is the raw run of spaces, not its byte-level spelling: `tokenizers` resolves an added
    # token's id through model.vocab by content, so only the raw key keeps these ids inside the
    # vocab (BPE itself can never produce a raw space, it sees "Ġ").
    for n in range(24, 1, -1):
        space_ids[n] = len(tokens)
        tokens.append(" " * n)
    tokens += tail_specials
    assert len(tokens) == n_vocab and len(set(tokens)) == n_vocab
    vocab = {t: i for i, t in enumerate(tokens)}

    at = [added(0, "|||IP_ADDRESS|||", special=False, normalized=True),
          added(1, "<|padding|>", special=True, normalized=False)]
    for n in range(24, 1, -1):
        at.append(added(space_ids[n], " " * n, special=False, normalized=True))
    at.append(added(vocab["|||EMAIL_ADDRESS|||"], "|||EMAIL_ADDRESS|||", special=False, normalized=True))
    at.append(added(vocab["|||PHONE_NUMBER|||"], "|||PHONE_NUMBER|||", special=False, normalized=True))
    at.append(added(vocab["<|endoftext|>"], "<|endoftext|>", special=True, normalized=False))
    nid = n_vocab
    ids = {}
    for name in ("[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"):
        ids[name] = nid
        at.append(added(nid, name, special=True, normalized=False, lstrip=(name == "[MASK]")))
        nid += 1
    for i in range(83):
        at.append(added(nid, "[unused%d]" % i, special=False, normalized=True))
        nid += 1
    assert len(at) == 116 and sum(a["id"] >= n_vocab for a in at) == 88

    # ModernBERT's file predates the pair form of merges: write them as "a b" strings, which is
    # safe because no byte-level symbol contains a space.
    merges = ["%s %s" % m for m in merge_pairs]
    assert all(" " not in a and " " not in b for a, b in merge_pairs)

    cls_, sep = ids["[CLS]"], ids["[SEP]"]
    out = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": at,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                          "use_regex": True},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [cls_], "tokens": ["[CLS]"]},
                               "[SEP]": {"id": "[SEP]", "ids": [sep], "tokens": ["[SEP]"]}},
        },
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False, "vocab": vocab, "merges": merges},
    }
    config = {
        "added_tokens_decoder": added_tokens_decoder(at),
        "clean_up_tokenization_spaces": True,
        "cls_token": "[CLS]",
        "mask_token": "[MASK]",
        "model_input_names": ["input_ids", "attention_mask"],
        "model_max_length": 8192,
        "pad_token": "[PAD]",
        "sep_token": "[SEP]",
        "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": "[UNK]",
    }
    special_map = {
        "cls_token": spec("[CLS]"), "mask_token": spec("[MASK]", lstrip=True), "pad_token": spec("[PAD]"),
        "sep_token": spec("[SEP]"), "unk_token": spec("[UNK]"),
    }
    expect = {"cls_token_id": cls_, "sep_token_id": sep, "pad_token_id": ids["[PAD]"],
              "mask_token_id": ids["[MASK]"], "unk_token_id": ids["[UNK]"], "mask_token": "[MASK]",
              "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "unk_token": "[UNK]"}
    return out, config, special_map, expect


# --------------------------------------------------------------------------------------------
# mmBERT / Gemma-2 style
# --------------------------------------------------------------------------------------------

def build_mmbert(lines, n_vocab=8000):
    head = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<2mass>", "[@BOS@]"]
    head += ["<unused%d>" % i for i in range(24)]
    head += ["<start_of_turn>", "<end_of_turn>"]
    newlines = ["\n" * n for n in range(1, 32)]
    tabs = ["\t" * n for n in range(1, 32)]
    # Gemma-2's byte tokens: every byte except 0x09, whose character is the one-tab added token.
    byte_tokens = ["<0x%02X>" % b for b in range(256) if b != 0x09]
    n_trained = n_vocab - len(head) - len(newlines) - len(byte_tokens) - len(tabs)

    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tok.normalizer = normalizers.Replace(" ", "▁")
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    # A limited alphabet leaves rare characters (many CJK ideographs, some Indic signs) to byte
    # fallback, which is what the fixtures must exercise. Printable ASCII is always in it.
    char_counts = Counter()
    for line in lines:
        char_counts.update(tok.normalizer.normalize_str(line))
    alphabet = [chr(c) for c in range(0x21, 0x7F)] + ["▁"]
    for ch, _ in sorted(char_counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if len(alphabet) == 700:
            break
        if ch not in alphabet and ch not in "\t\n":
            alphabet.append(ch)
    trained, merge_pairs = learn(tok, lines, alphabet, n_trained)

    tokens = head + newlines + byte_tokens + trained + tabs
    assert len(tokens) == n_vocab and len(set(tokens)) == n_vocab, "a trained piece collides"
    vocab = {t: i for i, t in enumerate(tokens)}

    at = []
    for t in head:
        special = t in ("<pad>", "<eos>", "<bos>", "<unk>", "<mask>")
        at.append(added(vocab[t], t, special=special, normalized=False, lstrip=(t == "<mask>")))
    for t in newlines + tabs:
        at.append(added(vocab[t], t, special=False, normalized=False))
    at.sort(key=lambda a: a["id"])

    merges = [list(m) for m in merge_pairs]
    out = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": at,
        "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
        "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "<eos>", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<bos>", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "<eos>", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "<eos>", "type_id": 1}}],
            "special_tokens": {"<bos>": {"id": "<bos>", "ids": [2], "tokens": ["<bos>"]},
                               "<eos>": {"id": "<eos>", "ids": [1], "tokens": ["<eos>"]}},
        },
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"},
            {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0},
        ]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True,
                  "ignore_merges": False, "vocab": vocab, "merges": merges},
    }
    config = {
        "added_tokens_decoder": added_tokens_decoder(at),
        "bos_token": "<bos>",
        "clean_up_tokenization_spaces": False,
        "cls_token": "<bos>",
        "eos_token": "<eos>",
        "mask_token": "<mask>",
        "model_max_length": 8192,
        "pad_token": "<pad>",
        "sep_token": "<eos>",
        "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": "<unk>",
    }
    special_map = {
        "bos_token": spec("<bos>"), "cls_token": spec("<bos>"), "eos_token": spec("<eos>"),
        "mask_token": spec("<mask>", lstrip=True), "pad_token": spec("<pad>"), "sep_token": spec("<eos>"),
        "unk_token": spec("<unk>"),
    }
    expect = {"cls_token_id": 2, "sep_token_id": 1, "pad_token_id": 0, "mask_token_id": 4,
              "unk_token_id": 3, "mask_token": "<mask>", "cls_token": "<bos>", "sep_token": "<eos>",
              "pad_token": "<pad>", "unk_token": "<unk>"}
    return out, config, special_map, expect


# --------------------------------------------------------------------------------------------

def byte_to_unicode():
    """GPT-2's byte -> printable character table (what the ByteLevel pre-tokenizer uses)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def spec(content, lstrip=False):
    return {"content": content, "lstrip": lstrip, "normalized": False, "rstrip": False, "single_word": False}


def added_tokens_decoder(at):
    return {str(a["id"]): {"content": a["content"], "lstrip": a["lstrip"], "normalized": a["normalized"],
                           "rstrip": a["rstrip"], "single_word": a["single_word"], "special": a["special"]}
            for a in at}


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=2)
        f.write("\n")


def check(dirpath, expect, tj):
    """Load the result back through both `tokenizers` and transformers and check the roles."""
    tk = Tokenizer.from_file(os.path.join(dirpath, "tokenizer.json"))
    for a in tj["added_tokens"]:
        got = tk.token_to_id(a["content"])
        assert got == a["id"], ("added token id moved on load", a, got)
    from transformers import AutoTokenizer
    t = AutoTokenizer.from_pretrained(dirpath)
    for k, v in expect.items():
        assert getattr(t, k) == v, (dirpath, k, getattr(t, k), v)
    # Laya encodes with add_special_tokens=False; the template must only apply when asked.
    assert t("a", add_special_tokens=False)["input_ids"] == tk.encode("a", add_special_tokens=False).ids
    return t


def main():
    corpus.pin_hash_seed()
    out_root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "tests", "fixtures", "tokenizers")
    lines = list(corpus.training_lines())
    for name, build in (("modernbert-mini", build_modernbert), ("mmbert-mini", build_mmbert)):
        tj, config, special_map, expect = build(lines)
        d = os.path.join(out_root, name)
        os.makedirs(d, exist_ok=True)
        write_json(os.path.join(d, "tokenizer.json"), tj)
        write_json(os.path.join(d, "tokenizer_config.json"), config)
        write_json(os.path.join(d, "special_tokens_map.json"), special_map)
        t = check(d, expect, tj)
        print("%s: %d vocab + %d added tokens (%d past the vocab), len(tokenizer)=%d"
              % (name, len(tj["model"]["vocab"]), len(tj["added_tokens"]),
                 sum(a["id"] >= len(tj["model"]["vocab"]) for a in tj["added_tokens"]), len(t)))


if __name__ == "__main__":
    main()
