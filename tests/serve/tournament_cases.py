"""Requests for LAYA_TOURNAMENT_GROUP on laya-serve (record_tournament.py, test_http.py tournament).

The server runs with LAYA_TOURNAMENT_GROUP=GROUP: a choice over GROUP options is answered by
elimination in groups (Laya's _predict_with_tournament), one at or under it in one pass; the cap
on a choice's options is 255 instead of 100. Each case: (name, path, body, strict) -- strict
cases are sent to a server with LAYA_JEV_STRICT=1 as well.
"""

GROUP = 4

TOPICS = ["billing", "refund", "shipping", "login", "password", "account", "delivery", "invoice",
          "coupon", "warranty", "return", "cancel", "upgrade", "downgrade", "privacy", "security",
          "feedback", "bug", "feature", "pricing", "contract", "support", "outage", "api"]


def labels(n, prefix="topic"):
    return ["%s %s %d" % (prefix, TOPICS[i % len(TOPICS)], i) for i in range(n)]


def choice_dict(n):
    return {"type": "choice", "instructions": "Which topic is the message about?",
            "criteria": {lab: "the customer writes about %s" % lab for lab in labels(n)}}


def choice_list(n, **extra):
    return dict({"type": "choice", "instructions": "Pick the topic.", "criteria": labels(n)}, **extra)


NOUL = {"type": "noul", "instructions": "Is the customer angry?"}
SCORE = {"type": "score", "instructions": "How urgent is it?", "criteria": ["not urgent", "somewhat", "very urgent"]}
STATE = "I was charged twice for my order and I want my money back today."
STATE2 = "My parcel never arrived and tracking says it is lost."


def cases():
    one, batch = "/v1/systemone", "/v1/systemone/batch"
    return [
        # one round (10 -> 3 winners), beside a noul and a score question
        ("one_round_mixed", one, {"state": STATE, "questions": {"topic": choice_dict(10), "angry": NOUL,
                                                                 "urgency": SCORE}}, True),
        # two rounds (20 -> 5 -> 2), list criteria
        ("two_rounds_list", one, {"state": STATE, "questions": {"topic": choice_list(20)}}, True),
        # at or under the group: one pass, no x_tournament
        ("under_group", one, {"state": STATE, "questions": {"small": choice_list(GROUP), "urgency": SCORE}}, False),
        # two large choices in one request, explicit model
        ("two_choices_model", one, {"state": STATE2, "model": "english",
                                    "questions": {"a": choice_dict(9), "b": choice_list(13), "angry": NOUL}}, False),
        # an option_order with at most 100 options keeps the one pass
        ("order_kept", one, {"state": STATE, "questions": {"topic": choice_list(10, option_order=list(range(9, -1, -1)))}}, False),
        # over 100 options (only the raised cap admits it): narrowed, the order dropped and said so
        ("order_dropped_120", one, {"state": STATE, "questions": {"topic": choice_list(120, option_order=list(range(120)))}}, False),
        # 255 is the cap with the group set
        ("cap_255", one, {"state": STATE, "questions": {"topic": choice_list(255)}}, False),
        ("cap_256", one, {"state": STATE, "questions": {"topic": choice_list(256)}}, False),
        # labels that are not strings: one pass at most 100, refused over it
        ("int_labels_one_pass", one, {"state": STATE, "questions": {"n": {"type": "choice", "instructions": "Pick a number.", "criteria": list(range(8))}}}, False),
        ("int_labels_over_100", one, {"state": STATE, "questions": {"n": {"type": "choice", "instructions": "Pick a number.", "criteria": list(range(101))}}}, False),
        # a duplicated label: Laya's ValueError
        ("duplicate_label", one, {"state": STATE, "questions": {"d": {"type": "choice", "criteria": ["x", "y", "x", "z", "w", "v"]}}}, False),
        # the abstention gate reads the final round's answer
        ("min_confidence", one, {"state": STATE, "min_confidence": 0.5, "questions": {"topic": choice_dict(7), "angry": NOUL}}, False),
        # the batch route: rounds per state, summed usage
        ("batch", batch, {"states": [STATE, STATE2], "questions": {"topic": choice_list(11), "urgency": SCORE}}, True),
        ("batch_one_pass", batch, {"states": [STATE, STATE2], "questions": {"small": choice_list(3)}}, False),
    ]


# LAYA_AUTO_TASK with LAYA_TOURNAMENT_GROUP=WORKFLOW_GROUP: Laya's server routes every pass of a
# tournament on its own questions (each is a Router.predict of its own). With the caller's ids a
# typed-decisions workflow's (customer_service), the final pass routes to typed-decisions, while
# the rounds' questions, keyed "0", "1", ..., match no workflow and route by language (english for
# an English state, multilingual for a German one). typed-decisions is the multilingual tiny
# checkpoint, so an English state's rounds and final pass run on two different checkpoints.
WORKFLOW_GROUP = 6
DE_STATE = "Ich wurde zweimal belastet und möchte mein Geld heute zurück, sonst kündige ich."


def workflow_models(ckpt):
    import os
    return {"english": os.path.join(ckpt, "modernbert-tiny"), "multilingual": os.path.join(ckpt, "mmbert-tiny"),
            "typed-decisions": os.path.join(ckpt, "mmbert-tiny")}


def workflow_questions(n_action=24, **action_extra):
    return {"action": choice_list(n_action, **action_extra),
            "category": {"type": "choice", "instructions": "Which category?", "criteria": ["billing", "delivery", "other"]},
            "churn_risk": {"type": "noul", "instructions": "Will the customer leave?"},
            "needs_human": {"type": "noul", "instructions": "Does a person need to look?"},
            "urgency": SCORE}


def workflow_cases():
    one, batch = "/v1/systemone", "/v1/systemone/batch"
    return [
        # one round (24 -> 4) on english, the final pass on typed-decisions
        ("workflow_en", one, {"state": STATE, "questions": workflow_questions()}),
        # two rounds (40 -> 7 -> 2) on multilingual, the final pass on typed-decisions
        ("workflow_de_two_rounds", one, {"state": DE_STATE, "questions": workflow_questions(40)}),
        # a batch: each state's rounds routed by its own language
        ("workflow_batch", batch, {"states": [STATE, DE_STATE], "questions": workflow_questions()}),
        # a pinned model pins every pass
        ("workflow_pinned", one, {"state": STATE, "model": "english", "questions": workflow_questions()}),
        # a task pins every pass too
        ("workflow_task", one, {"state": STATE, "task": "multilingual", "questions": workflow_questions()}),
        # ids that match no workflow: every pass by language, as before
        ("no_workflow", one, {"state": STATE, "questions": {"topic": choice_list(24), "urgency": SCORE}}),
        # no choice over the group: one pass, routed to typed-decisions
        ("workflow_one_pass", one, {"state": STATE, "questions": workflow_questions(5)}),
    ]
