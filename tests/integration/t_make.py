"""The Makefile's eBPF decision: made from what is installed when the build
runs, said only when true.  The tools are made absent or present by PATH
(a directory of links to every program but clang and bpftool, plus stub
clang and bpftool scripts), the header and the BTF file by pointing
LIBBPF_H and VMLINUX_BTF at files that exist or not: nothing is installed
or removed."""
import os
import shutil
import tempfile

from harness import check, once, at_file_end, run_process, ROOT, eq, ok, contains

NOTE = "leakscope: building without eBPF tracing (leakscope trace): missing "
# Prints the decision as the Makefile made it, without building anything.
SHOW = ["--eval", "ls-show-bpf: ; @echo 'have=$(HAVE_BPF) missing=$(BPF_MISSING) obj=$(BPF_OBJ)'"]


@once
def dirs():
    top = tempfile.mkdtemp(prefix="leakscope-t-make-")
    at_file_end(lambda: shutil.rmtree(top, ignore_errors=True))
    bare = os.path.join(top, "bare")      # every program but clang* and bpftool
    stubs = os.path.join(top, "stubs")    # clang and bpftool that exist
    os.mkdir(bare)
    os.mkdir(stubs)
    for d in ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"):
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            if name.startswith("clang") or name == "bpftool":
                continue
            link = os.path.join(bare, name)
            if not os.path.lexists(link):
                os.symlink(os.path.join(d, name), link)
    for name in ("clang", "bpftool"):
        with open(os.path.join(stubs, name), "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(os.path.join(stubs, name), 0o755)
    header = os.path.join(top, "libbpf.h")
    btf = os.path.join(top, "vmlinux")
    for p in (header, btf):
        open(p, "w").close()
    return {"top": top, "bare": bare, "stubs": stubs, "header": header, "btf": btf,
            "none": os.path.join(top, "absent")}


def make(args, path, variables):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    env["PATH"] = path
    r = run_process(["make", "--no-print-directory", "-s", "-C", ROOT] + args +
                    ["%s=%s" % kv for kv in variables.items()], env=env, timeout=120)
    return r.returncode, r.stdout.decode(), r.stderr.decode()


def decision(path, **variables):
    rc, out, err = make(SHOW + ["ls-show-bpf"], path, variables)
    eq(rc, 0, "make status (stderr: %s)" % err[-300:])
    return out.strip()


@check("make: clang, bpftool, libbpf.h and the BTF all present: eBPF built, no note")
def t_all_present():
    d = dirs()
    path = d["stubs"] + ":" + d["bare"]
    v = {"BPFTOOL": "bpftool", "LIBBPF_H": d["header"], "VMLINUX_BTF": d["btf"]}
    eq(decision(path, **v),
       "have=yes missing= obj=build/bpf/trace.o build/bpf/tracemodel.o", "decision")
    rc, out, err = make(["bpf-note"], path, v)
    eq((rc, out, err), (0, "", ""), "bpf-note prints nothing")


@check("make: each missing piece is named, and only the missing ones")
def t_each_missing():
    d = dirs()
    clang_only = os.path.join(d["top"], "clang-only")
    os.makedirs(clang_only, exist_ok=True)
    shutil.copy(os.path.join(d["stubs"], "clang"), clang_only)
    v = {"BPFTOOL": os.path.join(d["stubs"], "bpftool"), "LIBBPF_H": d["header"],
         "VMLINUX_BTF": d["btf"]}
    eq(decision(d["bare"], **v), "have= missing=clang obj=", "clang absent from PATH")
    v["BPFTOOL"] = "bpftool"
    eq(decision(clang_only + ":" + d["bare"], **v), "have= missing=bpftool obj=",
       "bpftool absent from PATH")
    eq(decision(d["bare"], **v), "have= missing=clang bpftool obj=",
       "clang and bpftool absent from PATH")
    v = {"BPFTOOL": "bpftool", "LIBBPF_H": d["none"], "VMLINUX_BTF": d["none"]}
    eq(decision(d["stubs"] + ":" + d["bare"], **v),
       "have= missing=libbpf-dev %s obj=" % d["none"], "no libbpf.h, no BTF")
    rc, out, err = make(["bpf-note"], d["bare"], v)
    eq(rc, 0, "bpf-note status")
    eq(err.strip(), NOTE + "clang, bpftool, libbpf-dev, " + d["none"], "bpf-note's line")


@check("make demo: the package install comes before the eBPF decision is said")
def t_demo_order():
    d = dirs()
    # -n prints the top-level recipes (the install) and runs the sub-make
    # with -n, which prints the note's echo: the order is the real order.
    rc, out, err = make(["-n", "demo"], d["bare"], {"BPFTOOL": "bpftool"})
    eq(rc, 0, "make -n demo status (stderr: %s)" % err[-300:])
    text = err + out
    ok("building without eBPF" not in err,
       "nothing said on stderr while the Makefile is read", err[-500:])
    i = out.find("sh tools/install-deps.sh")
    j = out.find("building without eBPF tracing")
    ok(i >= 0 and j > i, "install-deps.sh comes first, then the note", text[-800:])
    contains(out[j:].splitlines()[0], "missing clang, bpftool", "the note names what is missing")
