"""Question presets under Laya's names (laya.triage_questions, ...): the sets `laya --preset` uses.

They have Laya's question ids, types and option labels, so answers are read the same way, but
laya.c's own wording (laya.c does not ship Laya's prompts), so on the same checkpoint they can
answer differently from Laya's. To ask Laya's own questions, export them once from Python Laya,
`json.dump(laya.triage_questions(), open("triage.json", "w"))`, and pass the loaded dict (or
`laya --questions triage.json`).
"""
import json as _json
import re as _re

from . import _native

_FIELD = _re.compile(r"`(\w+)`")


def _preset(name):
    q, _key = _native.preset(name)
    return _json.loads(q)


def triage_questions():
    """Support-ticket triage: intent, is_urgent, frustration, refund_requested, churn_risk (reads `message`)."""
    return _preset("triage")


def email_questions(categories=None):
    """Inbound email: category, is_spam, is_phishing, urgency, needs_reply (reads `body`);
    `categories` ({label: description}) replaces the category question's options."""
    q = _preset("email")
    if categories:
        q["category"]["criteria"] = categories
    return q


def guard_questions():
    """Prompt guard: jailbreak, prompt_injection, sensitive_data, harm_severity, topic (reads `prompt`)."""
    return _preset("guard")


def moderation_questions():
    """Content moderation: toxic, harassment, threat, spam, severity (reads `post`)."""
    return _preset("moderation")


def router_questions():
    """Request routing: difficulty, domain, needs_tools, is_sensitive (reads `request`)."""
    return _preset("router")


def state_field(questions):
    """The one state key the questions' instructions name in backticks (`message`), or None when
    they name none or several."""
    named = {m for spec in questions.values() for m in _FIELD.findall(spec.get("instructions") or "")}
    return next(iter(named)) if len(named) == 1 else None
