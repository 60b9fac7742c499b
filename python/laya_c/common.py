"""The names Laya's laya.common exports that laya_c has, at the same import path
(`from laya_c.common import answer_confidence, QTYPES`): the confidence helpers and the
temperature rules. laya.common's training and sequence-building internals are not here."""
from .calibrate import TEMP_MAX, TEMP_MIN, clamp_temperature, temp_bucket  # noqa: F401
from .confidence import QTYPE_NAMES, QTYPES, answer_confidence, confidence_from_probs, ece_score  # noqa: F401
