"""laya_c: Laya's Python API (Agent, load, Router) over laya.c, the C engine.

Moving from Python Laya is the import line:

    import laya_c as laya                      # was: import laya
    agent = laya.Agent("path/or/hub-id")
    agent.predict("I was charged twice", {"team": {"type": "choice", "instructions": "Who?",
                                                   "criteria": ["billing", "tech"]}})

Every call sends its arguments to the C library as JSON (json.dumps of the keyword arguments)
and returns json.loads of its answer: plain dicts and lists with Laya's keys, in Laya's order.
Errors Laya raises are raised with the same class and message. The GIL is released while the
engine runs, and one Agent (or Router) may be shared by any number of threads.

What laya.c does not run: hooks (hooks=, on_predict_start=, on_predict_end= raise
NotImplementedError when given), torch-only options (fast=, compile=, backend=, compile_* are
accepted and ignored: laya.c has its own kernels). See python/README.md.
"""
import json as _json
import os as _os
import re as _re
import tempfile as _tempfile
import threading as _threading
import warnings as _warnings
from dataclasses import dataclass as _dataclass
from dataclasses import field as _field
from typing import Any, Dict, List, Optional

from . import _native
from ._errors import EvalError, LayaError, SchemaError, exception_for
from .calibrate import (apply_binning_map, fit_abstention_thresholds, fit_binning_map,  # noqa: F401
                        fit_one_temperature, fit_temperature_map, fit_temperatures)
from .confidence import (GATE_STATES, QTYPE_NAMES, QTYPES, answer_confidence,  # noqa: F401
                         apply_confidence_gate, check_min_confidence, check_min_confidence_map,
                         confidence_from_probs, ece_score, flag_low_confidence, jev_confidence,
                         resolve_min_confidence)
from .lang import detect_language, detect_script, is_english  # noqa: F401
from .presets import (email_questions, guard_questions, moderation_questions,  # noqa: F401
                      router_questions, triage_questions)
from .shortlist import (cached_embed_fn, embed_fn_from_agent, predict_shortlist,  # noqa: E402,F401
                        predict_tournament, shortlist_choice)

__version__ = "0.1.0"
LAYA_VERSION = _native.LAYA_VERSION  # the C library's version
COMPAT_VERSION = _native.LAYA_COMPAT_VERSION  # the Python Laya release whose answers it gives

__all__ = ["Agent", "RLAgent", "load", "Router", "RouteDecision", "DecisionResult", "LayaError",
           "SchemaError", "EvalError", "BUILTIN_MODELS", "clean_email_body", "email_state",
           "shortlist_choice", "predict_shortlist", "predict_tournament", "embed_fn_from_agent",
           "cached_embed_fn", "detect_language", "detect_script", "is_english", "decide", "decide_batch",
           "answer_confidence", "confidence_from_probs", "ece_score", "jev_confidence",
           "check_min_confidence", "check_min_confidence_map", "resolve_min_confidence",
           "flag_low_confidence", "apply_confidence_gate", "GATE_STATES", "QTYPES", "QTYPE_NAMES",
           "triage_questions", "email_questions", "guard_questions", "moderation_questions",
           "router_questions", "fit_one_temperature", "fit_temperature_map", "fit_temperatures",
           "fit_binning_map", "apply_binning_map", "fit_abstention_thresholds"]

# Laya's built-in checkpoint names (laya.router.DEFAULT_MODELS); aliases resolve in the engine.
BUILTIN_MODELS = ("english", "multilingual", "typed-decisions")

# Agent/Router ops of laya_c._native (python/_native.c)
_PREDICT, _PREDICT_BATCH, _PREDICT_LONG, _DECIDE, _DECIDE_BATCH, _PREDICT_SHORTLIST, _SHORTLIST_CHOICE, \
    _EMBED, _PREDICT_TOURNAMENT = range(9)
_ROUTE, _ROUTE_BATCH, _R_PREDICT, _R_PREDICT_BATCH, _R_PREDICT_LONG, _R_DECIDE, _R_PREDICT_TOURNAMENT = range(7)

