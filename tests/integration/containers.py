"""containers.py - real containers for the tests: a root file system made
of this machine's own binaries and libraries, and the runtimes that start
a program in it or in other namespaces.

    root = rootfs([workload("cont-leaks")])   # /bin/cont-leaks inside
    c = nspawn(root, ["/bin/cont-leaks"])     # systemd-nspawn
    c = unshare_pid([workload("cont-leaks")]) # other PID namespace only
    c = unshare_root(root, ["/bin/cont-leaks"])  # PID + mount ns, chroot
    c = podman(root, ["/bin/cont-leaks"])  # rootful podman (crun)
    c.pid          # the program's pid as the host sees it
    c.nspid        # ... and as it sees itself
    c.send("r")    # one command on its stdin, its one-line answer
    c.stop()       # its stdin closed; every process of it ended
    beside(c, argv)  # a command run in c's PID namespace with the
                     # host's file system (a sidecar, kubectl debug)

Each runner raises Skip with the reason when the machine cannot run it
(no systemd-nspawn, podman or unshare, namespaces not allowed) and names
itself in c.runtime, which the checks print.  Needs root.
"""

import os
import resource
import select
import shutil
import subprocess
import tempfile
import time

from harness import Failure, Skip

START_TIMEOUT = 20
_UNIQUE = [0]


def _need_root():
    if os.geteuid() != 0:
        raise Skip("containers need root (namespaces, systemd-nspawn)")


def _libraries(path):
    """The libraries ldd lists for path, loader included (absolute)."""
    r = subprocess.run(["ldd", path], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True, timeout=30)
    libs = []
    for line in r.stdout.splitlines():
        words = line.split()
        for w in words:
            if w.startswith("/") and w not in libs:
                libs.append(w)
    return libs


def _copy_into(root, path, inside=None):
    """Copy file path (links followed) to the same path in root, or to
    inside.  Parent directories that are symlinks on the host (/lib ->
    usr/lib on a merged-/usr system) are symlinks in root too."""
    dest = inside or path
    parts = dest.strip("/").split("/")
    cur = root
    host = "/"
    for p in parts[:-1]:
        host = os.path.join(host, p)
        cur = os.path.join(cur, p)
        if os.path.islink(host) and not inside:
            if not os.path.lexists(cur):
                os.symlink(os.readlink(host), cur)
            # the link's target, inside root
            target = os.path.join(os.path.dirname(cur), os.readlink(host))
            os.makedirs(target, exist_ok=True)
        else:
            os.makedirs(cur, exist_ok=True)
    shutil.copy2(os.path.realpath(path), os.path.join(root, dest.lstrip("/")))


def rootfs(binaries, libraries_of=(), hostname=None):
    """A root file system in a new private directory: each binary as
    /bin/NAME, the libraries ldd finds for it and for each file of
    libraries_of (the agent's own, say) at their paths, the loader, an
    empty /usr, /etc/os-release (systemd-nspawn wants both), /proc,
    /dev, /dev/shm and /tmp to mount on, and /etc/hostname when given.
    Its path; the caller removes it (shutil.rmtree)."""
    _need_root()
    root = tempfile.mkdtemp(prefix="ls-rootfs-")
    os.chmod(root, 0o755)
    for d in ("bin", "usr", "etc", "proc", "dev", "dev/shm", "tmp", "sys",
              "run"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    os.chmod(os.path.join(root, "dev", "shm"), 0o1777)
    libs = []
    for b in list(binaries) + list(libraries_of):
        for lib in _libraries(b):
            if lib not in libs:
                libs.append(lib)
    for lib in libs:
        _copy_into(root, lib)
    for b in binaries:
        _copy_into(root, b, "/bin/" + os.path.basename(b))
    shutil.copy2("/etc/os-release", os.path.join(root, "etc", "os-release"))
    if hostname:
        with open(os.path.join(root, "etc", "hostname"), "w") as f:
            f.write(hostname + "\n")
    return root


class Container:
    """A program running under a runtime, driven line by line."""

    def __init__(self, runtime, argv, match, env=None):
        self.runtime = runtime
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env,
                                  start_new_session=True)
        self.pid = self._find(match)
        self.nspid = _nspid(self.pid)

    def _find(self, match):
        """The host pid of the program: a descendant of the runtime whose
        command line starts with match."""
        end = time.time() + START_TIMEOUT
        while time.time() < end:
            for pid in _descendants(self.p.pid):
                try:
                    with open("/proc/%d/cmdline" % pid, "rb") as f:
                        argv0 = f.read().split(b"\0")[0].decode()
                except OSError:
                    continue
                if argv0 == match:
                    return pid
            if self.p.poll() is not None:
                break
            time.sleep(0.05)
        err = self.p.stderr.read1(4096) if self.p.poll() is not None else b""
        self.stop()
        raise Skip("%s could not start %s here: %s" % (
            self.runtime, match, err.decode(errors="replace").strip()[:300]))

    def send(self, cmd, timeout=20):
        """Send a one-letter command; its one-line answer."""
        self.p.stdin.write(cmd.encode() + b"\n")
        self.p.stdin.flush()
        line = b""
        end = time.time() + timeout
        while not line.endswith(b"\n") and time.time() < end:
            r, _, _ = select.select([self.p.stdout], [], [], 0.5)
            if r:
                c = os.read(self.p.stdout.fileno(), 1)
                if not c:
                    break
                line += c
        if not line.endswith(b"\n"):
            raise Failure("%s: the program did not answer %r (got %r)" % (
                self.runtime, cmd, line))
        return line.decode().strip()

    def stop(self):
        """Close its stdin (the program exits at end of input) and wait;
        kill the whole session when it does not end."""
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.p.pid, 9)
            self.p.wait()
        return self.p.returncode


