#!/usr/bin/python3
"""check_reports.py: validate a shardproof report document (run with Debian's /usr/bin/python3).

usage: check_reports.py FORMAT EXIT_CODE FILE
  FORMAT     json, sarif or junit
  EXIT_CODE  the exit code of the shardproof run that wrote FILE (the document must agree)

JSON: parsed, the schema-2 keys and types (rank as coordinates, element as an array, the
counterexample as {name, value} objects with exact rationals).  SARIF: the properties SARIF 2.1.0
requires and the references it constrains (ruleId/ruleIndex against tool.driver.rules,
uriBaseId against originalUriBaseIds, regions, related-location ids, invocations).  JUnit: parsed
by a real XML parser (xml.etree), counts against the test cases, test names without line
numbers.  Prints one line per problem and exits 1 if there is any.
"""
import json
import re
import sys
import xml.etree.ElementTree as ET

VERDICTS = {0: "EQUIVALENT", 1: "NOT_EQUIVALENT", 2: "BAD_INPUT", 3: "UNKNOWN", 4: "INTERNAL_ERROR"}
RATIONAL = re.compile(r"^-?[0-9]+(/[0-9]+)?$")
problems = []


def bad(msg):
    problems.append(msg)


def need(obj, key, typ, where):
    if not isinstance(obj, dict) or key not in obj:
        bad(f"{where}: missing '{key}'")
        return None
    v = obj[key]
    if typ is not None and not isinstance(v, typ):
        bad(f"{where}.{key}: expected {typ}, got {type(v).__name__}")
        return None
    return v


def check_json(doc, rc):
    for k, t in [("tool", str), ("version", str), ("schema", int), ("verdict", str),
                 ("exit_code", int), ("seed", int), ("mesh", dict), ("dims", list),
                 ("summary", dict), ("stages", list), ("diagnostics", list)]:
        need(doc, k, t, "$")
    if doc.get("schema") != 2:
        bad("$.schema: expected 2")
    if doc.get("exit_code") != rc or doc.get("verdict") != VERDICTS.get(rc):
        bad(f"$.verdict/exit_code {doc.get('verdict')}/{doc.get('exit_code')} disagree with exit {rc}")
    for k in ("file", "plan", "model"):
        if k not in doc or not (doc[k] is None or isinstance(doc[k], str)):
            bad(f"$.{k}: expected a string or null")
    for i, s in enumerate(doc.get("stages", [])):
        w = f"$.stages[{i}]"
        for k, t in [("id", int), ("kind", str), ("status", str), ("plan_tensor", str),
                     ("model_tensor", str), ("layout", str), ("plan_loc", dict),
                     ("model_loc", dict), ("elements", int)]:
            need(s, k, t, w)
        for k in ("plan_loc", "model_loc"):
            if isinstance(s.get(k), dict):
                check_origin(s[k], f"{w}.{k}")
        # an unknown stage that a limit stopped before its first element query has only a
        # reason: no rank, element or values
        stopped = s.get("status") == "unknown" and "rank" not in s
        if stopped and any(k in s for k in ("element", "shard_shape", "plan_value", "model_value")):
            bad(f"{w}: an element without a rank")
        if s.get("status") == "failed" or (s.get("status") == "unknown" and not stopped):
            rank = need(s, "rank", dict, w) or {}
            if set(rank) != set(doc.get("mesh", {})) or not all(isinstance(v, int) for v in rank.values()):
                bad(f"{w}.rank: expected the coordinates of every mesh axis")
            el = need(s, "element", list, w) or []
            if not all(isinstance(v, int) and v >= 0 for v in el):
                bad(f"{w}.element: expected nonnegative integers")
        if s.get("status") == "failed":
            for j, a in enumerate(need(s, "counterexample", list, w) or []):
                if not isinstance(a, dict) or set(a) != {"name", "value"}:
                    bad(f"{w}.counterexample[{j}]: expected {{name, value}}")
                elif not RATIONAL.match(a["value"]):
                    bad(f"{w}.counterexample[{j}].value: not an exact rational: {a['value']!r}")
            need(need(s, "values", dict, w), "exact", bool, w + ".values")
        if s.get("status") == "unknown":
            need(s, "reason", str, w)
    for i, d in enumerate(doc.get("diagnostics", [])):
        for k, t in [("severity", str), ("code", str), ("line", int), ("column", int),
                     ("message", str)]:
            need(d, k, t, f"$.diagnostics[{i}]")
    if rc == 2 and not any(d.get("severity") == "error" for d in doc.get("diagnostics", [])):
        bad("$.diagnostics: bad input without an error")


