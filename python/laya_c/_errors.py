"""Errors: laya.c names the Python class Laya raises for each error it shares with Laya
(laya_error.kind) and gives its exact message; this turns that into the same exception."""
import builtins
import json
import re


class LayaError(RuntimeError):
    """An error of laya.c's own, which Python Laya has no counterpart for (for example a hook
    passed to laya.c, or a CUDA failure). `code` is the laya_status number (include/laya.h)."""

    def __init__(self, message, code=0, kind=""):
        super().__init__(message)
        self.code = code
        self.kind = kind


class SchemaError(ValueError):
    """A schema `decide` cannot turn into questions (Laya's laya.structured.SchemaError)."""


class EvalError(ValueError):
    """A malformed evaluation record (Laya's laya.evals.EvalError)."""


_OWN = {"SchemaError": SchemaError, "EvalError": EvalError, "LayaError": LayaError}
_JSON_POS = re.compile(r"^(.*): line (\d+) column (\d+) \(char (\d+)\)$", re.S)


def _json_decode_error(message):
    """json.JSONDecodeError whose str() is `message` (Laya's own json.loads raised it)."""
    m = _JSON_POS.match(message)
    exc = json.JSONDecodeError.__new__(json.JSONDecodeError)
    ValueError.__init__(exc, message)
    exc.msg = m.group(1) if m else message
    exc.doc = ""
    exc.pos = int(m.group(4)) if m else 0
    exc.lineno = int(m.group(2)) if m else 0
    exc.colno = int(m.group(3)) if m else 0
    return exc


def exception_for(native_error):
    """The exception to raise for a laya_c._native.Error(code, kind, message)."""
    code, kind, message = native_error.args
    if isinstance(message, bytes):
        message = message.decode("utf-8", "replace")
    if kind == "JSONDecodeError":
        exc = _json_decode_error(message)
    elif kind in _OWN:
        exc = _OWN[kind](message)
    else:
        cls = getattr(builtins, kind, None) if kind else None
        if isinstance(cls, type) and issubclass(cls, BaseException):
            exc = cls(message)
        else:
            return LayaError(message, code, kind)
    exc.laya_code = code
    return exc
