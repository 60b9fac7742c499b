"""A strict subset of JSON Schema 2020-12, enough for laya-serve's /openapi.json (standard library
only, so CI's plain python3 runs it). Strict: a keyword it does not know is an error, so a schema
it cannot check fails the test instead of passing unchecked.

    errors = validate(instance, schema, root)   # [] when valid; root resolves "#/..." refs
    problems = check_document(doc)              # structural checks of an OpenAPI 3.1 document
"""
import re

ANNOTATIONS = {"title", "description", "examples", "default", "deprecated", "readOnly", "writeOnly"}
KEYWORDS = {"$ref", "type", "properties", "required", "additionalProperties", "items", "minItems",
            "maxItems", "minProperties", "maxProperties", "enum", "const", "anyOf", "oneOf", "allOf",
            "not", "minimum", "maximum", "minLength", "maxLength", "pattern", "propertyNames"} | ANNOTATIONS

TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def resolve(ref, root):
    if not ref.startswith("#/"):
        raise ValueError("only local refs are supported: %r" % ref)
    node = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            raise KeyError("unresolved $ref %r" % ref)
        node = node[part]
    return node


def validate(v, schema, root, path="$"):
    if schema is True or schema == {}:
        return []
    if schema is False:
        return ["%s: no value is allowed here" % path]
    unknown = set(schema) - KEYWORDS
    if unknown:
        raise ValueError("%s: schema keywords this checker does not know: %s" % (path, sorted(unknown)))
    errs = []
    if "$ref" in schema:
        errs += validate(v, resolve(schema["$ref"], root), root, path)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(TYPES[t](v) for t in types):
            return errs + ["%s: %r is not of type %s" % (path, v, types)]
    if "enum" in schema and v not in schema["enum"]:
        errs.append("%s: %r not in %r" % (path, v, schema["enum"]))
    if "const" in schema and v != schema["const"]:
        errs.append("%s: %r != %r" % (path, v, schema["const"]))
    if TYPES["number"](v):
        if "minimum" in schema and v < schema["minimum"]:
            errs.append("%s: %r < %r" % (path, v, schema["minimum"]))
        if "maximum" in schema and v > schema["maximum"]:
            errs.append("%s: %r > %r" % (path, v, schema["maximum"]))
    if isinstance(v, str):
        if "minLength" in schema and len(v) < schema["minLength"]:
            errs.append("%s: shorter than %d" % (path, schema["minLength"]))
        if "maxLength" in schema and len(v) > schema["maxLength"]:
            errs.append("%s: longer than %d" % (path, schema["maxLength"]))
        if "pattern" in schema and not re.search(schema["pattern"], v):
            errs.append("%s: %r does not match %r" % (path, v, schema["pattern"]))
    if isinstance(v, list):
        if "minItems" in schema and len(v) < schema["minItems"]:
            errs.append("%s: fewer than %d items" % (path, schema["minItems"]))
        if "maxItems" in schema and len(v) > schema["maxItems"]:
            errs.append("%s: more than %d items" % (path, schema["maxItems"]))
        if "items" in schema:
            for i, item in enumerate(v):
                errs += validate(item, schema["items"], root, "%s[%d]" % (path, i))
    if isinstance(v, dict):
        for k in schema.get("required", []):
            if k not in v:
                errs.append("%s: missing required %r" % (path, k))
        if "minProperties" in schema and len(v) < schema["minProperties"]:
            errs.append("%s: fewer than %d members" % (path, schema["minProperties"]))
        if "maxProperties" in schema and len(v) > schema["maxProperties"]:
            errs.append("%s: more than %d members" % (path, schema["maxProperties"]))
        if "propertyNames" in schema:
            for k in v:
                errs += validate(k, schema["propertyNames"], root, "%s(key %r)" % (path, k))
        props = schema.get("properties", {})
        for k, item in v.items():
            if k in props:
                errs += validate(item, props[k], root, "%s.%s" % (path, k))
            elif "additionalProperties" in schema:
                errs += validate(item, schema["additionalProperties"], root, "%s.%s" % (path, k))
    for sub in schema.get("allOf", []):
        errs += validate(v, sub, root, path)
    if "anyOf" in schema and not any(not validate(v, s, root, path) for s in schema["anyOf"]):
        errs.append("%s: %r matches none of anyOf" % (path, v))
    if "oneOf" in schema and sum(1 for s in schema["oneOf"] if not validate(v, s, root, path)) != 1:
        errs.append("%s: %r does not match exactly one of oneOf" % (path, v))
    if "not" in schema and not validate(v, schema["not"], root, path):
        errs.append("%s: %r matches a 'not' schema" % (path, v))
    return errs


