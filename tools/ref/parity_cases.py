"""The parity requests: what gen_parity.py sends to laya, per fixture checkpoint.

Each case is {"id", "api", "agent": {"lang_temperatures": ...}, "request": "<JSON text>"}. Most
request texts are json.dumps of a Python object; the ones under "raw" are written by hand so
that the exact text matters (1.50 vs 1.5, key order, escapes, NaN, huge numbers, duplicates).
"""
import json

import faker

# Per-checkpoint special-token spellings (the mask token is scrubbed from text by laya; the others
# are added tokens that must be matched inside ordinary text).
SPECIALS = {
    "modernbert-tiny": {"mask": "[MASK]", "other_mask": "<mask>",
                        "others": ["[CLS]", "[SEP]", "[PAD]", "[UNK]", "<|endoftext|>", "<|padding|>",
                                   "|||EMAIL_ADDRESS|||", "|||IP_ADDRESS|||", "[unused7]"]},
    "mmbert-tiny": {"mask": "<mask>", "other_mask": "[MASK]",
                    "others": ["<bos>", "<eos>", "<pad>", "<unk>", "<start_of_turn>", "<unused3>",
                               "<0x41>", "<2mass>", "[@BOS@]"]},
}

LANG_TEMPS = {
    "de": {"temperature": [2.0, 0.8, 1.5], "temperature_by_options": {"choice:3-5": 3.0, "noul:2": 0.7}},
    "PT-br": {"temperature": [0.9, 1.1, 4.5]},
    "fr": None,
    "es": {"temperature": None, "temperature_by_options": {"score:3-5": 2.2}},
    "it": {"temperature": [True, 99, 0.01], "temperature_by_options": {"choice:2": "hot", "noul:2": 7}},
}


def dumps(obj):
    return json.dumps(obj, ensure_ascii=False)


class Cases:
    def __init__(self):
        self.items = []
        self.ids = set()

    def add(self, cid, api, request, lang_temperatures=None):
        assert cid not in self.ids, cid
        self.ids.add(cid)
        text = request if isinstance(request, str) else dumps(request)
        json.loads(text)  # every request text must be valid for Python's json.loads
        self.items.append({"id": cid, "api": api, "agent": {"lang_temperatures": lang_temperatures},
                           "request": text})

    def predict(self, cid, state, questions, lang_temperatures=None, **kw):
        req = {"state": state, "questions": questions}
        req.update(kw)
        self.add(cid, "predict", req, lang_temperatures)

    def batch(self, cid, states, questions, lang_temperatures=None, **kw):
        req = {"states": states, "questions": questions}
        req.update(kw)
        self.add(cid, "predict_batch", req, lang_temperatures)


def texts():
    """Deterministic realistic texts (Faker, seeded; the caller pins PYTHONHASHSEED)."""
    out = {}
    en = faker.Faker("en_US")
    en.seed_instance(7)
    out["short"] = "The parcel arrived broken and I want my money back."
    out["support"] = ("Hi, I ordered a blender (order #48213) two weeks ago. It arrived with a cracked jug, "
                      "and the replacement you promised never came. Please refund me or send a new one today.")
    out["paragraphs"] = " ".join(en.paragraph(nb_sentences=8) for _ in range(6))
    out["long"] = " ".join(en.paragraph(nb_sentences=10) for _ in range(40))       # > 1024 tokens
    out["medium"] = " ".join(en.paragraph(nb_sentences=6) for _ in range(5))
    locs = ["de_DE", "fr_FR", "ru_RU", "ja_JP", "zh_CN", "ar_AA", "he_IL", "hi_IN", "th_TH", "ko_KR",
            "el_GR", "hy_AM", "ka_GE", "bn_BD", "ta_IN", "vi_VN", "tr_TR", "pl_PL", "uk_UA", "fa_IR"]
    out["multi"] = {}
    for loc in locs:
        f = faker.Faker(loc)
        f.seed_instance(11)
        out["multi"][loc] = "%s, %s. %s" % (f.name(), f.address().replace("\n", ", "), f.text(max_nb_chars=300))
    out["profiles"] = []
    for i in range(6):
        f = faker.Faker(locs[i * 3 % len(locs)])
        f.seed_instance(100 + i)
        out["profiles"].append({"name": f.name(), "city": f.city(), "job": f.job(),
                                "balance": round(f.pyfloat(4, 2), 2), "visits": f.pyint(0, 9999),
                                "vip": f.pybool(), "tags": [f.word(), f.word()]})
    return out