URI_BAD = re.compile(r"[\s<>\"{}|\\^`]")


def check_artifact(a, bases, w):
    uri = need(a, "uri", str, w)
    if uri is not None and (URI_BAD.search(uri) or uri == ""):
        bad(f"{w}.uri: not a URI reference: {uri!r}")
    if "uriBaseId" in a:
        if a["uriBaseId"] not in bases:
            bad(f"{w}.uriBaseId: '{a['uriBaseId']}' is not in run.originalUriBaseIds")
        if uri is not None and re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", uri):
            bad(f"{w}.uri: an absolute URI with a uriBaseId")
    elif uri is not None and not uri.startswith("file:"):
        bad(f"{w}.uri: a relative URI without a uriBaseId")


def check_origin(o, w):
    """A location's source-map origin ('#@ ORIGIN'), when present: 1 to 200 printable ASCII."""
    if "origin" in o and not (isinstance(o["origin"], str) and 1 <= len(o["origin"]) <= 200
                              and all(" " <= c <= "~" for c in o["origin"])):
        bad(f"{w}.origin: expected 1 to 200 printable ASCII characters")


def check_location(loc, bases, w):
    if not isinstance(loc, dict):
        bad(f"{w}: expected an object")
        return
    if "properties" in loc:
        if isinstance(loc["properties"], dict):
            check_origin(loc["properties"], w + ".properties")
        else:
            bad(f"{w}.properties: expected an object")
    if "id" in loc and (not isinstance(loc["id"], int) or loc["id"] < 0):
        bad(f"{w}.id: expected a nonnegative integer")
    if "message" in loc:
        need(loc["message"], "text", str, w + ".message")
    phys = loc.get("physicalLocation")
    if phys is None:
        return
    art = need(phys, "artifactLocation", dict, w + ".physicalLocation")
    if art is not None:
        check_artifact(art, bases, w + ".physicalLocation.artifactLocation")
    reg = phys.get("region")
    if reg is not None:
        for k in ("startLine", "startColumn"):
            if k in reg and (not isinstance(reg[k], int) or reg[k] < 1):
                bad(f"{w}.physicalLocation.region.{k}: expected an integer >= 1")


