"""A deterministic multilingual text corpus drawn from Faker's locale data.

Faker ships real word lists, names, street names, cities and company names for ~110 locales
across Latin, Cyrillic, Greek, Armenian, Georgian, Arabic, Hebrew, Devanagari, Bengali, Tamil,
Thai, CJK, Hangul and other scripts. Seeded, a pinned Faker version yields the same strings on
every run, which is what makes the tokenizers trained on it reproducible.
"""
import datetime as _datetime
import json
import os
import sys

import faker
import faker.config
import faker.providers.date_time as _faker_date_time

# Faker's date generators draw between the epoch and "now", so day and month names would change
# with the wall clock. Its "now" is pinned to this moment (the committed fixtures were generated
# then; Faker reads the clock in whole seconds). Override with LAYA_REF_FAKER_NOW=<unix seconds>.
FAKER_NOW = _datetime.datetime(2026, 11, 29, 8, 17, 16)
if os.environ.get("LAYA_REF_FAKER_NOW"):
    FAKER_NOW = _datetime.datetime(1970, 1, 1) + _datetime.timedelta(seconds=int(os.environ["LAYA_REF_FAKER_NOW"]))


class _PinnedNow(_datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        if tz is None:
            return FAKER_NOW
        return FAKER_NOW.replace(tzinfo=_datetime.timezone.utc).astimezone(tz)


_faker_date_time.datetime = _PinnedNow

def pin_hash_seed():
    """Re-run this process with PYTHONHASHSEED=0 unless it already has it.

    Some Faker locales draw from sets, whose order follows the per-process string hash seed, so
    without a fixed seed the corpus (and every merge learned from it) changes from run to run.
    """
    if os.environ.get("PYTHONHASHSEED") != "0":
        env = dict(os.environ, PYTHONHASHSEED="0")
        os.execve(sys.executable, [sys.executable] + sys.argv, env)


# Generators that exist for (almost) every locale; a locale lacking one falls back to en_US data
# inside Faker, which is harmless for a training corpus.
_METHODS = ("name", "address", "city", "street_name", "company", "job", "country",
            "sentence", "paragraph", "text", "catch_phrase", "day_of_week", "month_name")


def corpus(per_locale=60, seed=20251129):
    """Yield strings: `per_locale` rounds of every generator for every Faker locale, in a fixed order."""
    # fr_QC is a deprecated alias of fr_CA that only adds a warning.
    for locale in sorted(l for l in faker.config.AVAILABLE_LOCALES if l != "fr_QC"):
        fk = faker.Faker(locale)
        fk.seed_instance(seed)
        for _ in range(per_locale):
            for m in _METHODS:
                try:
                    s = getattr(fk, m)()
                except (AttributeError, TypeError, ValueError):
                    continue
                if isinstance(s, str) and s:
                    yield s
            # Laya serialises object states as JSON, so the corpus carries some too.
            try:
                record = {"name": fk.name(), "city": fk.city(), "amount": round(fk.pyfloat(2, 2), 2),
                          "id": fk.pyint(), "active": fk.pybool(), "note": fk.sentence()}
            except (AttributeError, TypeError, ValueError):
                continue
            yield json.dumps(record, ensure_ascii=False)


def training_lines(per_locale=60, seed=20251129):
    """Corpus lines with whitespace folded to single spaces.

    Runs of spaces, newlines and tabs are added tokens in both tokenizer families, so the
    trainer must not learn them as ordinary pieces (that would give one string two ids).
    """
    for s in corpus(per_locale, seed):
        s = " ".join(s.split())
        if s:
            yield s
