#!/usr/bin/env python3
"""run.py - run the integration checks (tests/integration/t_*.py) as TAP.

usage: python3 tests/integration/run.py [-k SUBSTRING] [t_FILE ...]

Prints one TAP line per check ("ok N - t_file: what it proves", with the
expected/got diagnostics as '#' lines under a failure), then the plan and
a '# N passed, N failed, N skipped' comment.  Exits 1 when a check failed.
"""

import argparse
import glob
import importlib
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402


def test_modules(selected):
    names = sorted(os.path.basename(p)[:-3]
                   for p in glob.glob(os.path.join(HERE, "t_*.py")))
    if selected:
        wanted = {os.path.basename(s).rsplit(".py", 1)[0] for s in selected}
        unknown = wanted - set(names)
        if unknown:
            sys.exit("run.py: no such test file: %s" % ", ".join(sorted(unknown)))
        names = [n for n in names if n in wanted]
    return names


def diag(text):
    for line in str(text).rstrip("\n").splitlines():
        print("#   " + line)


def main():
    ap = argparse.ArgumentParser(description="leakscope integration tests")
    ap.add_argument("-k", dest="substring", default="",
                    help="only checks whose name contains SUBSTRING")
    ap.add_argument("files", nargs="*", help="t_*.py files to run")
    args = ap.parse_args()

    n = passed = failed = skipped = 0
    for modname in test_modules(args.files):
        try:
            importlib.import_module(modname)
            checks = harness.REGISTRY.get(modname, [])
        except Exception:  # noqa: BLE001 - a broken test file is a failure
            n += 1
            failed += 1
            print("not ok %d - %s: loads" % (n, modname))
            diag(traceback.format_exc())
            continue
        for name, fn in checks:
            if args.substring and args.substring not in name:
                continue
            n += 1
            title = "%s: %s" % (modname, name)
            started = time.monotonic()
            try:
                fn()
            except harness.Skip as e:
                skipped += 1
                print("ok %d - %s # SKIP %s" % (n, title, e))
            except harness.Failure as e:
                failed += 1
                print("not ok %d - %s" % (n, title))
                diag(e)
            except Exception:  # noqa: BLE001 - a bug in the check
                failed += 1
                print("not ok %d - %s" % (n, title))
                diag(traceback.format_exc())
            else:
                passed += 1
                print("ok %d - %s (%.1fs)" % (n, title,
                                              time.monotonic() - started))
            sys.stdout.flush()
        harness.cleanup()
    print("1..%d" % n)
    print("# totals: %d ok, %d not ok, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