_env_lock = _threading.Lock()


def _dumps(obj):
    # ensure_ascii keeps a lone surrogate (which Laya's tokenizer refuses) as a \\ud800 escape
    return _json.dumps(obj, ensure_ascii=True)


def _call(handle, op, request):
    try:
        out = handle.call(op, _dumps(request))
    except _native.Error as e:
        raise exception_for(e) from None
    return _json.loads(out)


def clean_email_body(body, max_chars=3000):
    """Laya's clean_email_body, run by laya.c (laya_clean_email): quoted history, sign-offs,
    device footers and disclaimers removed, the text cut to max_chars characters."""
    try:
        out = _native.email(0, _dumps({"body": body, "max_chars": max_chars}))
    except _native.Error as e:
        raise exception_for(e) from None
    return _json.loads(out)


def email_state(subject, body, sender=None, clean=True, max_chars=3000, **extra):
    """Laya's email_state, run by laya.c (laya_email_state): {"subject", "body", "from", ...extra}."""
    request = {"subject": subject, "body": body, "sender": sender, "clean": clean, "max_chars": max_chars}
    request.update(extra)
    try:
        out = _native.email(1, _dumps(request))
    except _native.Error as e:
        raise exception_for(e) from None
    return _json.loads(out)


def _no_hooks(**given):
    for name, value in given.items():
        if value is not None:
            raise NotImplementedError(
                "laya_c does not run hooks (%s=): laya.c runs no Python code per prediction; "
                "wrap the call instead" % name)


def _put(req, **optional):
    """Add the keyword arguments that were given (None is Laya's default for each of them)."""
    for k, v in optional.items():
        if v is not None:
            req[k] = v
    return req


def _schema_of(schema):
    """A pydantic model (v2 or v1) becomes its JSON schema, as Laya's decide does."""
    if hasattr(schema, "model_json_schema"):
        return schema.model_json_schema()
    if hasattr(schema, "schema") and not isinstance(schema, dict):
        return schema.schema()
    return schema


@_dataclass
class DecisionResult:
    """`decide(..., return_details=True)`: Laya's laya.structured.DecisionResult fields."""

    values: Dict[str, Any]
    confidence: Dict[str, float]
    probabilities: Dict[str, Dict[str, Any]]
    answers: Dict[str, Any]
    usage: Optional[Dict[str, Any]] = None
    routing: Optional[Dict[str, Any]] = None
    answer_confidence: Dict[str, Optional[float]] = _field(default_factory=dict)


def _decision(result, details):
    if not details or not isinstance(result, dict) or "values" not in result:
        return result
    known = DecisionResult.__dataclass_fields__
    return DecisionResult(**{k: v for k, v in result.items() if k in known})


def _decide_request(state_key, state, schema, questions, return_details, min_confidence, kwargs):
    req = {state_key: state}
    if schema is not None:
        req["schema"] = _schema_of(schema)
    if questions is not None:
        req["questions"] = questions
    if return_details:
        req["return_details"] = return_details
    _put(req, min_confidence=min_confidence)
    _no_hooks(hooks=kwargs.pop("hooks", None), on_predict_start=kwargs.pop("on_predict_start", None),
              on_predict_end=kwargs.pop("on_predict_end", None))
    kwargs.pop("hooks_raise", None)
    kwargs.pop("hooks_timeout", None)
    req.update(kwargs)
    return req


# ---- Hugging Face cache (for a Hub checkpoint in a subfolder of its repo) ----

def _file_binning_map(path):
    """The binning map a calibration file installs (None without one), as Laya keeps it."""
    if not path:
        return None
    try:
        with open(path) as f:
            payload = _json.load(f)
    except (OSError, ValueError):
        return None  # the engine read it already; what it refused it reported
    return payload.get("binning_map") if isinstance(payload, dict) else None


def _hf_cache_dir():
    if _os.environ.get("HF_HUB_CACHE"):
        return _os.environ["HF_HUB_CACHE"]
    if _os.environ.get("HF_HOME"):
        return _os.path.join(_os.environ["HF_HOME"], "hub")
    return _os.path.join(_os.path.expanduser("~"), ".cache", "huggingface", "hub")


