"""Build the router parity corpus and record the real Laya 0.4.15 routing decisions.

    PYTHONPATH=<faker on the path> /opt/layaref/bin/python tools/router/make_corpus.py \
        tests/fixtures/router/corpus.jsonl

Every state is generated here from a fixed seed: Faker locales (names, places, companies, word
salad in the locale's lorem vocabulary), the hand-written requests in sentences.py, synthetic
words in each Unicode script Laya names, English with names, e-mail addresses, URLs and code,
and structured states (ticket dicts, conversations, multi-line text) that mix them. Each line
holds the request and what `laya.Router.route` returned (route only: nothing is loaded).
"""
import json
import random
import sys
import unicodedata

from faker import Faker
import laya
from laya.router import Router

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from sentences import FAKER_LOCALE, SENTENCES  # noqa: E402

rng = random.Random(20261129)
fakers = {}


def fk(locale):
    if locale not in fakers:
        f = Faker(locale)
        f.seed_instance(rng.randrange(1 << 30))
        fakers[locale] = f
    return fakers[locale]


def fill(template, lang):
    f = fk(FAKER_LOCALE[lang])
    return template.format(name=f.name(), city=f.city(), order="#%d" % rng.randrange(10000, 99999),
                           product=rng.choice(["X200 headphones", "Pro Max 12", "ZenBook",
                                               "Kindle", "AirFryer 3000"]),
                           company=f.company())


def strip_accents(s):
    return "".join(c for c in unicodedata.normalize("NFD", s) if not unicodedata.combining(c))


# Letters of each script laya names, for synthetic words (start, end inclusive, letters only).
SCRIPT_BLOCKS = {
    "greek": (0x03B1, 0x03C9), "cyrillic": (0x0430, 0x044F), "armenian": (0x0561, 0x0586),
    "hebrew": (0x05D0, 0x05EA), "arabic": (0x0627, 0x064A), "devanagari": (0x0915, 0x0939),
    "bengali": (0x0995, 0x09B9), "gurmukhi": (0x0A15, 0x0A39), "gujarati": (0x0A95, 0x0AB9),
    "oriya": (0x0B15, 0x0B39), "tamil": (0x0B95, 0x0BB9), "telugu": (0x0C15, 0x0C39),
    "kannada": (0x0C95, 0x0CB9), "malayalam": (0x0D15, 0x0D39), "sinhala": (0x0D9A, 0x0DC6),
    "thai": (0x0E01, 0x0E2E), "lao": (0x0E81, 0x0EA3), "tibetan": (0x0F40, 0x0F6A),
    "myanmar": (0x1000, 0x102A), "georgian": (0x10D0, 0x10F0), "ethiopic": (0x1200, 0x1248),
    "khmer": (0x1780, 0x17B3), "hangul": (0xAC00, 0xD7A3), "kana": (0x3041, 0x3096),
    "han": (0x4E00, 0x9FA5), "other-cherokee": (0x13A0, 0x13F4), "other-mongolian": (0x1820, 0x1877),
}
NON_LATIN_LOCALES = ["el_GR", "ru_RU", "uk_UA", "hy_AM", "he_IL", "ar_AA", "fa_IR", "hi_IN",
                     "bn_BD", "ta_IN", "ka_GE", "ko_KR", "ja_JP", "zh_CN", "zh_TW", "th_TH",
                     "ne_NP", "mr_IN", "mk_MK"]


def script_word(script, lo=2, hi=7):
    a, b = SCRIPT_BLOCKS[script]
    return "".join(chr(rng.randint(a, b)) for _ in range(rng.randint(lo, hi)))


def script_text(script, n):
    return " ".join(script_word(script) for _ in range(n))


