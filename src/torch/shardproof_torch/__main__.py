"""python3 -m shardproof_torch FILE.py --world N [-o OUT.sp]: capture and write the plan file.

Exit codes: 0 written, 2 a problem in the user's file or something the capture cannot
represent (the message names the Python file:line), 4 an internal error.
"""

import argparse
import os
import sys
import traceback


def main(argv=None):
    ap = argparse.ArgumentParser(prog="shardproof torch",
                                 description="capture single() and parallel(rank, world) of a "
                                             "PyTorch file and write a shardproof plan file")
    ap.add_argument("file")
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("-o", "--output", default="-")
    ap.add_argument("--timeout", type=int, default=300)
    a = ap.parse_args(argv)
    if a.world < 1 or a.world > 64:
        print("shardproof: error: --world must be between 1 and 64", file=sys.stderr)
        return 2
    if not os.path.isfile(a.file):
        print("shardproof: error: %s: no such file" % a.file, file=sys.stderr)
        return 2
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print("shardproof: error: PyTorch is not importable from %s (%s): install Debian's "
              "python3-torch (apt-get install python3-torch), or set SHARDPROOF_PYTHON to a "
              "python3 that can import torch" % (sys.executable, e), file=sys.stderr)
        return 2
    from .capture import CaptureError
    from .emit import EmitError, emit
    from .run import UserError, capture
    try:
        single, ranks = capture(a.file, a.world, a.timeout)
        cmd = "shardproof torch %s --world %d" % (os.path.basename(a.file), a.world)
        text = emit(a.file, a.world, single, ranks, cmd)
    except (UserError, EmitError, CaptureError) as e:
        print("shardproof: error: %s" % e, file=sys.stderr)
        return 2
    except Exception:
        print("shardproof: internal error in the torch capture:\n%s" % traceback.format_exc(),
              file=sys.stderr)
        return 4
    if a.output == "-":
        sys.stdout.write(text)
    else:
        with open(a.output, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
