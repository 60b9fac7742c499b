/*
 * laya_c._native: the CPython extension under laya_c, a thin layer over the public C API
 * (include/laya.h). Requests go in as JSON text and results come back as JSON text; the Python
 * half (laya_c/__init__.py) builds the one and parses the other, so a result keeps the key order
 * the engine wrote. Every engine call runs with the GIL released.
 *
 * Lifetime: a handle counts the calls in flight on it (the count is only touched with the GIL
 * held). close() with calls in flight marks the handle closed for new calls and the last call
 * to return closes the engine object, so one handle can be shared by threads and closed by any
 * of them.
 *
 * Errors raise laya_c._native.Error(code, kind, message): `kind` is the Python exception class
 * Laya raises for the same input ("" when Laya has no counterpart) and `message` its text.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "laya.h"

static PyObject *NativeError;

static PyObject *raise_laya(const laya_error *err) {
  PyObject *args = Py_BuildValue("(iss)", err->code, err->kind, err->message);
  if (!args) {
    /* the message was not UTF-8: keep the bytes visible rather than lose the error */
    PyErr_Clear();
    args = Py_BuildValue("(isy)", err->code, err->kind, err->message);
  }
  if (args) {
    PyErr_SetObject(NativeError, args);
    Py_DECREF(args);
  }
  return NULL;
}

static PyObject *result_str(char *out) {
  PyObject *s = PyUnicode_DecodeUTF8(out, (Py_ssize_t)strlen(out), "surrogatepass");
  laya_free(out);
  return s;
}

/* The UTF-8 text of a str or bytes argument; the object must stay alive while it is used. */
static const char *text_of(PyObject *o, Py_ssize_t *len) {
  if (PyUnicode_Check(o)) return PyUnicode_AsUTF8AndSize(o, len);
  if (PyBytes_Check(o)) {
    *len = PyBytes_GET_SIZE(o);
    return PyBytes_AS_STRING(o);
  }
  PyErr_Format(PyExc_TypeError, "expected str or bytes, got %s", Py_TYPE(o)->tp_name);
  return NULL;
}

/* ---- Model ---- */

typedef struct {
  PyObject_HEAD
  laya_model *m;
  int inflight;
  int closed;
} Model;

static void model_release(Model *self) {
  if (self->m && self->closed && self->inflight == 0) {
    laya_model *m = self->m;
    self->m = NULL;
    Py_BEGIN_ALLOW_THREADS
    laya_close(m);
    Py_END_ALLOW_THREADS
  }
}

static laya_model *model_enter(Model *self) {
  if (!self->m || self->closed) {
    PyErr_SetString(PyExc_RuntimeError, "the laya_c model is closed");
    return NULL;
  }
  self->inflight++;
  return self->m;
}

static void model_leave(Model *self) {
  self->inflight--;
  model_release(self);
}

typedef int (*model_fn)(laya_model *, const char *, char **, laya_error *);
static const model_fn kModelOps[] = {laya_predict,          laya_predict_batch, laya_predict_long,
                                     laya_decide,           laya_decide_batch,  laya_predict_shortlist,
                                     laya_shortlist_choice, laya_embed,         laya_predict_tournament};

/* call(op, request) of Model and Router: the operation number (below n_ops) and the request's
 * UTF-8 text; NULL with a Python exception set when either is bad. */
static const char *call_args(PyObject *args, int n_ops, const char *what, int *op) {
  PyObject *req;
  if (!PyArg_ParseTuple(args, "iO:call", op, &req)) return NULL;
  if (*op < 0 || *op >= n_ops) {
    PyErr_Format(PyExc_ValueError, "unknown %s operation %d", what, *op);
    return NULL;
  }
  Py_ssize_t len;
  return text_of(req, &len);
}

/* An engine call's outcome as Python sees it: the result text, or Laya's exception. */
static PyObject *call_result(int rc, char *out, const laya_error *err) {
  if (rc) {
    laya_free(out);
    return raise_laya(err);
  }
  return result_str(out);
}

static PyObject *Model_call(Model *self, PyObject *args) {
  int op;
  const char *text = call_args(args, (int)(sizeof kModelOps / sizeof kModelOps[0]), "model", &op);
  if (!text) return NULL;
  laya_model *m = model_enter(self);
  if (!m) return NULL;
  char *out = NULL;
  laya_error err;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = kModelOps[op](m, text, &out, &err);
  Py_END_ALLOW_THREADS
  model_leave(self);
  return call_result(rc, out, &err);
}