def _children(pid):
    out = []
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def _descendants(pid):
    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        for c in _children(p):
            if c not in seen:
                seen.append(c)
                todo.append(c)
    return seen


def _nspid(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
    return pid


def _need(program):
    path = shutil.which(program)
    if not path:
        raise Skip("%s is not installed" % program)
    return path


def nspawn(root, argv, machine=None, env=None, match=None):
    """argv (paths inside root) as PID 1 of a systemd-nspawn container of
    root, its stdin and stdout piped (--pipe), not registered with
    machined (--register=no) and in our own cgroup (--keep-unit).  c.pid
    is the process whose argv[0] is match (default: argv[0])."""
    _need_root()
    _need("systemd-nspawn")
    _UNIQUE[0] += 1
    machine = machine or "ls-%d-%d" % (os.getpid(), _UNIQUE[0])
    cmd = ["systemd-nspawn", "--register=no", "--keep-unit", "--quiet",
           "--pipe", "-D", root, "--machine=" + machine] + list(argv)
    c = Container("systemd-nspawn", cmd, match or argv[0], env=env)
    c.machine = machine
    return c


class _Podman(Container):
    """A podman container: its program is conmon's child, not ours, and is
    found by `podman inspect`."""

    def _find(self, match):
        end = time.time() + START_TIMEOUT
        while time.time() < end and self.p.poll() is None:
            r = subprocess.run(["podman", "inspect", "-f", "{{.State.Pid}}",
                                self.name], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True,
                               timeout=30)
            pid = int(r.stdout.strip() or 0) if r.returncode == 0 else 0
            if pid > 0:
                return pid
            time.sleep(0.1)
        err = self.p.stderr.read1(4096) if self.p.poll() is not None else b""
        self.stop()
        raise Skip("podman could not start %s here: %s" % (
            match, err.decode(errors="replace").strip()[-300:]))

    def stop(self):
        status = Container.stop(self)
        subprocess.run(["podman", "rm", "-f", "--ignore", self.name],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=60)
        subprocess.run(["podman", "rmi", "-f", self.image],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=60)
        return status


def _podman_limits():
    """--ulimit options no higher than ours: podman would raise
    RLIMIT_NOFILE and RLIMIT_NPROC, which needs CAP_SYS_RESOURCE.  It
    lowers its own RLIMIT_NPROC to 32768 (conmon inherits it): no
    higher than that either."""
    out = []
    for name, res, cap in (("nofile", resource.RLIMIT_NOFILE, None),
                           ("nproc", resource.RLIMIT_NPROC, 32768)):
        soft, hard = resource.getrlimit(res)
        hard = min(x for x in (hard, cap, 1 << 20) if x is not None and
                   x != resource.RLIM_INFINITY)
        out += ["--ulimit", "%s=%d:%d" % (name, min(soft, hard), hard)]
    return out


def podman(root, argv):
    """argv (paths inside root) in a rootful podman container (its OCI
    runtime, crun) of an image imported from a tarball of root (no
    registry), --network none, stdin and stdout attached (-i), no cgroup
    of its own (--cgroups=disabled).  On a host with cgroup v1 and a v2
    mount beside it (hybrid), which crun refuses, podman runs in a mount
    namespace of its own without the v2 mount."""
    _need_root()
    _need("podman")
    _UNIQUE[0] += 1
    name = "ls-%d-%d" % (os.getpid(), _UNIQUE[0])
    image = "localhost/leakscope-test:" + name
    tar = subprocess.Popen(["tar", "-C", root, "-c", "."],
                           stdout=subprocess.PIPE)
    r = subprocess.run(["podman", "import", "-", image], stdin=tar.stdout,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       timeout=120)
    tar.stdout.close()
    tar.wait()
    if r.returncode != 0:
        raise Skip("podman import failed here: %s" % r.stderr.decode(
            errors="replace").strip()[-300:])
    cmd = ["podman", "run", "--rm", "-i", "--name", name, "--network",
           "none", "--cgroups=disabled"] + _podman_limits() + [image] + \
        list(argv)
    if os.path.ismount("/sys/fs/cgroup/unified"):
        cmd = ["unshare", "--mount", "sh", "-c",
               'umount /sys/fs/cgroup/unified && exec "$@"', "sh"] + cmd
    c = _Podman.__new__(_Podman)
    c.name, c.image = name, image
    Container.__init__(c, "podman", cmd, argv[0])
    return c


def unshare_pid(argv, env=None):
    """argv in a new PID namespace (and a mount namespace for its /proc):
    the same file system as ours."""
    _need_root()
    _need("unshare")
    return Container("unshare --pid", ["unshare", "--pid", "--fork",
                                       "--mount-proc"] + list(argv),
                     argv[0], env=env)


def unshare_root(root, argv, env=None):
    """argv (paths inside root) in new PID and mount namespaces, chrooted
    into root (unshare --root), its /proc mounted there."""
    _need_root()
    _need("unshare")
    return Container("unshare --root", ["unshare", "--pid", "--fork",
                                        "--mount", "--mount-proc=/proc",
                                        "--root=" + root] + list(argv),
                     argv[0], env=env)


def beside(c, argv, timeout=60, env=None):
    """Run argv as a sidecar of c (kubectl debug --target, a pod with
    shareProcessNamespace): in c's PID namespace, with its own /proc of
    that namespace, and our file system, not c's.  A CompletedProcess."""
    _need("nsenter")
    cmd = ["nsenter", "--target", str(c.pid), "--pid", "--",
           "unshare", "--mount", "--mount-proc", "--fork"] + list(argv)
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout, env=env)