CODE_LINES = [
    "for i in range(10): print(i)", "const x = await fetch(url);", "SELECT * FROM orders WHERE id = 42;",
    "Traceback (most recent call last):", "  File \"app.py\", line 12, in <module>",
    "    os.path.join(base, name)", "KeyError: 'user_id'", "if (err != nil) { return err }",
    "npm ERR! code ERESOLVE", "git commit -m 'fix build'", "curl -X POST https://api.example.com/v1/items",
]
ACRONYM_LINES = ["MON DES EST LA", "STORES LOS ANGELES LAS VEGAS EL PASO CLOSED", "NYC LA SF DC",
                 "ERROR CODE ABC DEF", "PLEASE HELP ME NOW", "MI CUENTA NO FUNCIONA DESDE AYER",
                 "ICH KANN MICH NICHT ANMELDEN", "JE NE PEUX PAS ME CONNECTER"]


def english_state():
    kind = rng.randrange(9)
    f = fk("en_US")
    if kind == 0:
        return fill(rng.choice(SENTENCES["en"]), "en")
    if kind == 1:
        return f.paragraph(nb_sentences=rng.randint(1, 4))
    if kind == 2:
        return "%s <%s> wrote: %s" % (f.name(), f.email(), fill(rng.choice(SENTENCES["en"]), "en"))
    if kind == 3:
        return "%s\n%s\n%s" % (fill(rng.choice(SENTENCES["en"]), "en"), rng.choice(CODE_LINES),
                               rng.choice(CODE_LINES))
    if kind == 4:
        return "Contact %s at %s or visit %s, %s" % (f.name(), f.phone_number(), f.url(), f.address())
    if kind == 5:
        return f.name()
    if kind == 6:
        return "%s %s" % (rng.choice(["Ticket", "Order", "Case"]), f.bothify("??-#####"))
    if kind == 7:  # English with foreign names and loanwords
        n = fk(rng.choice(["fr_FR", "es_ES", "de_DE", "ru_RU", "zh_CN"])).name()
        return "Please forward this to %s, who handles the café résumé requests in %s." % (n, f.city())
    return f.sentence(nb_words=rng.randint(3, 14))


def latin_state(lang):
    kind = rng.randrange(8)
    text = fill(rng.choice(SENTENCES[lang]), lang)
    if kind == 0:
        return text
    if kind == 1:
        return " ".join(fill(rng.choice(SENTENCES[lang]), lang) for _ in range(rng.randint(2, 4)))
    if kind == 2:
        return strip_accents(text)
    if kind == 3:
        return text.upper()
    if kind == 4:
        loc = {"fr": "fr_FR", "de": "de_DE", "es": "es_ES", "it": "it_IT", "nl": "nl_NL",
               "az": "az_AZ"}.get(lang)
        if loc:
            return fk(loc).paragraph(nb_sentences=rng.randint(1, 3))
        return text
    if kind == 5:  # short fragment
        words = text.split()
        k = rng.randint(1, min(4, len(words)))
        return " ".join(words[:k])
    if kind == 6:
        f = fk(FAKER_LOCALE[lang])
        return "%s, %s" % (f.name(), f.address().replace("\n", ", "))
    return "%s %s" % (text, rng.choice(["Thanks!", "Order ABC-123", "ref: INV-2231", "Sent from my iPhone"]))


def non_latin_state():
    kind = rng.randrange(5)
    if kind == 0:
        f = fk(rng.choice(NON_LATIN_LOCALES))
        try:
            return f.paragraph(nb_sentences=rng.randint(1, 3)) if rng.random() < 0.5 else f.address()
        except Exception:
            return f.address()
    script = rng.choice(sorted(SCRIPT_BLOCKS))
    if kind == 1:
        return script_text(script, rng.randint(2, 12))
    if kind == 2:  # a non-Latin request around an English brand or code
        return "%s %s %s" % (script_text(script, rng.randint(1, 4)),
                             rng.choice(["iPhone 15 Pro", "order ABC-12345", "Windows Update", "PayPal"]),
                             script_text(script, rng.randint(0, 3)))
    if kind == 3:  # English prose quoting a little non-Latin text
        return "%s The customer wrote %s in the form." % (fill(rng.choice(SENTENCES["en"]), "en"),
                                                         script_text(script, rng.randint(1, 3)))
    return fk(rng.choice(NON_LATIN_LOCALES)).name()


