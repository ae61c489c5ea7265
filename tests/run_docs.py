#!/usr/bin/python3
"""run_docs.py: run every code block of README.md and docs/*.md that is a plan or a command.

usage: run_docs.py SHARDPROOF [FILE.md...]

Every fenced block must say what it is (its info string); an unlabelled block is an error, so
no example escapes.  The labels:

  sp           a complete file (dims, model, plan): `shardproof check` must give EQUIVALENT, or
               what a '# expect:' line in it says, in the format of tests/plans (NOT EQUIVALENT at
               line N | UNKNOWN | example.sp:L:C: error: MSG); '# args:' adds options.  The file
               is checked as example.sp.
  sq           engine queries: `shardproof equiv` must exit 0 (or '# expect exit N').
  sh           a shell script, run by bash -eo pipefail; it must exit 0 (or '# expect exit N').
               A line '# not run ...' (a cluster, an install) only checks the syntax (bash -n).
               A line '# needs torch ...' runs it only when the Python of the PyTorch front end
               ($SHARDPROOF_PYTHON, default /usr/bin/python3) imports torch; otherwise the block
               is skipped and the skip is printed.
  console      '$ command' lines, each followed by its output: the command is run and its
               stdout+stderr must equal the lines shown; a line '...' stands for any lines.
  sp-fragment  a piece of a plan (a statement, an expression): not a whole file, not run.
  text, c, json, xml, grammar, python   output, diagrams, code shown as is: not run.

'```sp file=docs/examples/x.sp' also requires the block to be that file, byte for byte.

Commands run in a scratch directory where docs/, tests/ and build/release/ lead to the sources
and the binary under test, `shardproof` is on PATH, and plan.sp is docs/examples/mlp.sp.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = {"sp", "sq", "sh", "console"}
SHOWN = {"sp-fragment", "text", "c", "json", "xml", "grammar", "python"}
TIMEOUT = 600

problems = []
counts = {}
skipped = []
_torch = None


def torch_missing():
    """Why blocks marked '# needs torch' cannot run, or None when they can."""
    global _torch
    if _torch is None:
        py = os.environ.get("SHARDPROOF_PYTHON") or "/usr/bin/python3"
        try:
            ok = subprocess.run([py, "-c", "import torch"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, timeout=TIMEOUT).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        _torch = "" if ok else f"{py} cannot import torch (make deps-torch)"
    return _torch or None


def bad(where, msg):
    problems.append(f"{where}: {msg}")


def blocks(path):
    """(line, label, text, attributes) of every fenced block."""
    out, label, start, body, fence, attrs = [], None, 0, [], None, {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = re.match(r"^(\s*)(```+)\s*(\S*)\s*(.*)$", line)
            if fence is None and m:
                fence, label, start, body = (m.group(1), m.group(2)), m.group(3), n, []
                attrs = dict(a.split("=", 1) for a in m.group(4).split() if "=" in a)
            elif fence is not None and re.match(r"^\s*" + fence[1] + r"\s*$", line):
                indent = len(fence[0])
                text = "".join(l[indent:] if l[:indent].strip() == "" else l for l in body)
                out.append((start, label, text, attrs))
                fence = None
            elif fence is not None:
                body.append(line)
    if fence is not None:
        bad(f"{path}:{start}", "unterminated code block")
    return out


def run(cmd, cwd, env, stdin=None):
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, input=stdin, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=TIMEOUT)
        return p.returncode, p.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return -1, f"(timed out after {TIMEOUT} s)"


def expect_exit(text):
    m = re.search(r"^#\s*expect exit (\d+)\s*$", text, re.M)
    return int(m.group(1)) if m else 0


def check_sp(where, text, scratch, env, binary):
    path = os.path.join(scratch, "example.sp")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    m = re.search(r"^# expect: *(.*)$", text, re.M)
    expect = m.group(1).strip() if m else "EQUIVALENT"
    a = re.search(r"^# args: *(.*)$", text, re.M)
    args = a.group(1).split() if a else []
    rc, out = run([binary, "check", "example.sp", "--no-progress"] + args, scratch, env)
    if ": error: " in expect:
        if rc != 2 or expect not in out.splitlines():
            bad(where, f"expected '{expect}' (exit 2), got exit {rc}: {out[:300]}")
    elif expect.startswith("NOT EQUIVALENT at line "):
        line = expect.split()[-1]
        if rc != 1 or f"  plan line:   example.sp:{line}:" not in out:
            bad(where, f"expected NOT EQUIVALENT at line {line}, got exit {rc}: {out[:400]}")
    elif expect == "UNKNOWN":
        if rc != 3:
            bad(where, f"expected UNKNOWN, got exit {rc}: {out[:300]}")
    elif rc != 0:
        bad(where, f"expected EQUIVALENT, got exit {rc}: {out[:400]}")


def check_console(where, text, scratch, env):
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            bad(where, f"console block: expected a '$ ' command, found {lines[i]!r}")
            return
        cmd = lines[i][2:]
        i += 1
        want = []
        while i < len(lines) and not lines[i].startswith("$ "):
            want.append(lines[i])
            i += 1
        rc, out = run(["bash", "-o", "pipefail", "-c", cmd], scratch, env)
        if not matches(want, out.splitlines()):
            bad(where, f"'{cmd}' printed:\n{out}\nnot what the block shows:\n" + "\n".join(want))


def matches(want, got):
    """want's lines equal got's, '...' standing for any number of lines (or the rest of one)."""
    if not want:
        return not got
    w = want[0]
    if w == "...":
        return any(matches(want[1:], got[k:]) for k in range(len(got) + 1))
    if not got:
        return False
    if w.endswith("...") and got[0].startswith(w[:-3]):
        return matches(want[1:], got[1:])
    return w == got[0] and matches(want[1:], got[1:])


def main():
    binary = os.path.abspath(sys.argv[1])
    files = sys.argv[2:] or [os.path.join(ROOT, "README.md")] + sorted(
        os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs"))
        if f.endswith(".md"))
    scratch_root = tempfile.mkdtemp(prefix="sp-docs-")
    try:
        for path in files:
            rel = os.path.relpath(path, ROOT)
            for line, label, text, attrs in blocks(path):
                where = f"{rel}:{line}"
                if "file" in attrs:
                    try:
                        with open(os.path.join(ROOT, attrs["file"]), encoding="utf-8") as f:
                            if f.read() != text:
                                bad(where, f"the block differs from {attrs['file']}")
                    except OSError as e:
                        bad(where, f"file={attrs['file']}: {e}")
                if label not in RUN | SHOWN:
                    bad(where, f"code block labelled {label!r}: label it sp, sq, sh, console, "
                               f"sp-fragment or text (tests/run_docs.py)")
                    continue
                counts[label] = counts.get(label, 0) + 1
                if label in SHOWN:
                    continue
                scratch = tempfile.mkdtemp(dir=scratch_root)
                os.symlink(os.path.join(ROOT, "docs"), os.path.join(scratch, "docs"))
                os.symlink(os.path.join(ROOT, "tests"), os.path.join(scratch, "tests"))
                os.makedirs(os.path.join(scratch, "build"))
                os.symlink(os.path.dirname(binary), os.path.join(scratch, "build", "release"))
                shutil.copy(os.path.join(ROOT, "docs", "examples", "mlp.sp"),
                            os.path.join(scratch, "plan.sp"))
                env = dict(os.environ)
                env["PATH"] = os.path.dirname(binary) + os.pathsep + env.get("PATH", "")
                if label == "sp":
                    check_sp(where, text, scratch, env, binary)
                elif label == "sq":
                    with open(os.path.join(scratch, "q.sq"), "w", encoding="utf-8") as f:
                        f.write(text)
                    rc, out = run([binary, "equiv", "q.sq"], scratch, env)
                    if rc != expect_exit(text):
                        bad(where, f"equiv: exit {rc}, expected {expect_exit(text)}: {out[:300]}")
                elif label == "sh":
                    norun = re.search(r"^#\s*not run\b", text, re.M)
                    if re.search(r"^#\s*needs torch\b", text, re.M) and torch_missing():
                        skipped.append(f"{where}: skipped: {torch_missing()}")
                        counts[label] -= 1
                        continue
                    cmd = ["bash", "-n"] if norun else ["bash", "-eo", "pipefail"]
                    rc, out = run(cmd, scratch, env, stdin=text.encode())
                    want = 0 if norun else expect_exit(text)
                    if rc != want:
                        bad(where, f"exit {rc}, expected {want}: {out[:400]}")
                else:
                    check_console(where, text, scratch, env)
    finally:
        shutil.rmtree(scratch_root, ignore_errors=True)
    for p in skipped + problems:
        print(f"docs: {p}")
    ran = sum(counts.get(k, 0) for k in RUN)
    print(f"docs: {ran} blocks run ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}"
          + (f"; {len(skipped)} skipped" if skipped else "") + "); "
          + ("passed" if not problems else f"{len(problems)} FAILED"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