def _cached_snapshot(repo, subfolder, revision):
    repo_dir = _os.path.join(_hf_cache_dir(), "models--" + repo.replace("/", "--"))
    rev = revision or _os.environ.get("LAYA_REVISION") or "main"
    sha = rev
    if not _re.fullmatch(r"[0-9a-f]{40}", rev):
        try:
            with open(_os.path.join(repo_dir, "refs", rev)) as f:
                sha = f.read().strip()
        except OSError:
            return None
    d = _os.path.join(repo_dir, "snapshots", sha, subfolder)
    return d if _os.path.isfile(_os.path.join(d, "rl_agent_config.json")) else None


def _looks_local(p):
    # laya.agent._is_local_checkpoint_arg
    if not p:
        return False
    if p.startswith((".", "~")) or _os.sep in p or "/" in p or "\\" in p:
        return True
    return _os.path.isdir(p) and _os.path.isfile(_os.path.join(p, "rl_agent_config.json"))


class Agent:
    """A loaded checkpoint (laya.Agent). Thread-safe: share one Agent between threads.

    Laya's arguments, in Laya's order; laya.c's own are keyword-only: `precision` ("fp32",
    "bf16", "int8", "fp16" or "fp8" on CUDA; None = the backend's default), `threads` (CPU threads;
    None = LAYA_THREADS or the core count), `escalate` (True/False: re-run near-tie rows in fp32, or
    in bf16 for fp8), `quiet`
    (do not turn load warnings into Python warnings).
    """

    def __init__(self, model_id_or_path: str = "convaiinnovations/laya", device: Optional[str] = None,
                 token: Optional[str] = None, subfolder: Optional[str] = None, fast: bool = False,
                 compile: bool = False, revision: Optional[str] = None,
                 expected_sha256: Optional[Dict[str, str]] = None,
                 lang_temperatures: Optional[Dict[str, Dict[str, Any]]] = None, hooks=None,
                 on_predict_start=None, on_predict_end=None, hooks_raise: bool = True,
                 hooks_concurrent: bool = True, hooks_timeout: Optional[float] = None,
                 calibration: Optional[str] = None, backend: Optional[str] = None,
                 compile_warmup: bool = True, compile_cache: bool = False, compile_mode: str = "default",
                 *, precision: Optional[str] = None, threads: Optional[int] = None,
                 escalate: Optional[bool] = None, quiet: bool = False):
        _no_hooks(hooks=hooks, on_predict_start=on_predict_start, on_predict_end=on_predict_end)
        self.model_id = model_id_or_path
        self.model_id_or_path = model_id_or_path
        self.subfolder = subfolder
        self.revision = revision
        self._device_arg = device if device is not None else _os.environ.get("LAYA_DEVICE", "auto")
        self._open = dict(
            precision=precision, threads=int(threads or 0),
            sha=None if expected_sha256 is None else _dumps(expected_sha256),
            lt=None if lang_temperatures is None else _dumps(lang_temperatures),
            quiet=bool(quiet), escalate=0 if escalate is None else (1 if escalate else -1))
        self._path = self._resolve(model_id_or_path, subfolder, revision, token, expected_sha256)
        self._token = token
        self._lock = _threading.Lock()
        self._h = self._open_handle(calibration)
        self.calibration = calibration
        self.binning_map = _file_binning_map(calibration)

    # -- loading --

    def _resolve(self, path, subfolder, revision, token, pins):
        if not subfolder:
            return path
        if _os.path.isdir(_os.path.expanduser(path)):
            return _os.path.join(_os.path.expanduser(path), subfolder)
        found = _cached_snapshot(path, subfolder, revision)
        if found is None:
            # Not cached yet: let the engine's Hub client fetch it through a one-checkpoint Router
            # (laya_open takes no subfolder), then read it from the cache it filled.
            cfg = {"models": {"_": [path, subfolder]}, "default": "_", "max_loaded": 1, "device": "cpu"}
            _put(cfg, revision=revision, sha256_digests=None if pins is None else {"_": pins})
            with _env_lock:
                old = _os.environ.get("HF_TOKEN")
                if token:
                    _os.environ["HF_TOKEN"] = token
                try:
                    r = _native.open_router(_dumps(cfg))
                    _call(r, _R_PREDICT, {"state": "", "questions": {}, "model": "_"})
                    r.close()
                except _native.Error as e:
                    raise exception_for(e) from None
                finally:
                    if token:
                        if old is None:
                            _os.environ.pop("HF_TOKEN", None)
                        else:
                            _os.environ["HF_TOKEN"] = old
            found = _cached_snapshot(path, subfolder, revision)
            if found is None:
                raise FileNotFoundError("%s/%s: not in the Hugging Face cache %s after the download"
                                        % (path, subfolder, _hf_cache_dir()))
        return found

    def _open_handle(self, calibration):
        o = self._open
        env = {}
        if self.revision:
            env["LAYA_REVISION"] = self.revision
        if self._token:
            env["HF_TOKEN"] = self._token
        with _env_lock:
            old = {k: _os.environ.get(k) for k in env}
            _os.environ.update(env)
            try:
                h = _native.open_model(self._path, self._device_arg, o["precision"], o["threads"], o["sha"],
                                       o["lt"], calibration, True, o["escalate"])
            except _native.Error as e:
                raise exception_for(e) from None
            finally:
                for k, v in old.items():
                    if v is None:
                        _os.environ.pop(k, None)
                    else:
                        _os.environ[k] = v
        info = _json.loads(h.info())
        self.info = info
        if not o["quiet"]:
            for w in info.get("warnings", []):
                _warnings.warn(w, UserWarning, stacklevel=3)
        return h

    @property
    def device(self) -> str:
        return self.info.get("device", "cpu")

    @property
    def precision(self) -> str:
        return self.info.get("precision")

    @property
    def backend(self) -> str:
        return self.info.get("backend")

    @property
    def cfg(self) -> Dict[str, Any]:
        return {"max_len": self.info.get("max_len"), "head_max_len": self.info.get("head_max_len")}

    @property
    def cpu_fallback_count(self) -> int:
        return self._h.cpu_fallback_count()

    def __repr__(self):
        return "Agent(model_id=%r, device=%s)" % (self.model_id, self.device)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()
        return False

    def close(self) -> None:
        """Free the model (calls in flight on other threads finish first)."""
        self._h.close()

    # -- predictions --

    def system_one(self, state, questions, lang=None, hooks=None, on_predict_start=None,
                   on_predict_end=None, hooks_raise=None, hooks_timeout=None, max_len=None,
                   head_max_len=None, min_confidence=None) -> Dict[str, Any]:
        """Answer every question about one state in one forward pass (Laya's Agent.system_one)."""
        _no_hooks(hooks=hooks, on_predict_start=on_predict_start, on_predict_end=on_predict_end)
        req = _put({"state": state, "questions": questions}, lang=lang, max_len=max_len,
                   head_max_len=head_max_len, min_confidence=min_confidence)
        return _call(self._h, _PREDICT, req)

    predict = system_one

    def predict_batch(self, states, questions, batch_size=None, lang=None, hooks=None,
                      on_predict_start=None, on_predict_end=None, hooks_raise=None, hooks_timeout=None,
                      max_len=None, head_max_len=None, sort_by_length=False,
                      min_confidence=None) -> List[Dict[str, Any]]:
        """The same questions over many states, in shared forward passes; results in input order."""
        _no_hooks(hooks=hooks, on_predict_start=on_predict_start, on_predict_end=on_predict_end)
        req = _put({"states": states, "questions": questions}, batch_size=batch_size, lang=lang,
                   max_len=max_len, head_max_len=head_max_len, min_confidence=min_confidence)
        if sort_by_length:
            req["sort_by_length"] = sort_by_length
        return _call(self._h, _PREDICT_BATCH, req)

    def predict_long(self, state, questions, window=None, stride=None, aggregate="auto", batch_size=None,
                     lang=None, hooks=None, on_predict_start=None, on_predict_end=None, hooks_raise=None,
                     hooks_timeout=None) -> Dict[str, Any]:
        """A state longer than the context, in overlapping windows, aggregated as Laya does."""
        _no_hooks(hooks=hooks, on_predict_start=on_predict_start, on_predict_end=on_predict_end)
        req = _put({"state": state, "questions": questions}, window=window, stride=stride,
                   batch_size=batch_size, lang=lang)
        if aggregate != "auto":
            req["aggregate"] = aggregate
        return _call(self._h, _PREDICT_LONG, req)

    def decide(self, state, schema=None, *, questions=None, return_details=False, min_confidence=None,
               **predict_kwargs):
        """Typed values for a JSON schema or a pydantic model (Laya's Agent.decide)."""
        req = _decide_request("state", state, schema, questions, return_details, min_confidence,
                              predict_kwargs)
        return _decision(_call(self._h, _DECIDE, req), return_details)

    def decide_batch(self, states, schema=None, *, questions=None, return_details=False,
                     min_confidence=None, **predict_kwargs):
        """decide over many states in shared forward passes, in input order."""
        req = _decide_request("states", states, schema, questions, return_details, min_confidence,
                              predict_kwargs)
        out = _call(self._h, _DECIDE_BATCH, req)
        return [_decision(r, return_details) for r in out] if return_details else out

    def warmup(self, shapes=None) -> float:
        """Touch the model's buffers once; returns the seconds it took (laya.c compiles nothing)."""
        return self._h.warmup()

    def tokenize(self, text: str) -> List[int]:
        """Token ids of `text` with the checkpoint's tokenizer (add_special_tokens=False)."""
        try:
            return _json.loads(self._h.tokenize(text))
        except _native.Error as e:
            raise exception_for(e) from None

    # -- calibration --

    def load_calibration(self, path: str) -> None:
        """Apply a calibration file (Laya's save_calibration format) to this agent: the model is
        reopened with it (weights are memory-mapped, so this is cheap); calls already running on
        other threads finish on the previous calibration."""
        with self._lock:
            self._h = self._open_handle(path)
            self.calibration = path
            self.binning_map = _file_binning_map(path)
        # the previous model closes when the last call holding it returns (its refcount ends)

    @property
    def temperature(self) -> List[float]:
        """The per-type temperatures in use (choice, score, noul), as clamped at load."""
        return list(self.info.get("temperature") or [1.0, 1.0, 1.0])

    @property
    def temperature_by_options(self) -> Dict[str, float]:
        """The per-bucket temperatures in use ("choice:3-5": T, ...)."""
        return dict(self.info.get("temperature_by_options") or {})

    def _install(self, temperature, temperature_by_options, binning_map):
        """Reopen on these temperatures (and binning map): a calibration file without "version",
        which is applied without the identity check, then removed."""
        payload = {"temperature": [float(x) for x in temperature],
                   "temperature_by_options": {str(k): float(v) for k, v in temperature_by_options.items()}}
        if binning_map is not None:
            payload["binning_map"] = binning_map
        fd, path = _tempfile.mkstemp(prefix="laya_c-fit-", suffix=".json")
        try:
            with _os.fdopen(fd, "w") as f:
                _json.dump(payload, f)
            with self._lock:
                self._h = self._open_handle(path)
                self.binning_map = binning_map
        finally:
            _os.unlink(path)

    def fit_temperatures(self, records, compute_ece=False, seed=0):
        """Laya's Agent.fit_temperatures: fit_temperature_map(records, compute_ece, seed), and its
        temperatures installed on this agent (its binning map, if any, kept; the checkpoint's own
        files are left as they are)."""
        result = fit_temperature_map(records, compute_ece=compute_ece, seed=seed)
        self._install(result["temperature"], result["temperature_by_options"], self.binning_map)
        return result

    def fit_binning(self, records, min_bucket_n=200):
        """Laya's Agent.fit_binning: a histogram-binning map on top of this agent's temperatures
        (fit_binning_map), installed on it and written by save_calibration."""
        m = fit_binning_map(records, self.temperature, self.temperature_by_options, min_bucket_n=min_bucket_n)
        self._install(self.temperature, self.temperature_by_options, m)
        return m

    def _config_identity(self):
        """rl_agent_config.json without the temperatures (what save_calibration records), or None
        for a checkpoint that is not a directory with one."""
        try:
            with open(_os.path.join(_os.path.expanduser(self._path), "rl_agent_config.json")) as f:
                cfg = _json.load(f)
        except (OSError, ValueError):
            return None
        return {str(k): v for k, v in cfg.items() if k not in ("temperature", "temperature_by_options")}

    def save_calibration(self, path: str) -> None:
        """Laya's save_calibration: the temperatures in use and the checkpoint they were fitted
        for, written atomically (a temporary file beside path, then renamed; path's mode kept)."""
        payload = {"version": 2, "temperature": self.temperature,
                   "temperature_by_options": self.temperature_by_options,
                   "model_id_or_path": self.model_id_or_path, "subfolder": self.subfolder,
                   "config": self._config_identity()}
        if self.binning_map is not None:
            payload["binning_map"] = self.binning_map
        dest = _os.path.realpath(path)
        fd, tmp = _tempfile.mkstemp(dir=_os.path.dirname(dest), prefix=".calibration.", suffix=".tmp")
        try:
            with _os.fdopen(fd, "w") as f:
                _json.dump(payload, f, indent=2)
                f.write("\n")
                f.flush()
                _os.fsync(f.fileno())
            try:
                _os.chmod(tmp, _os.stat(dest).st_mode & 0o777)
            except FileNotFoundError:
                pass
            _os.replace(tmp, dest)
        except BaseException:
            try:
                _os.unlink(tmp)
            except OSError:
                pass
            raise