static PyObject *Model_tokenize(Model *self, PyObject *arg) {
  Py_ssize_t len;
  const char *text = text_of(arg, &len);
  if (!text) return NULL;
  laya_model *m = model_enter(self);
  if (!m) return NULL;
  char *out = NULL;
  laya_error err;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = laya_tokenize(m, text, (size_t)len, &out, &err);
  Py_END_ALLOW_THREADS
  model_leave(self);
  if (rc) {
    laya_free(out);
    return raise_laya(&err);
  }
  return result_str(out);
}

static PyObject *Model_warmup(Model *self, PyObject *Py_UNUSED(ignored)) {
  laya_model *m = model_enter(self);
  if (!m) return NULL;
  double s;
  Py_BEGIN_ALLOW_THREADS
  s = laya_warmup(m);
  Py_END_ALLOW_THREADS
  model_leave(self);
  return PyFloat_FromDouble(s);
}

static PyObject *Model_info(Model *self, PyObject *Py_UNUSED(ignored)) {
  laya_model *m = model_enter(self);
  if (!m) return NULL;
  const char *info = laya_model_info(m);
  PyObject *s = PyUnicode_DecodeUTF8(info ? info : "{}", info ? (Py_ssize_t)strlen(info) : 2, "replace");
  model_leave(self);
  return s;
}

static PyObject *Model_cpu_fallback_count(Model *self, PyObject *Py_UNUSED(ignored)) {
  laya_model *m = model_enter(self);
  if (!m) return NULL;
  long n = laya_cpu_fallback_count(m);
  model_leave(self);
  return PyLong_FromLong(n);
}

static PyObject *Model_close(Model *self, PyObject *Py_UNUSED(ignored)) {
  self->closed = 1;
  model_release(self);
  Py_RETURN_NONE;
}

static PyObject *Model_closed(Model *self, void *Py_UNUSED(closure)) { return PyBool_FromLong(self->closed); }

