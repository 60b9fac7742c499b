"""A strict parser of the Prometheus text exposition format 0.0.4 (standard library only).

    families = parse(text)   # {name: {"type", "help", "samples": [(name, {labels}, value)]}}

Raises ValueError naming the line for anything the format does not allow or a scraper would
misread: a malformed name, label or value, bad escapes, a TYPE or HELP given twice or a TYPE after
its samples, a family's samples not contiguous, a repeated series, a sample of a histogram that is
not _bucket/_sum/_count, buckets without le, not cumulative, without +Inf or disagreeing with
_count, a missing final newline.
"""
import math
import re

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def _value(s, where):
    if s in ("+Inf", "Inf"):
        return math.inf
    if s == "-Inf":
        return -math.inf
    if s == "NaN":
        return math.nan
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", s):
        raise ValueError("%s: bad value %r" % (where, s))
    return float(s)


def _labels(s, i, where):
    """Parse {a="b",...} starting at s[i] == '{'; returns (labels, index after '}')."""
    labels = {}
    i += 1
    while True:
        if s[i:i + 1] == "}":
            return labels, i + 1
        m = LABEL.match(s, i)
        if not m:
            raise ValueError("%s: bad label name at %r" % (where, s[i:i + 20]))
        name = m.group(0)
        i = m.end()
        if s[i:i + 2] != '="':
            raise ValueError("%s: label %s lacks =\"" % (where, name))
        i += 2
        out = []
        while True:
            if i >= len(s):
                raise ValueError("%s: unterminated label value" % where)
            c = s[i]
            if c == "\\":
                nxt = s[i + 1:i + 2]
                if nxt not in ("\\", '"', "n"):
                    raise ValueError("%s: bad escape \\%s" % (where, nxt))
                out.append("\n" if nxt == "n" else nxt)
                i += 2
            elif c == '"':
                i += 1
                break
            else:
                out.append(c)
                i += 1
        if name in labels:
            raise ValueError("%s: label %s repeated" % (where, name))
        labels[name] = "".join(out)
        if s[i:i + 1] == ",":
            i += 1
        elif s[i:i + 1] != "}":
            raise ValueError("%s: expected , or } after label %s" % (where, name))


def _family_of(sample, families):
    for suffix in ("_bucket", "_sum", "_count"):
        if sample.endswith(suffix):
            base = sample[: -len(suffix)]
            if base in families and families[base]["type"] in ("histogram", "summary"):
                return base
    return sample


def parse(text):
    if text and not text.endswith("\n"):
        raise ValueError("the exposition does not end with a newline")
    families, order, done, series = {}, [], set(), set()
    current = None
    for n, line in enumerate(text.split("\n")[:-1], 1):
        where = "line %d %r" % (n, line[:80])
        if line == "":
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 2 and parts[1] in ("HELP", "TYPE"):
                if len(parts) < 3 or not NAME.fullmatch(parts[2]):
                    raise ValueError("%s: bad metric name" % where)
                name = parts[2]
                fam = families.setdefault(name, {"type": None, "help": None, "samples": []})
                if name in done or fam["samples"]:
                    raise ValueError("%s: %s after the samples of %s" % (where, parts[1], name))
                key = parts[1].lower()
                if fam[key] is not None:
                    raise ValueError("%s: second %s for %s" % (where, parts[1], name))
                rest = parts[3] if len(parts) > 3 else ""
                if key == "type" and rest not in TYPES:
                    raise ValueError("%s: unknown type %r" % (where, rest))
                fam[key] = rest
                if current and current != name:
                    done.add(current)
                current = name
            continue
        m = NAME.match(line)
        if not m:
            raise ValueError("%s: bad sample name" % where)
        sname, i = m.group(0), m.end()
        labels = {}
        if line[i:i + 1] == "{":
            labels, i = _labels(line, i, where)
        if line[i:i + 1] != " ":
            raise ValueError("%s: expected a space before the value" % where)
        fields = line[i + 1:].split(" ")
        if not 1 <= len(fields) <= 2:
            raise ValueError("%s: expected value [timestamp]" % where)
        value = _value(fields[0], where)
        if len(fields) == 2 and not re.fullmatch(r"-?\d+", fields[1]):
            raise ValueError("%s: bad timestamp" % where)
        fname = _family_of(sname, families)
        fam = families.setdefault(fname, {"type": None, "help": None, "samples": []})
        if fname in done:
            raise ValueError("%s: samples of %s are not contiguous" % (where, fname))
        if current and current != fname:
            done.add(current)
        current = fname
        key = (sname, tuple(sorted(labels.items())))
        if key in series:
            raise ValueError("%s: series repeated" % where)
        series.add(key)
        if fam["type"] == "counter" and not (value >= 0):
            raise ValueError("%s: a counter below zero" % where)
        fam["samples"].append((sname, labels, value))
        if fname not in order:
            order.append(fname)
    for name, fam in families.items():
        if fam["type"] == "histogram":
            _check_histogram(name, fam)
        elif fam["type"] is not None:
            for sname, _, _ in fam["samples"]:
                if sname != name:
                    raise ValueError("%s: sample %s in a %s family" % (name, sname, fam["type"]))
    return families


def _check_histogram(name, fam):
    groups = {}
    for sname, labels, value in fam["samples"]:
        suffix = sname[len(name):]
        if suffix not in ("_bucket", "_sum", "_count"):
            raise ValueError("histogram %s has sample %s" % (name, sname))
        rest = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
        g = groups.setdefault(rest, {"buckets": [], "sum": None, "count": None})
        if suffix == "_bucket":
            if "le" not in labels:
                raise ValueError("histogram %s: bucket without le" % name)
            g["buckets"].append((_value(labels["le"], name + " le"), value))
        else:
            g[suffix[1:]] = value
    for rest, g in groups.items():
        b = sorted(g["buckets"])
        if not b or b[-1][0] != math.inf:
            raise ValueError("histogram %s%r: no +Inf bucket" % (name, rest))
        if any(b[i][1] > b[i + 1][1] for i in range(len(b) - 1)):
            raise ValueError("histogram %s%r: buckets not cumulative" % (name, rest))
        if g["count"] is None or g["sum"] is None or g["count"] != b[-1][1]:
            raise ValueError("histogram %s%r: _count/_sum missing or _count != +Inf bucket" % (name, rest))
