#!/bin/sh
# Install the Debian packages leakscope needs to build, test and run its
# demo, if any is missing.  Idempotent: does nothing when all are present.
set -e
# Build: the agent, the report library and the command; eBPF programs
# (clang, libbpf, bpftool; bpftrace for bench/trace-cost); the Erlang NIF and C node (erlang-dev, elixir);
# the web view (libmicrohttpd, Chart.js).  Tests: the real programs traced,
# a browser and go tool pprof to open what users open, valgrind to compare
# leak categories with.  Bench (make bench): heaptrack, the peer it compares
# with, and zstd, which heaptrack compresses its trace with; redis-server and
# redis-tools (redis-benchmark) for the server workload; libjemalloc2, the
# allocator redis-server uses, preloaded into a test workload, and
# libtcmalloc-minimal4, gperftools' allocator, for its heap model.  Oracles and real
# engines in the tests: LeakSanitizer's runtime (libclang-rt-14-dev) and
# libFuzzer for the parsers' fuzz targets, llvm-symbolizer (llvm), rustc for
# Rust-built programs, the C library's debug file (libc6-dbg) for frames named
# through a build-id debug file, Prometheus and Alertmanager for the metrics
# exporter, systemd-nspawn (systemd-container) and podman as real container runtimes,
# PyYAML (python3-yaml) to parse the Kubernetes manifest in deploy/, musl-gcc
# (musl-tools) for a program the glibc-built agent must refuse.
PKGS="gcc g++ make pkg-config libc6-dev libdw-dev libelf-dev libiberty-dev \
zlib1g-dev libunwind8 python3 perl git sqlite3 tmux \
clang llvm libbpf-dev bpftool bpftrace \
erlang-nox erlang-dev elixir \
libmicrohttpd-dev libjs-chart.js \
chromium fonts-dejavu-core golang-go valgrind redis-server redis-tools libjemalloc2 libtcmalloc-minimal4 nginx-light \
heaptrack zstd \
libclang-rt-14-dev rustc libc6-dbg prometheus prometheus-alertmanager systemd-container \
python3-yaml musl-tools podman"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "leakscope: missing Debian packages:$missing (run as root to install them)" >&2
	exit 1
fi
echo "leakscope: installing Debian packages:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
