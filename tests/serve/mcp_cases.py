"""MCP tool calls both servers are asked (record_mcp_python.py records Laya's answers)."""

NOUL = {"type": "noul", "instructions": "Does the message ask for money back?"}
CHOICE = {"type": "choice", "instructions": "Which team should handle this?",
          "criteria": {"billing": "payments, refunds", "tech": "bugs, crashes", "other": "anything else"}}
SCORE = {"type": "score", "instructions": "How upset is the customer?", "criteria": ["calm", "annoyed", "angry"]}
QS = {"team": CHOICE, "upset": SCORE, "refund": NOUL}
ST = {"message": "I was charged twice, please refund me."}


def cases():
    c = []
    add = lambda name, tool, args: c.append((name, tool, args))
    add("route", "laya_route", {"state": ST, "questions": QS})
    add("route_pinned", "laya_route", {"state": ST, "questions": QS, "model": "ML"})
    add("route_lang", "laya_route", {"state": ST, "questions": QS, "lang": "de"})
    add("route_task_and_model", "laya_route", {"state": ST, "questions": QS, "model": "english", "task": "english"})
    add("route_guess_and_model", "laya_route", {"state": ST, "questions": QS, "model": "english", "lang_guess": "fr"})
    add("route_bad_task", "laya_route", {"state": ST, "questions": QS, "task": "nope"})
    add("predict", "laya_predict", {"state": ST, "questions": QS})
    add("predict_pinned", "laya_predict", {"state": ST, "questions": QS, "model": "multilingual"})
    add("predict_auto_word", "laya_predict", {"state": ST, "questions": QS, "model": "AUTO"})
    add("predict_min_conf", "laya_predict", {"state": ST, "questions": QS, "min_confidence": 0.6})
    add("predict_budgets", "laya_predict", {"state": ST, "questions": QS, "max_len": 256, "head_max_len": 64})
    add("predict_labels", "laya_predict", {"state": ST, "questions": {"q": dict(NOUL, labels={"false": "no", "true": "yes"})}})
    add("predict_option_order", "laya_predict", {"state": ST, "questions": {"q": dict(CHOICE, option_order=[1, 2, 0])}})
    add("predict_extra_keys_dropped", "laya_predict", {"state": ST, "questions": {"q": dict(NOUL, note="ignored")}})
    add("predict_empty_state", "laya_predict", {"state": {}, "questions": QS})
    add("predict_empty_questions", "laya_predict", {"state": ST, "questions": {}})
    add("predict_bad_type", "laya_predict", {"state": ST, "questions": {"q": {"type": "rank", "instructions": "i"}}})
    add("predict_no_instructions", "laya_predict", {"state": ST, "questions": {"q": {"type": "noul", "instructions": "  "}}})
    add("predict_choice_list", "laya_predict", {"state": ST, "questions": {"q": {"type": "choice", "instructions": "i", "criteria": ["a", "b"]}}})
    add("predict_score_null", "laya_predict", {"state": ST, "questions": {"q": {"type": "score", "instructions": "i", "criteria": ["a", None]}}})
    add("predict_noul_bad_criteria", "laya_predict", {"state": ST, "questions": {"q": dict(NOUL, criteria={"Yes": "x", "maybe": "y"})}})
    add("predict_labels_on_choice", "laya_predict", {"state": ST, "questions": {"q": dict(CHOICE, labels={"false": "a", "true": "b"})}})
    add("predict_labels_same", "laya_predict", {"state": ST, "questions": {"q": dict(NOUL, labels={"false": "x", "true": " x "})}})
    add("predict_bad_order", "laya_predict", {"state": ST, "questions": {"q": dict(CHOICE, option_order=[0, 0, 1])}})
    add("predict_bad_model", "laya_predict", {"state": ST, "questions": QS, "model": "klingon"})
    add("predict_bad_max_len", "laya_predict", {"state": ST, "questions": QS, "max_len": 0})
    add("predict_bad_head_max_len", "laya_predict", {"state": ST, "questions": QS, "head_max_len": -4})
    add("predict_bad_min_conf", "laya_predict", {"state": ST, "questions": QS, "min_confidence": 1.5})
    add("predict_task_pinned", "laya_predict", {"state": ST, "questions": QS, "model": "english", "task": "english"})
    add("predict_core_error", "laya_predict", {"state": ST, "questions": {"q": {"type": "choice", "instructions": "i", "criteria": {"a": "x", "b": "y"}}}, "max_len": 8})
    add("batch", "laya_predict_batch", {"requests": [{"state": ST, "questions": QS},
                                                     {"state": {"t": "Die App stürzt ab"}, "questions": QS},
                                                     {"state": ST, "questions": {"refund": NOUL}, "model": "multilingual"}]})
    add("batch_opts", "laya_predict_batch", {"requests": [{"state": ST, "questions": QS}, {"state": {"x": "hello"}, "questions": QS}],
                                             "batch_size": 1, "min_confidence": 0.5, "sort_by_length": True})
    add("batch_empty", "laya_predict_batch", {"requests": []})
    add("batch_item_not_object", "laya_predict_batch", {"requests": [{"state": ST, "questions": QS}, 5]})
    add("batch_item_bad_task", "laya_predict_batch", {"requests": [{"state": ST, "questions": QS, "task": ""}]})
    add("batch_item_bad_model", "laya_predict_batch", {"requests": [{"state": ST, "questions": QS, "model": "x"}]})
    add("batch_item_bad_budget", "laya_predict_batch", {"requests": [{"state": ST, "questions": QS, "max_len": 0}]})
    add("batch_bad_size", "laya_predict_batch", {"requests": [{"state": ST, "questions": QS}], "batch_size": -1})
    add("route_batch", "laya_route_batch", {"requests": [{"state": ST, "questions": QS},
                                                         {"state": {"t": "Die App stürzt ab, bitte helfen"}, "questions": QS},
                                                         {"state": ST, "questions": QS, "lang": "fr"}]})
    add("route_batch_empty", "laya_route_batch", {"requests": []})
    add("preset_bad", "laya_preset", {"preset": "nope", "state": ST})
    add("preset_empty_state", "laya_preset", {"preset": "triage", "state": {}})
    schema = {"type": "object", "properties": {
        "team": {"enum": ["billing", "tech", "other"], "description": "Which team should handle this?"},
        "refund": {"type": "boolean", "description": "Does the message ask for money back?"},
        "urgency": {"type": "integer", "minimum": 0, "maximum": 3, "description": "How urgent is it?"}}}
    add("decide", "laya_decide", {"state": ST, "schema": schema})
    add("decide_min_conf", "laya_decide", {"state": ST, "schema": schema, "min_confidence": 0.9})
    add("decide_pinned", "laya_decide", {"state": ST, "schema": schema, "model": "multilingual"})
    add("decide_bad_schema", "laya_decide", {"state": ST, "schema": {"type": "object", "properties": {"x": {"type": "string"}}}})
    add("decide_empty_state", "laya_decide", {"state": {}, "schema": schema})
    add("decide_bad_model", "laya_decide", {"state": ST, "schema": schema, "model": "zzz"})
    add("decide_bad_min_conf", "laya_decide", {"state": ST, "schema": schema, "min_confidence": -1})
    long_state = {"body": "The parcel arrived late. " * 60 + "Please refund me the shipping fee."}
    add("long", "laya_predict_long", {"state": long_state, "questions": QS})
    add("long_window", "laya_predict_long", {"state": long_state, "questions": {"refund": NOUL}, "window": 64, "stride": 32})
    add("long_pinned", "laya_predict_long", {"state": long_state, "questions": {"refund": NOUL}, "model": "multilingual"})
    add("long_bad_window", "laya_predict_long", {"state": long_state, "questions": QS, "window": 0})
    add("long_task_pinned", "laya_predict_long", {"state": long_state, "questions": QS, "model": "english", "task": "english"})
    add("long_empty_state", "laya_predict_long", {"state": {}, "questions": QS})
    return c


VOLATILE = ("latency_ms", "total_latency_ms", "per_request_latency_ms")