static void Model_dealloc(Model *self) {
  /* no call can be in flight: each holds a reference to self */
  if (self->m) laya_close(self->m);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Model_methods[] = {
    {"call", (PyCFunction)Model_call, METH_VARARGS,
     "call(op, request_json) -> result_json; op: 0 predict, 1 predict_batch, 2 predict_long, 3 decide, "
     "4 decide_batch, 5 predict_shortlist, 6 shortlist_choice, 7 embed, 8 predict_tournament"},
    {"tokenize", (PyCFunction)Model_tokenize, METH_O, "tokenize(text) -> JSON list of ids"},
    {"warmup", (PyCFunction)Model_warmup, METH_NOARGS, "warmup() -> seconds"},
    {"info", (PyCFunction)Model_info, METH_NOARGS, "info() -> JSON describing the loaded model"},
    {"cpu_fallback_count", (PyCFunction)Model_cpu_fallback_count, METH_NOARGS,
     "requests answered on the CPU after the device ran out of memory"},
    {"close", (PyCFunction)Model_close, METH_NOARGS, "close the model (after the calls in flight)"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Model_getset[] = {{"closed", (getter)Model_closed, NULL, "closed for new calls", NULL},
                                     {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject ModelType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "laya_c._native.Model",
    .tp_basicsize = sizeof(Model),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A loaded laya.c model (laya_model*). Made by open_model().",
    .tp_dealloc = (destructor)Model_dealloc,
    .tp_methods = Model_methods,
    .tp_getset = Model_getset,
};

/* open_model(path, device, precision, threads, sha256_json, lang_temperatures_json,
 *            calibration_path, quiet, escalate) */
static PyObject *open_model(PyObject *Py_UNUSED(mod), PyObject *args) {
  const char *path, *device, *precision, *sha, *lt, *calib;
  int threads, quiet, escalate;
  if (!PyArg_ParseTuple(args, "szzizzzpi:open_model", &path, &device, &precision, &threads, &sha, &lt,
                        &calib, &quiet, &escalate))
    return NULL;
  laya_options o;
  laya_options_init(&o);
  o.device = device;
  o.precision = precision;
  o.threads = threads;
  o.sha256_json = sha;
  o.lang_temperatures_json = lt;
  o.calibration_path = calib;
  o.quiet = quiet;
  o.escalate = escalate;
  laya_error err;
  laya_model *m;
  Py_BEGIN_ALLOW_THREADS
  m = laya_open(path, &o, &err);
  Py_END_ALLOW_THREADS
  if (!m) return raise_laya(&err);
  Model *self = PyObject_New(Model, &ModelType);
  if (!self) {
    laya_close(m);
    return NULL;
  }
  self->m = m;
  self->inflight = 0;
  self->closed = 0;
  return (PyObject *)self;
}

/* ---- Router ---- */

typedef struct {
  PyObject_HEAD
  laya_router *r;
  int inflight;
  int closed;
} Router;

static void router_release(Router *self) {
  if (self->r && self->closed && self->inflight == 0) {
    laya_router *r = self->r;
    self->r = NULL;
    Py_BEGIN_ALLOW_THREADS
    laya_router_close(r);
    Py_END_ALLOW_THREADS
  }
}

typedef int (*router_fn)(laya_router *, const char *, char **, laya_error *);
static const router_fn kRouterOps[] = {laya_route,
                                       laya_route_batch,
                                       laya_router_predict,
                                       laya_router_predict_batch,
                                       laya_router_predict_long,
                                       laya_router_decide,
                                       laya_router_predict_tournament};

static PyObject *Router_call(Router *self, PyObject *args) {
  int op;
  const char *text = call_args(args, (int)(sizeof kRouterOps / sizeof kRouterOps[0]), "router", &op);
  if (!text) return NULL;
  if (!self->r || self->closed) {
    PyErr_SetString(PyExc_RuntimeError, "the laya_c router is closed");
    return NULL;
  }
  laya_router *r = self->r;
  self->inflight++;
  char *out = NULL;
  laya_error err;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = kRouterOps[op](r, text, &out, &err);
  Py_END_ALLOW_THREADS
  self->inflight--;
  router_release(self);
  return call_result(rc, out, &err);
}

static PyObject *Router_info(Router *self, PyObject *Py_UNUSED(ignored)) {
  if (!self->r || self->closed) {
    PyErr_SetString(PyExc_RuntimeError, "the laya_c router is closed");
    return NULL;
  }
  char *info;
  Py_BEGIN_ALLOW_THREADS
  info = laya_router_info(self->r);
  Py_END_ALLOW_THREADS
  if (!info) return PyErr_NoMemory();
  return result_str(info);
}

static PyObject *Router_close(Router *self, PyObject *Py_UNUSED(ignored)) {
  self->closed = 1;
  router_release(self);
  Py_RETURN_NONE;
}

static void Router_dealloc(Router *self) {
  if (self->r) laya_router_close(self->r);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Router_methods[] = {
    {"call", (PyCFunction)Router_call, METH_VARARGS,
     "call(op, request_json) -> result_json; op: 0 route, 1 route_batch, 2 predict, 3 predict_batch, "
     "4 predict_long, 5 decide, 6 predict_tournament"},
    {"info", (PyCFunction)Router_info, METH_NOARGS, "info() -> JSON {loaded, max_loaded, default}"},
    {"close", (PyCFunction)Router_close, METH_NOARGS, "close the router (after the calls in flight)"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject RouterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "laya_c._native.Router",
    .tp_basicsize = sizeof(Router),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A laya.c router (laya_router*). Made by open_router().",
    .tp_dealloc = (destructor)Router_dealloc,
    .tp_methods = Router_methods,
};

static PyObject *open_router(PyObject *Py_UNUSED(mod), PyObject *arg) {
  Py_ssize_t len;
  const char *cfg = text_of(arg, &len);
  if (!cfg) return NULL;
  laya_error err;
  laya_router *r;
  Py_BEGIN_ALLOW_THREADS
  r = laya_router_open(cfg, &err);
  Py_END_ALLOW_THREADS
  if (!r) return raise_laya(&err);
  Router *self = PyObject_New(Router, &RouterType);
  if (!self) {
    laya_router_close(r);
    return NULL;
  }
  self->r = r;
  self->inflight = 0;
  self->closed = 0;
  return (PyObject *)self;
}

static PyObject *device_uses_cuda(PyObject *Py_UNUSED(mod), PyObject *args) {
  const char *dev = NULL;
  if (!PyArg_ParseTuple(args, "|z:device_uses_cuda", &dev)) return NULL;
  return PyLong_FromLong(laya_device_uses_cuda(dev));
}

/* Timing probe for the benchmarks: n calls of laya_predict on one request, in C, no Python in
 * between; returns the seconds. The binding's own overhead is its time per call minus this. */
static PyObject *bench_capi_predict(PyObject *Py_UNUSED(mod), PyObject *args) {
  Model *model;
  const char *req;
  int n;
  if (!PyArg_ParseTuple(args, "O!si:bench_capi_predict", &ModelType, &model, &req, &n)) return NULL;
  laya_model *m = model_enter(model);
  if (!m) return NULL;
  laya_error err;
  int rc = 0;
  struct timespec t0, t1;
  Py_BEGIN_ALLOW_THREADS
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < n && !rc; i++) {
    char *out = NULL;
    rc = laya_predict(m, req, &out, &err);
    laya_free(out);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  Py_END_ALLOW_THREADS
  model_leave(model);
  if (rc) return raise_laya(&err);
  return PyFloat_FromDouble((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
}

/* email(op, request_json) -> result_json; op 0 laya_clean_email, 1 laya_email_state (no model). */
static PyObject *email(PyObject *Py_UNUSED(mod), PyObject *args) {
  int op;
  const char *req;
  if (!PyArg_ParseTuple(args, "is", &op, &req)) return NULL;
  if (op != 0 && op != 1) return PyErr_Format(PyExc_ValueError, "unknown email op %d", op);
  char *out = NULL;
  laya_error err;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = op == 0 ? laya_clean_email(req, &out, &err) : laya_email_state(req, &out, &err);
  Py_END_ALLOW_THREADS
  if (rc) return raise_laya(&err);
  return result_str(out);
}

/* lang(op, arg) (no model): op 0 laya_detect_language(arg: request JSON, bytes) -> result JSON; op 1
 * laya_detect_script(arg: the text, UTF-8 bytes) -> the script's name. */
static PyObject *lang(PyObject *Py_UNUSED(mod), PyObject *args) {
  int op;
  const char *arg;
  Py_ssize_t len;
  if (!PyArg_ParseTuple(args, "iy#", &op, &arg, &len)) return NULL;
  if (op != 0 && op != 1) return PyErr_Format(PyExc_ValueError, "unknown lang op %d", op);
  char *out = NULL;
  const char *script = NULL;
  laya_error err;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = op == 0 ? laya_detect_language(arg, &out, &err) : laya_detect_script(arg, (size_t)len, &script, &err);
  Py_END_ALLOW_THREADS
  if (rc) return raise_laya(&err);
  return op == 0 ? result_str(out) : PyUnicode_FromString(script);
}

/* preset(name) -> (questions_json, state_key), or None for a name laya.c has no preset for */
static PyObject *preset(PyObject *Py_UNUSED(mod), PyObject *args) {
  const char *name;
  if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
  const char *key = NULL, *q = laya_preset(name, &key);
  if (!q) Py_RETURN_NONE;
  return Py_BuildValue("(ss)", q, key);
}

static PyMethodDef module_methods[] = {
    {"email", email, METH_VARARGS, "email(op, request_json) -> result_json; op: 0 clean_email_body, 1 email_state"},
    {"preset", preset, METH_VARARGS, "preset(name) -> (questions_json, state_key) or None"},
    {"lang", lang, METH_VARARGS, "lang(op, arg): op 0 detect_language(request_json) -> result_json, 1 detect_script(text)"},
    {"open_model", open_model, METH_VARARGS,
     "open_model(path, device, precision, threads, sha256_json, lang_temperatures_json, calibration_path, "
     "quiet, escalate) -> Model"},
    {"open_router", open_router, METH_O, "open_router(config_json) -> Router"},
    {"device_uses_cuda", device_uses_cuda, METH_VARARGS, "laya_device_uses_cuda(device)"},
    {"bench_capi_predict", bench_capi_predict, METH_VARARGS,
     "bench_capi_predict(model, request_json, n) -> seconds for n laya_predict calls made in C"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_native",
                                        "laya.c's C API (include/laya.h), JSON in / JSON out.", -1,
                                        module_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__native(void) {
  if (PyType_Ready(&ModelType) < 0 || PyType_Ready(&RouterType) < 0) return NULL;
  PyObject *mod = PyModule_Create(&module_def);
  if (!mod) return NULL;
  NativeError = PyErr_NewException("laya_c._native.Error", NULL, NULL);
  if (!NativeError || PyModule_AddObject(mod, "Error", NativeError) < 0) {
    Py_XDECREF(NativeError);
    Py_DECREF(mod);
    return NULL;
  }
  Py_INCREF(NativeError);
  if (PyModule_AddStringConstant(mod, "LAYA_VERSION", LAYA_VERSION) < 0 ||
      PyModule_AddStringConstant(mod, "LAYA_COMPAT_VERSION", LAYA_COMPAT_VERSION) < 0) {
    Py_DECREF(mod);
    return NULL;
  }
  return mod;
}