def walk_schema(schema, root, path, problems):
    """Every keyword known, every $ref resolvable, every type name valid."""
    if isinstance(schema, bool):
        return
    if not isinstance(schema, dict):
        problems.append("%s: a schema must be an object or a boolean" % path)
        return
    unknown = set(schema) - KEYWORDS
    if unknown:
        problems.append("%s: unknown keywords %s" % (path, sorted(unknown)))
    if "$ref" in schema:
        try:
            resolve(schema["$ref"], root)
        except (KeyError, ValueError) as e:
            problems.append("%s: %s" % (path, e))
    if "type" in schema:
        for t in schema["type"] if isinstance(schema["type"], list) else [schema["type"]]:
            if t not in TYPES:
                problems.append("%s: unknown type %r" % (path, t))
    for k in ("items", "additionalProperties", "not", "propertyNames"):
        if k in schema:
            walk_schema(schema[k], root, path + "/" + k, problems)
    for k, sub in schema.get("properties", {}).items():
        walk_schema(sub, root, path + "/properties/" + k, problems)
    for k in ("anyOf", "oneOf", "allOf"):
        for i, sub in enumerate(schema.get(k, [])):
            walk_schema(sub, root, "%s/%s/%d" % (path, k, i), problems)


def check_document(doc):
    """Structural checks of an OpenAPI 3.1 document: what a client generator relies on."""
    p = []
    if doc.get("openapi") != "3.1.0":
        p.append("openapi is %r, not 3.1.0" % doc.get("openapi"))
    info = doc.get("info", {})
    for k in ("title", "version"):
        if not isinstance(info.get(k), str) or not info.get(k):
            p.append("info.%s missing" % k)
    op_ids = set()
    for path, item in doc.get("paths", {}).items():
        if not path.startswith("/"):
            p.append("path %r does not start with /" % path)
        for method, op in item.items():
            where = "%s %s" % (method, path)
            if method not in ("get", "put", "post", "delete", "options", "head", "patch", "trace"):
                p.append("%s: not an HTTP method" % where)
                continue
            oid = op.get("operationId")
            if not oid or oid in op_ids:
                p.append("%s: operationId %r missing or repeated" % (where, oid))
            op_ids.add(oid)
            for prm in op.get("parameters", []):
                if prm.get("in") not in ("query", "header", "path", "cookie") or not prm.get("name"):
                    p.append("%s: bad parameter %r" % (where, prm))
                walk_schema(prm.get("schema", {}), doc, where + " parameter " + str(prm.get("name")), p)
            body = op.get("requestBody")
            if body:
                for ct, media in body.get("content", {}).items():
                    walk_schema(media.get("schema", {}), doc, where + " body", p)
                    for name, ex in media.get("examples", {}).items():
                        errs = validate(ex.get("value"), media.get("schema", {}), doc)
                        if errs:
                            p.append("%s: example %s does not match its schema: %s" % (where, name, errs[:3]))
            if not op.get("responses"):
                p.append("%s: no responses" % where)
            for code, resp in op.get("responses", {}).items():
                if not re.fullmatch(r"[1-5]\d\d", code):
                    p.append("%s: response key %r" % (where, code))
                if "$ref" in resp:
                    resp = resolve(resp["$ref"], doc)
                if not resp.get("description"):
                    p.append("%s %s: no description" % (where, code))
                for h in resp.get("headers", {}).values():
                    if "$ref" in h:
                        h = resolve(h["$ref"], doc)
                    walk_schema(h.get("schema", {}), doc, "%s %s header" % (where, code), p)
                for ct, media in resp.get("content", {}).items():
                    walk_schema(media.get("schema", {}), doc, "%s %s %s" % (where, code, ct), p)
    for name, sch in doc.get("components", {}).get("schemas", {}).items():
        walk_schema(sch, doc, "#/components/schemas/" + name, p)
    return p