def check_sarif(doc, rc):
    if doc.get("version") != "2.1.0":
        bad("$.version: expected '2.1.0'")
    runs = need(doc, "runs", list, "$") or []
    if len(runs) != 1:
        bad("$.runs: expected one run")
    for r, run in enumerate(runs):
        w = f"$.runs[{r}]"
        driver = need(need(run, "tool", dict, w), "driver", dict, w + ".tool")
        need(driver, "name", str, w + ".tool.driver")
        rules = (driver or {}).get("rules", [])
        ids = []
        for i, rule in enumerate(rules):
            ids.append(need(rule, "id", str, f"{w}.tool.driver.rules[{i}]"))
            lvl = rule.get("defaultConfiguration", {}).get("level", "warning")
            if lvl not in ("none", "note", "warning", "error"):
                bad(f"{w}.tool.driver.rules[{i}]: bad level {lvl!r}")
        if len(set(ids)) != len(ids):
            bad(f"{w}.tool.driver.rules: duplicate ids")
        bases = run.get("originalUriBaseIds", {})
        for k, v in bases.items():
            if not isinstance(v, dict):
                bad(f"{w}.originalUriBaseIds.{k}: expected an artifactLocation")
            elif "uri" in v and not (re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", v["uri"]) and v["uri"].endswith("/")):
                bad(f"{w}.originalUriBaseIds.{k}.uri: must be absolute and end with '/'")
        for i, inv in enumerate(run.get("invocations", [])):
            need(inv, "executionSuccessful", bool, f"{w}.invocations[{i}]")
            if inv.get("exitCode") != rc:
                bad(f"{w}.invocations[{i}].exitCode {inv.get('exitCode')} != exit {rc}")
        results = need(run, "results", list, w) or []
        levels = set()
        for i, res in enumerate(results):
            rw = f"{w}.results[{i}]"
            msg = need(res, "message", dict, rw)
            if msg is not None and "text" not in msg and "id" not in msg:
                bad(f"{rw}.message: needs text or id")
            lvl = res.get("level", "warning")
            levels.add(lvl)
            if lvl not in ("none", "note", "warning", "error"):
                bad(f"{rw}.level: {lvl!r}")
            if "ruleIndex" in res:
                k = res["ruleIndex"]
                if not isinstance(k, int) or not 0 <= k < len(ids):
                    bad(f"{rw}.ruleIndex: out of range")
                elif "ruleId" in res and ids[k] != res["ruleId"]:
                    bad(f"{rw}: ruleId {res['ruleId']!r} is not rules[{k}]")
            elif "ruleId" in res and res["ruleId"] not in ids:
                bad(f"{rw}.ruleId: not a rule of the driver")
            for j, loc in enumerate(res.get("locations", [])):
                check_location(loc, bases, f"{rw}.locations[{j}]")
            rel_ids = []
            for j, loc in enumerate(res.get("relatedLocations", [])):
                check_location(loc, bases, f"{rw}.relatedLocations[{j}]")
                rel_ids.append(loc.get("id"))
            if len(set(rel_ids)) != len(rel_ids):
                bad(f"{rw}.relatedLocations: duplicate ids")
            if "properties" in res and not isinstance(res["properties"], dict):
                bad(f"{rw}.properties: expected an object")
        if rc in (1, 2) and "error" not in levels:
            bad(f"{w}.results: exit {rc} without an error result")
        if rc == 0 and results:
            bad(f"{w}.results: EQUIVALENT with results")


def check_junit(text, rc):
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        bad(f"not well-formed XML: {e}")
        return
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    if root.tag not in ("testsuites", "testsuite") or not suites:
        bad("no testsuite")
    verdict = None
    for s in suites:
        cases = s.findall("testcase")
        fails = sum(len(c.findall("failure")) for c in cases)
        errs = sum(len(c.findall("error")) for c in cases)
        for k, n in (("tests", len(cases)), ("failures", fails), ("errors", errs)):
            if s.get(k) != str(n):
                bad(f"testsuite {s.get('name')!r}: {k}={s.get(k)}, counted {n}")
        names = [c.get("name") for c in cases]
        if len(set(names)) != len(names):
            bad("testcase names are not unique")
        for c in cases:
            if not c.get("classname") or not c.get("name"):
                bad("a testcase without classname or name")
            elif re.search(r"\bline\b|:\d+", c.get("name")):
                bad(f"testcase name {c.get('name')!r} contains a line number")
        for p in s.iter("property"):
            if p.get("name") == "verdict":
                verdict = p.get("value")
        if rc == 1 and fails == 0:
            bad("NOT EQUIVALENT without a failure")
        if rc in (2, 3) and errs == 0:
            bad(f"exit {rc} without an error")
        if rc == 0 and fails + errs:
            bad("EQUIVALENT with failures or errors")
    if verdict != VERDICTS.get(rc):
        bad(f"verdict property {verdict!r} disagrees with exit {rc}")


def main():
    fmt, rc, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        print(f"{path}: not UTF-8: {e}")
        return 1
    if fmt == "junit":
        check_junit(text, rc)
    else:
        try:
            doc = json.loads(text)
        except ValueError as e:
            print(f"{path}: not JSON: {e}")
            return 1
        (check_json if fmt == "json" else check_sarif)(doc, rc)
    for p in problems:
        print(f"{path} ({fmt}, exit {rc}): {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