def structured_state():
    kind = rng.randrange(7)
    lang = rng.choice(sorted(SENTENCES))
    foreign = latin_state(lang) if lang != "en" else english_state()
    if kind == 0:
        return {"subject": fill(rng.choice(SENTENCES["en"]), "en")[:40], "body": foreign,
                "customer_id": rng.randrange(1000, 9999), "priority": rng.choice(["low", "high"])}
    if kind == 1:
        return [{"role": "user", "content": foreign},
                {"role": "assistant", "content": fill(rng.choice(SENTENCES["en"]), "en")}]
    if kind == 2:
        return {"ticket": {"id": "T-%d" % rng.randrange(9999), "notes": [english_state(), foreign]},
                "tags": ["billing", "urgent"]}
    if kind == 3:
        return {"text": "%s\n%s" % (english_state(), foreign)}
    if kind == 4:
        return {"message": foreign, "history": [english_state() for _ in range(rng.randint(0, 3))],
                "flag": True, "score": 0.5}
    if kind == 5:
        return {"text": "%s\n%s\n%s" % (english_state(), rng.choice(ACRONYM_LINES), english_state())}
    return {"form": {"name": fk("en_US").name(), "comment": non_latin_state() if rng.random() < 0.5 else foreign}}


WORKFLOW_IDS = [["action", "needs_review", "outcome", "risk", "urgency"],
                ["action", "category", "churn_risk", "needs_human", "urgency"],
                ["discrepancy_severity", "disposition", "duplicate", "matches_order", "urgency"],
                ["credential_compromise", "disposition", "severity", "true_positive", "urgency"],
                ["action", "urgency"], ["intent", "is_urgent"]]


def overrides():
    r = rng.random()
    out = {}
    if r < 0.04:
        out["model"] = rng.choice(["english", "ML", " multi ", "typed", "Typed_Decisions", "laya",
                                   "default", "bogus", "en"])
    elif r < 0.08:
        out["task"] = rng.choice(["typed_decisions", "typed-decisions", "Typed-Decisions", "english",
                                  "multilingual", "summarise"])
    elif r < 0.14:
        out["lang"] = rng.choice(["en", "EN", "en_US.UTF-8", "de", "pt-BR", "C", "C.UTF-8", "", "  ",
                                  "und", "mul", "english", "eng", "zxx", "fr_CA", "posix"])
    elif r < 0.20:
        out["lang_guess"] = rng.choice(["en", "de", "und", "", "en-GB", "ja", "c"])
    return out


def main(out_path):
    router_plain = Router()
    router_auto = Router(auto_task_detection=True)
    rows = []
    makers = ([("english", english_state)] * 5 + [("non_latin", non_latin_state)] * 4 +
              [("structured", structured_state)] * 4)
    for lang in sorted(SENTENCES):
        if lang != "en":
            makers.append(("latin_" + lang, lambda lang=lang: latin_state(lang)))
    # every script at least a few times, deterministic
    for script in sorted(SCRIPT_BLOCKS):
        for n in (1, 3, 8):
            rows.append(("script_" + script, script_text(script, n), {}, None, False))
    while len(rows) < 2600:
        cat, make = rng.choice(makers)
        state = make()
        q = None
        auto = False
        if rng.random() < 0.08:
            q = {qid: {"type": "noul", "instructions": "x"} for qid in rng.choice(WORKFLOW_IDS)}
            auto = rng.random() < 0.7
        rows.append((cat, state, overrides(), q, auto))
    with open(out_path, "w", encoding="utf-8") as fh:
        for i, (cat, state, ov, q, auto) in enumerate(rows):
            router = router_auto if auto else router_plain
            req = {"state": state}
            if q is not None:
                req["questions"] = q
            req.update(ov)
            try:
                d = router.route(state, q, model=ov.get("model"), task=ov.get("task"),
                                 lang=ov.get("lang"), lang_guess=ov.get("lang_guess"))
                rec = {"decision": dict(d)}
            except (ValueError, TypeError) as e:
                rec = {"error": {"kind": type(e).__name__, "message": str(e)}}
            row = {"id": i, "category": cat, "auto_task_detection": auto, "request": req}
            row.update(rec)
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print("wrote %d states with laya %s" % (len(rows), laya.__version__))


if __name__ == "__main__":
    main(sys.argv[1])
