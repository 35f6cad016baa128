"""make install PREFIX=DIR: the installed command finds its installed agent."""
import os
import shutil
import tempfile

from harness import check, run_process, ROOT, eq, contains, workload


@check("make install PREFIX=DIR installs bin/leakscope and lib/leakscope/libleakscope.so, and they work together")
def t_install():
    prefix = tempfile.mkdtemp(prefix="leakscope-prefix-")
    try:
        r = run_process(["make", "-s", "-C", ROOT, "install", "PREFIX=" + prefix],
                        timeout=300)
        eq(r.returncode, 0, "make install status: " + r.stderr.decode()[-500:])
        cmd = os.path.join(prefix, "bin", "leakscope")
        agent = os.path.join(prefix, "lib", "leakscope", "libleakscope.so")
        eq(os.access(cmd, os.X_OK), True, "installed command is executable")
        eq(os.path.exists(agent), True, "installed agent exists")
        env = dict(os.environ)
        env.pop("LEAKSCOPE_AGENT", None)
        # Moved away from the build tree, it must still find its agent.
        r = run_process([cmd, "run", "--", workload("basic")], env=env, timeout=60)
        eq(r.returncode, 0, "installed leakscope run status: " + r.stderr.decode()[-500:])
        contains(r.stderr.decode(), "74776 bytes live in 16 blocks",
                 "report of the installed tool")
    finally:
        shutil.rmtree(prefix, ignore_errors=True)
