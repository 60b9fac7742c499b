"""The HTTP cases both servers are asked: request bodies and the configuration they run under.

Shared by record_python.py (which asks the real Python `laya-serve` from laya 0.4.15 and writes
fixtures/python_cases.json) and test_http.py (which asks our laya-serve and compares). Each case
is (name, path, body bytes or JSON-able value, extra headers).
"""
import json

CHOICE = {"type": "choice", "instructions": "Which team should handle this?",
          "criteria": {"billing": "payments, refunds, invoices", "tech": "bugs, crashes, errors",
                       "other": "anything else"}}
SCORE = {"type": "score", "instructions": "How upset is the customer?",
         "criteria": ["calm", "annoyed", "angry", "furious"]}
NOUL = {"type": "noul", "instructions": "Does the message ask for money back?"}
QS = {"team": CHOICE, "upset": SCORE, "refund": NOUL}


def many_options(n):
    return {"type": "choice", "instructions": "Pick one.", "criteria": {"o%d" % i: "option %d" % i for i in range(n)}}


def cases():
    one, batch = "/v1/systemone", "/v1/systemone/batch"
    c = []
    add = lambda name, path, body, headers=None: c.append((name, path, body, headers or {}))
    # answers
    add("ok_english", one, {"state": "I was charged twice, please refund me.", "questions": QS})
    add("ok_dict_state", one, {"state": {"from": "ana", "body": "The app crashes on start."}, "questions": QS})
    add("ok_list_state", one, {"state": ["hello", 1, 2.5, True, None], "questions": {"team": CHOICE}})
    add("ok_german", one, {"state": "Ich möchte mein Geld zurück, die Rechnung ist doppelt.", "questions": QS})
    add("ok_unicode_emoji", one, {"state": "refund please \U0001F600 \u00e9\u00e8", "questions": {"refund": NOUL}})
    add("ok_surrogate_pair_escape", one, b'{"state": "ok \\ud83d\\ude00", "questions": {"refund": {"type": "noul", "instructions": "Refund?"}}}')
    add("ok_empty_questions", one, {"state": "hello", "questions": {}})
    add("ok_model_pin", one, {"state": "refund please", "questions": QS, "model": "multilingual"})
    add("ok_model_alias_ml", one, {"state": "refund please", "questions": QS, "model": "ML"})
    add("ok_model_published_id", one, {"state": "refund please", "questions": QS, "model": "convaiinnovations/laya-multilingual"})
    add("ok_model_bundle_id", one, {"state": "refund please", "questions": QS, "model": "convaiinnovations/laya"})
    add("ok_model_jev_id", one, {"state": "refund please", "questions": QS, "model": "jev-1"})
    add("ok_model_empty", one, {"state": "refund please", "questions": QS, "model": ""})
    add("ok_lang_de", one, {"state": "refund please", "questions": QS, "lang": "de"})
    add("ok_lang_guess_fr", one, {"state": "refund please", "questions": QS, "lang_guess": "fr"})
    add("ok_lang_null", one, {"state": "refund please", "questions": QS, "lang": None})
    add("ok_max_len", one, {"state": "refund please " * 40, "questions": QS, "max_len": 48})
    add("ok_head_max_len", one, {"state": "refund please", "questions": QS, "head_max_len": 32})
    add("ok_min_confidence", one, {"state": "refund please", "questions": QS, "min_confidence": 0.5})
    add("ok_min_confidence_map", one, {"state": "refund please", "questions": QS, "min_confidence": {"choice:3-5": 0.9, "default": 0.1}})
    add("ok_hooks_null", one, {"state": "refund please", "questions": QS, "hooks": None})
    add("ok_bom", one, b'\xef\xbb\xbf{"state": "bom", "questions": {}}')
    add("ok_extra_fields", one, {"state": "refund please", "questions": {"refund": NOUL}, "temperature": 3, "stream": True})
    add("ok_choice_list_criteria", one, {"state": "refund please", "questions": {"q": {"type": "choice", "instructions": "Pick", "criteria": ["yes", "no"]}}})
    add("ok_noul_labels", one, {"state": "refund please", "questions": {"q": {"type": "noul", "instructions": "Refund?", "labels": {"false": "no refund", "true": "refund"}}}})
    add("ok_option_order", one, {"state": "refund please", "questions": {"q": dict(CHOICE, option_order=[2, 0, 1])}})
    # request shape
    add("bad_json", one, b'{"state": "x", "questions": {')
    add("bad_json_empty", one, b"")
    add("bad_json_trailing", one, b'{"state": "x", "questions": {}} x')
    add("bad_utf8", one, b'{"state": "\xff\xfe", "questions": {}}')
    add("bad_huge_int", one, ('{"state": %s, "questions": {}}' % ("9" * 5000)).encode())
    add("bad_deep_nesting", one, ('{"state": ' + "[" * 5000 + "]" * 5000 + ', "questions": {}}').encode())
    add("not_object", one, [1, 2])
    add("no_questions", one, {"state": "x"})
    add("null_questions", one, {"state": "x", "questions": None})
    add("questions_list", one, {"state": "x", "questions": [1]})
    add("no_state", one, {"questions": QS})
    add("null_state", one, {"state": None, "questions": QS})
    add("too_many_questions", one, {"state": "x", "questions": {"q%d" % i: NOUL for i in range(65)}})
    add("too_many_choice_options", one, {"state": "x", "questions": {"big": many_options(101)}})
    add("choice_options_at_cap", one, {"state": "x", "questions": {"big": many_options(100)}, "head_max_len": 4000})
    add("too_many_score_levels", one, {"state": "x", "questions": {"s": {"type": "score", "instructions": "i", "criteria": ["l"] * 33}}})
    add("null_score_level", one, {"state": "x", "questions": {"s": {"type": "score", "instructions": "i", "criteria": ["a", None, "b"]}}})
    add("too_many_total_options", one, {"state": "x", "questions": {"c%d" % i: many_options(100) for i in range(6)}})
    add("state_too_large_str", one, {"state": "a" * 50001, "questions": {}})
    add("state_at_cap_str", one, {"state": "a" * 50000, "questions": {}})
    add("state_too_large_dict", one, {"state": {"body": "\"" * 30000}, "questions": {}})
    add("state_too_large_lower_bound", one, {"state": {"a": "x" * 40000, "b": "y" * 20000}, "questions": {}})
    add("state_too_large_nonascii", one, {"state": "\u00e9" * 50001, "questions": {}})
    add("hooks_refused", one, {"state": "x", "questions": QS, "on_predict_start": "f", "hooks": [1], "hooks_timeout": 3})
    add("lone_surrogate_state", one, b'{"state": "bad \\ud800 here", "questions": {}}')
    add("lone_surrogate_key", one, b'{"state": {"\\udc00": 1}, "questions": {}}')
    add("model_path_refused", one, {"state": "x", "questions": QS, "model": "./my-ckpt"})
    add("model_repo_refused", one, {"state": "x", "questions": QS, "model": "someone/some-model"})
    add("model_number", one, {"state": "x", "questions": QS, "model": 5})
    add("max_len_zero", one, {"state": "x", "questions": QS, "max_len": 0})
    add("max_len_negative", one, {"state": "x", "questions": QS, "max_len": -3})
    add("max_len_string", one, {"state": "x", "questions": QS, "max_len": "64"})
    add("max_len_bool", one, {"state": "x", "questions": QS, "max_len": True})
    add("max_len_float", one, {"state": "x", "questions": QS, "max_len": 64.0})
    add("max_len_over_budget", one, {"state": "x", "questions": QS, "max_len": 9000})
    add("max_len_huge", one, {"state": "x", "questions": QS, "max_len": 10 ** 30})
    add("head_max_len_over_budget", one, {"state": "x", "questions": QS, "head_max_len": 8193})
    add("lang_number", one, {"state": "x", "questions": QS, "lang": 5})
    add("lang_guess_bool", one, {"state": "x", "questions": QS, "lang_guess": True})
    add("min_confidence_over", one, {"state": "x", "questions": QS, "min_confidence": 1.5})
    add("min_confidence_bool", one, {"state": "x", "questions": QS, "min_confidence": True})
    add("min_confidence_string", one, {"state": "x", "questions": QS, "min_confidence": "0.5"})
    add("min_confidence_bad_map_key", one, {"state": "x", "questions": QS, "min_confidence": {"choice:7": 0.5}})
    add("min_confidence_empty_map", one, {"state": "x", "questions": QS, "min_confidence": {}})
    add("min_confidence_nan", one, b'{"state": "x", "questions": {}, "min_confidence": NaN}')
    add("task_unknown", one, {"state": "x", "questions": QS, "task": "nope"})
    add("task_with_model", one, {"state": "x", "questions": {"refund": NOUL}, "task": "nope", "model": "english"})
    # core question errors (ValueError -> 422 with its text)
    add("q_bad_type", one, {"state": "x", "questions": {"q": {"type": "rank", "instructions": "i"}}})
    add("q_no_instructions", one, {"state": "x", "questions": {"q": {"type": "noul"}}})
    add("q_choice_no_criteria", one, {"state": "x", "questions": {"q": {"type": "choice", "instructions": "i"}}})
    add("q_duplicate_labels", one, {"state": "x", "questions": {"q": {"type": "choice", "instructions": "i", "criteria": ["a", "a"]}}})
    add("q_not_object", one, {"state": "x", "questions": {"q": "nope"}})
    # batch
    add("batch_ok", batch, {"states": ["refund please", {"msg": "app crashes"}, "Ich will mein Geld zurück"], "questions": QS})
    add("batch_ok_one", batch, {"states": ["refund please"], "questions": {"refund": NOUL}})
    add("batch_batch_size", batch, {"states": ["a", "b", "c"], "questions": {"refund": NOUL}, "batch_size": 2})
    add("batch_sort_by_length", batch, {"states": ["a much longer state here", "b"], "questions": {"refund": NOUL}, "sort_by_length": True})
    add("batch_sort_false", batch, {"states": ["a", "b"], "questions": {"refund": NOUL}, "sort_by_length": False})
    add("batch_min_confidence", batch, {"states": ["a", "b"], "questions": QS, "min_confidence": 0.6})
    add("batch_no_states", batch, {"questions": QS})
    add("batch_no_questions", batch, {"states": ["a"]})
    add("batch_states_not_list", batch, {"states": "a", "questions": QS})
    add("batch_states_empty", batch, {"states": [], "questions": QS})
    add("batch_too_many_states", batch, {"states": ["a"] * 65, "questions": QS})
    add("batch_null_state", batch, {"states": ["a", None], "questions": QS})
    add("batch_state_too_large", batch, {"states": ["a", "b" * 50001], "questions": {}})
    add("batch_batch_size_zero", batch, {"states": ["a"], "questions": QS, "batch_size": 0})
    add("batch_batch_size_string", batch, {"states": ["a"], "questions": QS, "batch_size": "2"})
    add("batch_batch_size_bool", batch, {"states": ["a"], "questions": QS, "batch_size": True})
    add("batch_sort_string", batch, {"states": ["a"], "questions": QS, "sort_by_length": "yes"})
    add("batch_diagnostics", batch, {"states": ["a"], "questions": QS, "diagnostics": {}})
    add("batch_hooks", batch, {"states": ["a"], "questions": QS, "hooks_raise": True})
    add("batch_lone_surrogate", batch, b'{"states": ["ok", "\\udfff"], "questions": {}}')
    add("batch_bad_json", batch, b'{"states": [')
    # 2 states x 9 questions x 8192 tokens is over LAYA_MAX_BATCH_TOKENS: Laya passes batch_size=1
    add("batch_chunked_budget", batch, {"states": ["refund me", "where is my parcel"], "questions": {"q%d" % i: NOUL for i in range(9)}, "max_len": 8192})
    return c


def encode(body):
    return body if isinstance(body, bytes) else json.dumps(body).encode()