RLAgent = Agent


def load(model_id_or_path: str = "convaiinnovations/laya", device: Optional[str] = None,
         token: Optional[str] = None, subfolder: Optional[str] = None, **kwargs) -> Agent:
    """laya.load: like Agent, and a checkpoint name or alias ("english", "ml", "typed-decisions")
    resolves to the repo and subfolder the Router would use."""
    kwargs.pop("onnx_path", None)
    if subfolder is None and not _looks_local(model_id_or_path):
        try:
            r = _native.open_router("{}")
            d = _json.loads(r.call(_ROUTE, _dumps({"state": "", "model": model_id_or_path})))
            r.close()
        except _native.Error:
            d = None  # not a name: a Hub repo id or a path
        if d is not None:
            parts = d["repo"].split("/")
            model_id_or_path, subfolder = "/".join(parts[:2]), ("/".join(parts[2:]) or None)
    return Agent(model_id_or_path, device=device, token=token, subfolder=subfolder, **kwargs)


class RouteDecision(dict):
    """The routing outcome (laya.RouteDecision): a dict with .model and .reason."""

    @property
    def model(self) -> str:
        return self["model"]

    @property
    def reason(self) -> str:
        return self["reason"]

    def __repr__(self):
        return "RouteDecision(model=%r, reason=%r)" % (self["model"], self["reason"])