def build(ckpt):
    sp = SPECIALS[ckpt]
    M = sp["mask"]
    T = texts()
    c = Cases()

    # ---------------------------------------------------------------- question building blocks
    intent = {"type": "choice", "instructions": "What does the customer want?",
              "criteria": {"refund": "money back", "replace": "a new item", "info": "an answer to a question"}}
    urgency = {"type": "score", "instructions": "How urgent is this message?",
               "criteria": ["not urgent", "somewhat urgent", "urgent", "extremely urgent"]}
    complaint = {"type": "noul", "instructions": "Is this a complaint?"}
    basic = {"intent": intent, "urgency": urgency, "complaint": complaint}

    # ---------------------------------------------------------------- 1. basic types x state kinds
    states = {
        "str": T["support"],
        "short": T["short"],
        "dict": {"ticket": 48213, "channel": "email", "body": T["short"], "amount": 39.9},
        "list": [{"role": "user", "content": "My blender is broken."},
                 {"role": "assistant", "content": "Sorry to hear that! What happened?"},
                 {"role": "user", "content": "The jug cracked on day one. I want a refund."}],
        "nested": {"customer": T["profiles"][0], "history": [T["profiles"][1], T["profiles"][2]],
                   "scores": [1.5, 2.25, -0.0, 1e-07, 1e+22], "flags": {"a": True, "b": None}},
        "empty_str": "",
        "spaces": "   ",
        "empty_list": [],
        "empty_dict": {},
        "number": 42,
        "float": 3.14,
        "bool": True,
        "list_of_str": ["first turn", "second turn", "third turn"],
    }
    for name, st in states.items():
        c.predict("basic/%s" % name, st, basic)
    for q in ("intent", "urgency", "complaint"):
        c.predict("single/%s" % q, T["support"], {q: basic[q]})

    # ---------------------------------------------------------------- 2. choice criteria forms
    choice_forms = {
        "dict_desc": {"spam": "unsolicited advertising", "ham": "a normal message"},
        "dict_empty_desc": {"spam": "", "ham": ""},
        "dict_null_desc": {"spam": None, "ham": "a normal message"},
        "dict_zero_false_desc": {"zero": 0, "false": False, "empty": ""},
        "dict_structured_desc": {"a": {"desc": "first", "weight": 1.5}, "b": ["x", 2, None, True],
                                 "c": 3, "d": 2.5, "e": True, "f": {"nested": {"deep": [1, {"k": "v"}]}}},
        "dict_unicode": {"oui": "d'accord, ça marche", "non": "pas du tout 🙅", "peut-être": "哈哈 — 未定"},
        "list_str": ["billing", "shipping", "technical", "other"],
        "list_ints": [1, 2, 3, 10, -5, 0],
        "list_floats": [0.5, 1.5, 2.0, 1e-07, 1e+16, -0.0, 0.30000000000000004],
        "list_bools": [True, False],
        "list_mixed": ["yes", 1, 2.5, False, "", "  padded  "],
        "list_bigint": [12345678901234567890123, -98765432109876543210, 7],
        "list_single": ["only"],
        "dict_single": {"only": "the one and only option"},
        "list_similar": ["option number one", "option number two", "option number one!"],
    }
    for name, crit in choice_forms.items():
        c.predict("choice/%s" % name, T["support"], {"q": {"type": "choice", "instructions": "Pick the best label.",
                                                           "criteria": crit}})
    # Hand-written texts where the exact request text matters.
    raw = [
        ("raw/float_key_order", '{"state": {"b": 1.50, "a": 2.000, "c": 1E5, "d": 1e-5, "e": -0.0, "f": 100000000000000000000},'
         ' "questions": {"q": {"type": "noul", "instructions": "Is the amount above 1?"}}}'),
        ("raw/duplicate_keys", '{"state": {"a": 1, "b": 2, "a": 3}, "questions": {"q": {"type": "noul",'
         ' "instructions": "Dup?", "instructions": "Is a equal to 3?"}}}'),
        ("raw/escapes", '{"state": "tab\\there \\"quoted\\" back\\\\slash \\/ \\u00e9\\u0301 \\ud83d\\ude00 \\u0000\\u001f\\u007f\\u2028",'
         ' "questions": {"q": {"type": "choice", "instructions": "Kind?", "criteria": ["\\u00e9", "e\\u0301", "\\ud83d\\ude00"]}}}'),
        ("raw/nan_inf_state", '{"state": {"x": NaN, "y": Infinity, "z": -Infinity, "big": 1e400},'
         ' "questions": {"q": {"type": "score", "instructions": "How odd?", "criteria": ["normal", "odd", "very odd"]}}}'),
        ("raw/nan_label", '{"state": "numbers", "questions": {"q": {"type": "choice", "instructions": "Which?",'
         ' "criteria": [NaN, Infinity, -Infinity, 1.0e2]}}}'),
        ("raw/huge_numbers", '{"state": [123456789012345678901234567890, 1.7976931348623157e308, 5e-324, 0.1, 1.0, 10.0, 1e15, 1e16, 1.23456789012345678],'
         ' "questions": {"q": {"type": "noul", "instructions": "Any huge?"}}}'),
        ("raw/dup_json_key_labels", '{"state": "one or one?", "questions": {"q": {"type": "choice", "instructions": "Which one?",'
         ' "criteria": ["1", 1, "true", false, "false", 2.5, "2.5", "True"]}}}'),
        ("raw/whitespace_layout", '{\n  "state" :\t{ "k" : [ 1 , 2.50 , "x" ] } ,\n  "questions" : { "q" : { "type" : "noul" , "instructions" : "ok?" } }\n}'),
        ("raw/qid_order", '{"state": "order test", "questions": {"zeta": {"type": "noul", "instructions": "z?"},'
         ' "alpha": {"type": "noul", "instructions": "a?"}, "10": {"type": "noul", "instructions": "ten?"},'
         ' "2": {"type": "noul", "instructions": "two?"}}}'),
        ("raw/float_labels_text", '{"state": "pick", "questions": {"q": {"type": "choice", "instructions": "Pick a number",'
         ' "criteria": [1.50, 2.0, 3e0, 4E+1, 0.1e1]}}}'),
        ("raw/float_levels_text", '{"state": "pick", "questions": {"q": {"type": "score", "instructions": "Rate",'
         ' "criteria": [1.50, 2.0, {"b": 1.50, "a": 2.0}, [1.0, 1e5]]}}}'),
    ]
    for cid, text in raw:
        c.add(cid, "predict", text)

    # ---------------------------------------------------------------- 3. score forms
    score_forms = {
        "strings": ["bad", "ok", "good"],
        "numbers": [1, 2, 3, 4, 5],
        "floats": [0.0, 0.5, 1.0],
        "structured": [{"label": "low", "max": 10}, ["medium", 20], "high", 3.5, True, False],
        "one_level": ["the only level"],
        "two_levels": ["no", "yes"],
        "seven": ["l%d" % i for i in range(7)],
        "eleven": ["level %d of eleven" % i for i in range(11)],
        "unicode": ["😀 low", "中 middle", "высокий"],
        "empty_strings": ["", "", "x"],
    }
    for name, crit in score_forms.items():
        c.predict("score/%s" % name, T["support"], {"q": {"type": "score", "instructions": "Rate it.", "criteria": crit}})

    # ---------------------------------------------------------------- 4. noul forms
    noul_forms = {
        "default": {},
        "crit_empty": {"criteria": {}},
        "crit_null": {"criteria": None},
        "only_true": {"criteria": {"true": "the customer is angry"}},
        "only_false": {"criteria": {"false": "the customer is calm"}},
        "both": {"criteria": {"false": "calm", "true": "angry"}},
        "empty_values": {"criteria": {"false": "", "true": ""}},
        "null_values": {"criteria": {"false": None, "true": None}},
        "structured": {"criteria": {"true": {"signals": ["caps", "!!!"], "min": 2}, "false": [1, 2.5]}},
        "upper_keys": {"criteria": {"TRUE": "angry", "False": "calm"}},
        "zero_value": {"criteria": {"true": 0, "false": False}},
        "labels": {"labels": {"false": "no", "true": "yes"}},
        "labels_padded": {"labels": {"false": "  nope ", "true": "\tyep\n"}},
        "labels_unicode": {"labels": {"false": "nein ❌", "true": "ja ✅"}, "criteria": {"true": "zutreffend"}},
        "labels_swapped_order": {"labels": {"true": "B", "false": "A"}},
        "labels_null": {"labels": None},
        "order_swapped": {"option_order": [1, 0]},
        "order_labels": {"option_order": [1, 0], "labels": {"false": "F", "true": "T"},
                         "criteria": {"true": "holds", "false": "fails"}},
    }
    for name, extra in noul_forms.items():
        q = {"type": "noul", "instructions": "Is the customer upset?"}
        q.update(extra)
        c.predict("noul/%s" % name, T["support"], {"q": q})

    # ---------------------------------------------------------------- 5. option_order
    c.predict("order/choice", T["support"], {"q": dict(intent, option_order=[2, 0, 1])})
    c.predict("order/choice_identity", T["support"], {"q": dict(intent, option_order=[0, 1, 2])})
    c.predict("order/score", T["support"], {"q": dict(urgency, option_order=[3, 1, 0, 2])})
    c.predict("order/list_labels", T["support"], {"q": {"type": "choice", "instructions": "Pick",
                                                        "criteria": [3, "b", 1.5, True], "option_order": [3, 2, 1, 0]}})
    c.predict("order/many", T["medium"], {"q": {"type": "choice", "instructions": "Which topic?",
                                                "criteria": ["topic %d" % i for i in range(12)],
                                                "option_order": [(i * 5) % 12 for i in range(12)]}})
    c.predict("order/same_question_twice", T["support"], {"a": intent, "b": dict(intent, option_order=[1, 2, 0])})

    # ---------------------------------------------------------------- 6. instructions
    ins_forms = {
        "dict": {"task": "classify", "lang": "en", "weight": 1.50},
        "list": ["classify", "the", "intent", 1, 2.5, None],
        "int": 7,
        "zero": 0,
        "float": 2.5,
        "false": False,
        "true": True,
        "unicode": "Quelle est l'intention du client ? 客户想要什么？ 🤔",
        "long": "Read the message carefully and decide. " * 60,
        "newlines": "Line one\nLine two\n\n\nLine five\ttabbed\t\tend",
        "spaces": "a  b   c    d" + " " * 30 + "e",
        "mask": "Is %s the answer? %s%s" % (M, M, M),
        "other_mask": "Is %s the answer?" % sp["other_mask"],
        "specials": "Check " + " ".join(sp["others"]) + " done",
    }
    for name, ins in ins_forms.items():
        c.predict("ins/%s" % name, T["support"], {"q": {"type": "choice", "instructions": ins,
                                                        "criteria": ["a", "b", "c"]},
                                                  "n": {"type": "noul", "instructions": ins}})

    # ---------------------------------------------------------------- 7. special tokens and odd text
    c.predict("text/mask_in_state", "before %s middle %s%s after %s" % (M, M, M, M), basic)
    c.predict("text/mask_in_dict_state", {"note": "see %s" % M, M: "key is the mask"}, basic)
    c.predict("text/mask_in_list_state", ["%s" % M, {"c": M}], basic)
    c.predict("text/mask_in_options", T["short"], {"q": {"type": "choice", "instructions": "Pick",
                                                         "criteria": {M: "mask label", "x": "has %s inside" % M,
                                                                      "y%s" % M: M}},
                                                   "s": {"type": "score", "instructions": "Rate",
                                                         "criteria": [M, "%s level" % M]},
                                                   "n": {"type": "noul", "instructions": "ok?",
                                                         "criteria": {"true": M}, "labels": {"false": M, "true": "y"}}})
    c.predict("text/other_mask", "literal %s and %s" % (sp["other_mask"], sp["other_mask"]), basic)
    c.predict("text/specials_in_state", " ".join(sp["others"]) + " plain " + "".join(sp["others"]), basic)
    c.predict("text/specials_in_options", T["short"], {"q": {"type": "choice", "instructions": "Pick",
                                                             "criteria": sp["others"]}})
    c.predict("text/emoji", "I love it 😍😍 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 #1️⃣ ✨✨✨", basic)
    c.predict("text/combining", "e\u0301 a\u0300 n\u0303 \u1e9b\u0323 \u0041\u030a \u212b Å é é ﬁ ① ²", basic)
    c.predict("text/control", "a\u0000b\u0001c\u0007d\u0008e\u000bf\u000cg\u001bh\u001fi\u007fj\u0085k\u00a0l\u2028m\u2029n\ufeffo", basic)
    c.predict("text/whitespace_runs", "a  b   c    d" + " " * 24 + "e" + " " * 40 + "f\n\ng\n\n\n\nh\t\ti\t\t\t\tj \n \t k\r\nl",
              basic)
    c.predict("text/only_newlines", "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n", basic)
    c.predict("text/long_word", "x" * 3000 + " " + "日本語" * 300, basic)
    c.predict("text/cjk_run", "".join(T["multi"][k] for k in ("ja_JP", "zh_CN", "ko_KR")).replace(" ", ""), basic)
    c.predict("text/rtl", T["multi"]["ar_AA"] + " " + T["multi"]["he_IL"] + " " + T["multi"]["fa_IR"], basic)
    c.predict("text/json_like_string", '{"not": "parsed", "n": 1.50}', basic)
    c.predict("text/email_ip", "write to jane.doe@example.com or 192.168.0.1 |||PHONE_NUMBER||| now", basic)
    for loc, text in T["multi"].items():
        c.predict("multi/%s" % loc, text, basic)
    c.batch("multi/batch", list(T["multi"].values()), basic, batch_size=4)

    # ---------------------------------------------------------------- 8. truncation
    c.predict("trunc/long_str", T["long"], basic)
    c.predict("trunc/long_dict", {"doc": T["long"], "meta": {"id": 1}}, basic)
    c.predict("trunc/long_list", [T["paragraphs"], T["medium"], T["long"], "the newest turn says REFUND NOW"], basic)
    c.predict("trunc/long_list_of_turns", [{"turn": i, "text": "message number %d about the order" % i} for i in range(200)],
              basic)
    c.predict("trunc/medium_small_max", T["medium"], basic, max_len=96, head_max_len=48)
    c.predict("trunc/list_small_max", ["turn %d" % i for i in range(80)], basic, max_len=80, head_max_len=40)
    c.predict("trunc/mixed_questions", T["paragraphs"], {
        "few": {"type": "noul", "instructions": "ok?"},
        "many": {"type": "choice", "instructions": "topic?", "criteria": ["topic number %d with words" % i for i in range(30)]},
    }, max_len=256)

    # ---------------------------------------------------------------- 9. option counts and caps
    for n in (1, 2, 3, 5, 6, 10, 11, 16, 25, 40, 60):
        c.predict("opts/choice_%d" % n, T["support"], {"q": {"type": "choice", "instructions": "Which category fits?",
                                                             "criteria": ["category %d" % i for i in range(n)]}})
    for n in (2, 3, 6, 11, 30, 60):
        c.predict("opts/score_%d" % n, T["support"], {"q": {"type": "score", "instructions": "Rate.",
                                                            "criteria": ["level %d" % i for i in range(n)]}})
    long_desc = "This option has a long description that keeps going " * 12
    c.predict("opts/long_desc_48cap", T["support"], {"q": {"type": "choice", "instructions": "Pick",
                                                           "criteria": {"a": long_desc, "b": "short", "c": long_desc + "!"}}})
    c.predict("opts/per_option_cap", T["support"], {"q": {"type": "choice", "instructions": "Pick the matching department",
                                                          "criteria": {"dept%d" % i: long_desc for i in range(8)}}})
    c.predict("opts/collapse", T["support"], {"q": {"type": "choice", "instructions": "Pick",
                                                    "criteria": ["shared prefix words for every option number %d" % i
                                                                 for i in range(20)]}})
    c.predict("opts/collapse_score", T["support"], {"q": {"type": "score", "instructions": "Rate",
                                                          "criteria": ["identical leading text goes here then %d" % i
                                                                       for i in range(25)]}})
    c.predict("opts/60_long", T["medium"], {"q": {"type": "choice", "instructions": "Which label?",
                                                  "criteria": {"label_%02d" % i: "description of label %d " % i * 6
                                                               for i in range(60)}}})
    c.predict("opts/long_ins_many_opts", T["support"], {"q": {"type": "choice", "instructions": "Decide carefully. " * 40,
                                                              "criteria": ["option %d" % i for i in range(40)]}})
    c.predict("opts/head_zero", T["support"], basic, head_max_len=0)
    c.predict("opts/head_negative", T["support"], basic, head_max_len=-20)
    c.predict("opts/head_big", T["paragraphs"], basic, head_max_len=400)

    # ---------------------------------------------------------------- 10. max_len / head_max_len
    for ml, hl in ((64, 32), (128, 64), (200, 16), (300, 300), (1024, 192), (40, 192)):
        c.predict("budget/ml%d_hl%d" % (ml, hl), T["paragraphs"], basic, max_len=ml, head_max_len=hl)
    c.predict("budget/overflow_error", T["support"], {"q": {"type": "choice", "instructions": "Pick",
                                                            "criteria": ["option number %d" % i for i in range(30)]}},
              max_len=40)
    c.predict("budget/max_len_zero", T["short"], basic, max_len=0)
    c.predict("budget/max_len_tiny_noul", T["short"], {"n": complaint}, max_len=12, head_max_len=8)
    c.batch("budget/batch_overrides", [T["short"], T["paragraphs"], ["a", "b"]], basic, max_len=100, head_max_len=50)

    # ---------------------------------------------------------------- 11. min_confidence
    for v in (0.0, 0.35, 0.5, 0.9, 1.0, 1):
        c.predict("minconf/%s" % v, T["support"], dict(basic, one={"type": "choice", "instructions": "Only one",
                                                                  "criteria": ["solo"]}), min_confidence=v)
    c.predict("minconf/map", T["support"], basic, min_confidence={"choice:3-5": 0.6, "score:3-5": 0.2, "default": 0.55})
    c.predict("minconf/map_no_default", T["support"], basic, min_confidence={"noul:2": 0.99})
    c.batch("minconf/batch", [T["support"], T["short"]], basic, min_confidence=0.45)
    c.predict("minconf/empty_questions", T["short"], {}, min_confidence=0.5)
    for name, v in (("negative", -0.1), ("above", 1.5), ("bool", True), ("string", "0.5"), ("null_list", [0.5]),
                    ("empty_map", {}), ("bad_key", {"choice:12": 0.5}), ("bad_value", {"choice:2": 2}),
                    ("bool_value", {"default": False})):
        c.predict("minconf/invalid_%s" % name, T["short"], basic, min_confidence=v)
    c.add("minconf/invalid_nan", "predict", '{"state": "x", "questions": {}, "min_confidence": NaN}')
    c.add("minconf/invalid_inf", "predict", '{"state": "x", "questions": {}, "min_confidence": Infinity}')
    c.batch("minconf/invalid_before_states", [], basic, min_confidence=2)

    # ---------------------------------------------------------------- 12. lang and lang_temperatures
    for lang in ("de", "de-AT", "DE", "pt-BR", "pt", "fr", "es", "it", "xx", ""):
        c.predict("lang/%s" % (lang or "empty"), T["support"], dict(basic, many={"type": "choice", "instructions": "topic",
                                                                                  "criteria": ["t%d" % i for i in range(12)]}),
                  lang_temperatures=LANG_TEMPS, lang=lang)
    c.predict("lang/no_overrides", T["support"], basic, lang="de")
    c.batch("lang/batch_de", [T["support"], T["short"]], basic, lang_temperatures=LANG_TEMPS, lang="de")
    c.predict("lang/min_conf_de", T["support"], basic, lang_temperatures=LANG_TEMPS, lang="de-CH", min_confidence=0.4)

    # ---------------------------------------------------------------- 13. predict_batch
    mixed = [T["support"], T["short"], states["dict"], states["list"], "", T["paragraphs"], {"n": [1, 2.5]}]
    c.batch("batch/all_in_one", mixed, basic)
    for bs in (1, 2, 3, 0, -1):
        c.batch("batch/bs_%d" % bs, mixed, basic, batch_size=bs)
    c.batch("batch/sorted_bs2", mixed, basic, batch_size=2, sort_by_length=True)
    c.batch("batch/sorted_bs3", mixed + [T["medium"], "x"], basic, batch_size=3, sort_by_length=True)
    c.batch("batch/sorted_no_bs", mixed, basic, sort_by_length=True)
    c.batch("batch/sorted_bs_ge_n", mixed, basic, batch_size=10, sort_by_length=True)
    c.batch("batch/one_state", [T["support"]], basic)
    c.batch("batch/empty_states", [], basic)
    c.batch("batch/empty_states_invalid_q", [], {"q": {"type": "bogus"}})
    c.batch("batch/empty_questions", [T["short"], "x"], {})
    c.batch("batch/duplicates", [T["short"], T["short"], T["short"]], basic, batch_size=2)
    c.batch("batch/many_questions", [T["short"], T["support"]],
            {"q%d" % i: {"type": ["choice", "score", "noul"][i % 3], "instructions": "question %d" % i,
                         "criteria": (["a", "b", "c"] if i % 3 == 0 else ["lo", "mid", "hi", "top"] if i % 3 == 1 else None)}
             for i in range(12)}, batch_size=1)
    c.batch("batch/long_and_short", [T["long"], "x", T["medium"]], basic, batch_size=2, sort_by_length=True)
    c.batch("batch/error_state_none", [T["short"], None], basic)
    c.batch("batch/error_state_string", T["short"], basic)
    c.batch("batch/error_state_dict", {"a": 1}, basic)
    c.batch("batch/error_questions_list", [T["short"]], [intent])
    c.batch("batch/error_questions_null", [T["short"]], None)
    c.batch("batch/invalid_question", [T["short"], "y"], {"ok": complaint, "bad": {"type": "noul"}})

    # ---------------------------------------------------------------- 14. predict-level edge cases
    c.predict("edge/empty_questions", T["short"], {})
    c.predict("edge/state_null", None, basic)
    c.predict("edge/questions_list", T["short"], [complaint])
    c.predict("edge/questions_string", T["short"], "complaint")
    c.predict("edge/unicode_qids", T["short"], {"é": complaint, "日本": urgency, "emoji 🙂": intent, "it's": complaint,
                                                "say \"hi\"": complaint, "both '\"": complaint, "tab\tnl\n": complaint})

    # ---------------------------------------------------------------- 15. invalid questions (validator)
    bad = {
        "qid_empty": ("", complaint),
        "qid_spaces": ("   ", complaint),
        "def_list": ("q", [1, 2]),
        "def_string": ("q", "noul"),
        "def_null": ("q", None),
        "def_number": ("q", 3),
        "type_missing": ("q", {"instructions": "x"}),
        "type_unknown": ("q", {"type": "multi", "instructions": "x"}),
        "type_number": ("q", {"type": 2, "instructions": "x"}),
        "type_upper": ("q", {"type": "Choice", "instructions": "x", "criteria": ["a"]}),
        "ins_missing": ("q", {"type": "noul"}),
        "ins_null": ("q", {"type": "noul", "instructions": None}),
        "ins_empty": ("q", {"type": "noul", "instructions": ""}),
        "ins_blank": ("q", {"type": "noul", "instructions": " \t\n "}),
        "ins_empty_list": ("q", {"type": "noul", "instructions": []}),
        "ins_empty_dict": ("q", {"type": "noul", "instructions": {}}),
        "choice_no_crit": ("q", {"type": "choice", "instructions": "x"}),
        "choice_crit_null": ("q", {"type": "choice", "instructions": "x", "criteria": None}),
        "choice_crit_string": ("q", {"type": "choice", "instructions": "x", "criteria": "a,b"}),
        "choice_crit_number": ("q", {"type": "choice", "instructions": "x", "criteria": 5}),
        "choice_crit_empty_list": ("q", {"type": "choice", "instructions": "x", "criteria": []}),
        "choice_crit_empty_dict": ("q", {"type": "choice", "instructions": "x", "criteria": {}}),
        "choice_label_dict": ("q", {"type": "choice", "instructions": "x", "criteria": ["a", {"b": 1}]}),
        "choice_label_list": ("q", {"type": "choice", "instructions": "x", "criteria": [["a"], "b"]}),
        "choice_label_null": ("q", {"type": "choice", "instructions": "x", "criteria": ["a", None]}),
        "choice_dup": ("q", {"type": "choice", "instructions": "x", "criteria": ["a", "b", "a"]}),
        "choice_dup_int_float": ("q", {"type": "choice", "instructions": "x", "criteria": [1, 1.0]}),
        "choice_dup_true_one": ("q", {"type": "choice", "instructions": "x", "criteria": [True, 1]}),
        "choice_dup_false_zero": ("q", {"type": "choice", "instructions": "x", "criteria": ["z", 0, False]}),
        "choice_dup_unicode": ("q", {"type": "choice", "instructions": "x", "criteria": ["é", "ü", "é"]}),
        "choice_labels_key": ("q", {"type": "choice", "instructions": "x", "criteria": ["a", "b"],
                                    "labels": {"false": "n", "true": "y"}}),
        "score_crit_dict": ("q", {"type": "score", "instructions": "x", "criteria": {"0": "low"}}),
        "score_no_crit": ("q", {"type": "score", "instructions": "x"}),
        "score_crit_string": ("q", {"type": "score", "instructions": "x", "criteria": "low,high"}),
        "score_empty": ("q", {"type": "score", "instructions": "x", "criteria": []}),
        "score_null_level": ("q", {"type": "score", "instructions": "x", "criteria": ["a", "b", None, None]}),
        "score_labels_key": ("q", {"type": "score", "instructions": "x", "criteria": ["a", "b"], "labels": {}}),
        "noul_crit_list": ("q", {"type": "noul", "instructions": "x", "criteria": ["no", "yes"]}),
        "noul_crit_string": ("q", {"type": "noul", "instructions": "x", "criteria": "yes"}),
        "noul_crit_number": ("q", {"type": "noul", "instructions": "x", "criteria": 0}),
        "noul_crit_bad_keys": ("q", {"type": "noul", "instructions": "x", "criteria": {"yes": "a", "no": "b", "true": "c"}}),
        "noul_crit_one_bad_key": ("q", {"type": "noul", "instructions": "x", "criteria": {"Maybe": "a"}}),
        "noul_labels_list": ("q", {"type": "noul", "instructions": "x", "labels": ["n", "y"]}),
        "noul_labels_missing": ("q", {"type": "noul", "instructions": "x", "labels": {"true": "y"}}),
        "noul_labels_extra": ("q", {"type": "noul", "instructions": "x", "labels": {"true": "y", "false": "n", "maybe": "m"}}),
        "noul_labels_number": ("q", {"type": "noul", "instructions": "x", "labels": {"true": 1, "false": 0}}),
        "noul_labels_blank": ("q", {"type": "noul", "instructions": "x", "labels": {"true": "y", "false": "  "}}),
        "noul_labels_same": ("q", {"type": "noul", "instructions": "x", "labels": {"true": "same", "false": " same "}}),
        "order_string": ("q", dict(intent, option_order="012")),
        "order_dict": ("q", dict(intent, option_order={"0": 1})),
        "order_number": ("q", dict(intent, option_order=0)),
        "order_short": ("q", dict(intent, option_order=[0, 1])),
        "order_long": ("q", dict(intent, option_order=[0, 1, 2, 3])),
        "order_dup": ("q", dict(intent, option_order=[0, 0, 1])),
        "order_range": ("q", dict(intent, option_order=[1, 2, 3])),
        "order_negative": ("q", dict(intent, option_order=[-1, 0, 1])),
        "order_floats": ("q", dict(intent, option_order=[0.0, 1.0, 2.0])),
        "order_bools": ("q", {"type": "noul", "instructions": "x", "option_order": [True, False]}),
        "order_strings": ("q", dict(intent, option_order=["0", "1", "2"])),
        "order_null": ("q", dict(intent, option_order=None)),
        "order_noul_three": ("q", {"type": "noul", "instructions": "x", "option_order": [0, 1, 2]}),
        "order_bad_crit": ("q", {"type": "choice", "instructions": "x", "criteria": "abc", "option_order": [0]}),
        "qid_quote": ("it's", {"type": "bogus", "instructions": "x"}),
        "qid_unicode": ("naïve 🙂", {"type": "noul"}),
        "qid_control": ("a\u0007b\u0000\u2028", {"type": "noul", "instructions": None}),
        "qid_both_quotes": ("'\"", {"type": "noul", "instructions": ""}),
        "qid_backslash": ("back\\slash", {"type": "score", "instructions": "x", "criteria": [None]}),
        "label_repr_float": ("q", {"type": "choice", "instructions": "x", "criteria": [1e16, 1e16]}),
        "label_repr_unicode": ("q", {"type": "choice", "instructions": "x", "criteria": ["日本\n", "日本\n"]}),
        "label_repr_tuple_type": ("q", {"type": "choice", "instructions": "x", "criteria": [1.5, {"x": [1, 2]}]}),
    }
    for name, (qid, qdef) in bad.items():
        c.predict("invalid/%s" % name, T["short"], {"good": complaint, qid: qdef})
    # Only the first invalid question is reported.
    c.predict("invalid/first_of_two", T["short"], {"a": {"type": "x"}, "b": {"type": "noul"}})
    c.predict("invalid/after_valid_batch", T["short"], dict(basic, z={"type": "choice", "instructions": "x", "criteria": []}))
    # State problems win over question problems? (state None is checked before the questions)
    c.predict("invalid/state_null_and_bad_q", None, {"q": {"type": "bogus"}})
    c.add("invalid/lone_surrogate_state", "predict",
          '{"state": "broken \\ud800 text", "questions": {"q": {"type": "noul", "instructions": "ok?"}}}')
    c.add("invalid/lone_surrogate_option", "predict",
          '{"state": "fine", "questions": {"q": {"type": "choice", "instructions": "x", "criteria": ["a\\udc00"]}}}')

    # ---------------------------------------------------------------- 16. realistic mixes
    for i, prof in enumerate(T["profiles"]):
        c.predict("profile/%d" % i, prof, {
            "tier": {"type": "choice", "instructions": "Which customer tier?",
                     "criteria": {"bronze": "new or low spend", "silver": "regular", "gold": "high spend",
                                  "platinum": "top 1%"}},
            "risk": {"type": "score", "instructions": "Churn risk", "criteria": ["none", "low", "medium", "high", "critical"]},
            "vip": {"type": "noul", "instructions": "Should this customer get VIP treatment?",
                    "labels": {"false": "standard", "true": "VIP"}},
        })
    c.batch("profile/batch_sorted", T["profiles"], {"vip": {"type": "noul", "instructions": "VIP?"},
                                                     "tier": {"type": "choice", "instructions": "Tier",
                                                              "criteria": ["bronze", "silver", "gold"]}},
            batch_size=2, sort_by_length=True)
    return c.items
