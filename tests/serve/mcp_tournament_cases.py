"""laya_tournament calls both MCP servers are asked (record_mcp_tournament.py records Laya's answers).

Laya's tool takes group_size through pydantic's lax int (True is 1, "8" and 8.0 are 8); a value it
cannot read as an int is refused with pydantic's own text, which laya-mcp does not copy (it says
invalid_group_size), so no such case is here."""

ST = {"message": "I was charged twice for one order and the app keeps crashing, please help."}
TEAMS = ["billing", "refunds", "payments", "invoices", "crashes", "login", "performance", "security",
         "shipping", "returns", "warranty", "accounts", "privacy", "sales", "partners", "press", "legal",
         "hiring", "careers", "events", "docs", "api", "mobile", "desktop", "web", "other"]


def choice(n, described=True, instructions="Which team should handle this?"):
    labels = TEAMS[:n]
    crit = {t: ("questions about %s" % t if described else "") for t in labels}
    return {"type": "choice", "instructions": instructions, "criteria": crit}


NOUL = {"type": "noul", "instructions": "Does the message ask for money back?"}
SCORE = {"type": "score", "instructions": "How upset is the customer?", "criteria": ["calm", "annoyed", "angry"]}


def cases():
    c = []
    add = lambda name, args: c.append((name, "laya_tournament", args))
    add("one_round", {"state": ST, "questions": {"team": choice(26)}})
    add("two_rounds_group_4", {"state": ST, "questions": {"team": choice(26)}, "group_size": 4})
    add("group_2", {"state": ST, "questions": {"team": choice(9)}, "group_size": 2})
    add("no_round", {"state": ST, "questions": {"team": choice(6)}})
    add("mixed", {"state": ST, "questions": {"team": choice(20, False), "refund": NOUL, "upset": SCORE,
                                             "small": choice(3, instructions="Which of these?")},
                  "group_size": 5})
    add("pinned", {"state": ST, "questions": {"team": choice(26)}, "model": "multilingual", "group_size": 8})
    add("lang_de", {"state": {"t": "Die App stürzt ab und ich wurde doppelt belastet."},
                    "questions": {"team": choice(26)}, "group_size": 6, "lang": "de"})
    add("budgets", {"state": ST, "questions": {"team": choice(26)}, "group_size": 8, "max_len": 256,
                    "head_max_len": 96, "min_confidence": 0.5})
    q = choice(26)
    q["option_order"] = list(reversed(range(26)))
    add("option_order_narrowed", {"state": ST, "questions": {"team": q}, "group_size": 8})
    q = choice(5)
    q["option_order"] = [4, 3, 2, 1, 0]
    add("option_order_kept", {"state": ST, "questions": {"team": q}, "group_size": 8})
    add("bad_group_1", {"state": ST, "questions": {"team": choice(26)}, "group_size": 1})
    add("bad_group_bool", {"state": ST, "questions": {"team": choice(26)}, "group_size": True})
    add("bad_group_str", {"state": ST, "questions": {"team": choice(26)}, "group_size": "8"})
    add("group_float_8", {"state": ST, "questions": {"team": choice(26)}, "group_size": 8.0})
    add("bad_task_pinned", {"state": ST, "questions": {"team": choice(26)}, "model": "english", "task": "english"})
    add("bad_model", {"state": ST, "questions": {"team": choice(26)}, "model": "klingon"})
    add("bad_questions", {"state": ST, "questions": {}})
    add("bad_state", {"state": {}, "questions": {"team": choice(26)}})
    add("bad_max_len", {"state": ST, "questions": {"team": choice(26)}, "max_len": 0})
    return c