class Router:
    """Several checkpoints behind one object (laya.Router): names, aliases, Hub ids, the HF cache,
    revisions and SHA-256 pins; checkpoints load on first use, at most `max_loaded` stay resident.

    laya.c's own keyword-only extras: `cache_dir`, `offline`, `threads`.
    """

    def __init__(self, models: Optional[Dict[str, Any]] = None, device: Optional[str] = None,
                 token: Optional[str] = None, revision: Optional[str] = None,
                 revisions: Optional[Dict[str, Optional[str]]] = None, max_loaded: int = 2,
                 default: str = "multilingual", auto_task_detection: bool = False,
                 standalone_repos: bool = False, preload: bool = False, lang_guess=None, hooks=None,
                 on_predict_start=None, on_predict_end=None, hooks_raise: bool = True,
                 hooks_concurrent: bool = True, hooks_timeout: Optional[float] = None,
                 agent_kwargs: Optional[Dict[str, Any]] = None,
                 sha256_digests: Optional[Dict[str, Optional[Dict[str, str]]]] = None,
                 *, cache_dir: Optional[str] = None, offline: Optional[bool] = None,
                 threads: Optional[int] = None):
        _no_hooks(hooks=hooks, on_predict_start=on_predict_start, on_predict_end=on_predict_end)
        if callable(lang_guess):
            raise NotImplementedError("laya_c: lang_guess must be a language code, not a callable")
        if token:
            _os.environ.setdefault("HF_TOKEN", token)  # read by the engine's Hub client on each load
        cfg = {"max_loaded": max_loaded, "default": default, "auto_task_detection": auto_task_detection,
               "standalone_repos": standalone_repos}
        _put(cfg, models=models, lang_guess=lang_guess, device=device, revision=revision,
             revisions=revisions, sha256_digests=sha256_digests, cache_dir=cache_dir, offline=offline,
             threads=threads)
        self.models = dict(models or {})
        self._cfg = cfg
        self._lock = _threading.Lock()
        self._h = self._open(cfg)
        if preload:
            self.preload()

    @staticmethod
    def _open(cfg):
        try:
            return _native.open_router(_dumps(cfg))
        except _native.Error as e:
            raise exception_for(e) from None

    def _info(self):
        return _json.loads(self._h.info())

    @property
    def loaded(self) -> List[str]:
        """Resident checkpoints, least recently used first."""
        return self._info()["loaded"]

    @property
    def max_loaded(self) -> int:
        return self._info()["max_loaded"]

    @property
    def default(self) -> str:
        return self._info()["default"]

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.unload()
        return False

    def close(self) -> None:
        self._h.close()

    def _swap(self, cfg, reload=()):
        """A fresh engine router (the C API frees checkpoints only by closing its router)."""
        new = self._open(cfg)
        for name in reload:
            _call(new, _R_PREDICT, {"state": "", "questions": {}, "model": name})
        with self._lock:
            self._h, self._cfg = new, cfg
        # the previous router (and its checkpoints) closes when the last call holding it returns

    def preload(self, names: Optional[List[str]] = None):
        """Load checkpoints now so no request pays a load; max_loaded grows to hold them all."""
        if names is None:
            names = list(BUILTIN_MODELS) + [n for n in self.models if n not in BUILTIN_MODELS]
        names = [self.route("", model=n)["model"] for n in names]
        want = len(set(names) | set(self.loaded))
        if want > self.max_loaded:
            cfg = dict(self._cfg, max_loaded=want)
            self._swap(cfg, reload=self.loaded)
        for n in names:
            _call(self._h, _R_PREDICT, {"state": "", "questions": {}, "model": n})
        return self

    def unload(self, name: Optional[str] = None) -> None:
        """Free one checkpoint, or all of them."""
        if name is None:
            self._swap(self._cfg)
            return
        key = self.route("", model=name)["model"]
        keep = [n for n in self.loaded if n != key]
        self._swap(self._cfg, reload=keep)

    # -- routing and answers --

    def route(self, state, questions=None, model=None, task=None, lang=None, lang_guess=None, hooks=None,
              hooks_raise=None, hooks_timeout=None, *, explain=False) -> RouteDecision:
        """Which checkpoint answers this state, and why. Loads nothing."""
        _no_hooks(hooks=hooks)
        req = _put({"state": state}, questions=questions, model=model, task=task, lang=lang,
                   lang_guess=lang_guess)
        if explain:
            req["explain"] = explain
        return RouteDecision(_call(self._h, _ROUTE, req))

    def route_batch(self, requests, hooks_timeout=None, *, hooks=None, hooks_raise=None,
                    explain=False) -> List[RouteDecision]:
        _no_hooks(hooks=hooks)
        if explain and isinstance(requests, (list, tuple)):
            requests = [dict(r, explain=True) if isinstance(r, dict) else r for r in requests]
        return [RouteDecision(d) for d in _call(self._h, _ROUTE_BATCH, requests)]

    def predict(self, state, questions, model=None, task=None, lang=None, lang_guess=None, hooks=None,
                on_predict_start=None, on_predict_end=None, hooks_raise=None, hooks_timeout=None,
                max_len=None, head_max_len=None, min_confidence=None) -> Dict[str, Any]:
        """Route, then answer on the chosen checkpoint; the result carries "routing"."""
        _no_hooks(hooks=hooks, on_predict_start=on_predict_start, on_predict_end=on_predict_end)
        req = _put({"state": state, "questions": questions}, model=model, task=task, lang=lang,
                   lang_guess=lang_guess, max_len=max_len, head_max_len=head_max_len,
                   min_confidence=min_confidence)
        return _call(self._h, _R_PREDICT, req)

    system_one = predict

    def predict_batch(self, requests, batch_size=None, hooks_timeout=None, min_confidence=None,
                      sort_by_length=False, *, hooks=None, on_predict_start=None, on_predict_end=None,
                      hooks_raise=None, diagnostics=None) -> List[Dict[str, Any]]:
        """Route a heterogeneous batch, grouped by checkpoint; results in input order."""
        _no_hooks(hooks=hooks, on_predict_start=on_predict_start, on_predict_end=on_predict_end)
        req = _put({"requests": requests}, batch_size=batch_size, min_confidence=min_confidence)
        if sort_by_length:
            req["sort_by_length"] = sort_by_length
        return _call(self._h, _R_PREDICT_BATCH, req)

    def predict_long(self, state, questions, model=None, task=None, lang=None, lang_guess=None,
                     window=None, stride=None, aggregate="auto", batch_size=None, hooks=None,
                     on_predict_start=None, on_predict_end=None, hooks_raise=None,
                     hooks_timeout=None) -> Dict[str, Any]:
        _no_hooks(hooks=hooks, on_predict_start=on_predict_start, on_predict_end=on_predict_end)
        req = _put({"state": state, "questions": questions}, model=model, task=task, lang=lang,
                   lang_guess=lang_guess, window=window, stride=stride, batch_size=batch_size)
        if aggregate != "auto":
            req["aggregate"] = aggregate
        return _call(self._h, _R_PREDICT_LONG, req)

    def decide(self, state, schema=None, *, questions=None, return_details=False, min_confidence=None,
               **predict_kwargs):
        req = _decide_request("state", state, schema, questions, return_details, min_confidence,
                              predict_kwargs)
        return _decision(_call(self._h, _R_DECIDE, req), return_details)

    def decide_batch(self, states, schema=None, *, questions=None, return_details=False,
                     min_confidence=None, **predict_kwargs):
        """decide per state (the C API has no batched router decide: one call per state)."""
        if isinstance(states, (str, bytes)) or not isinstance(states, (list, tuple)):
            raise TypeError("states must be a sequence of states, not %s" % type(states).__name__)
        return [self.decide(s, schema, questions=questions, return_details=return_details,
                            min_confidence=min_confidence, **dict(predict_kwargs)) for s in states]


def _runner(fn, runner):
    if not isinstance(runner, (Agent, Router)):
        raise TypeError("laya_c.%s runs a laya_c.Agent or laya_c.Router (its runner), not %s; "
                        "call Laya's own laya.%s for other runners" % (fn, type(runner).__name__, fn))
    return runner


def decide(runner, state, schema=None, *, questions=None, return_details=False, min_confidence=None,
           **predict_kwargs):
    """Laya's module-level laya.decide(runner, state, schema, ...): runner.decide on a laya_c Agent
    or Router (the planning and the projection are the engine's, as Agent.decide's)."""
    return _runner("decide", runner).decide(state, schema, questions=questions, return_details=return_details,
                                            min_confidence=min_confidence, **predict_kwargs)


def decide_batch(runner, states, schema=None, *, questions=None, return_details=False, min_confidence=None,
                 **predict_kwargs):
    """Laya's module-level laya.decide_batch(runner, states, schema, ...) on a laya_c Agent or Router."""
    return _runner("decide_batch", runner).decide_batch(states, schema, questions=questions,
                                                        return_details=return_details,
                                                        min_confidence=min_confidence, **predict_kwargs)
