#!/bin/sh
# tests/security/ubsan.sh - the report library and the unit tests that
# feed it hostile input (t-lib-hostile: figures at the edges of their
# types, empty arrays; t-lib-snapshot, t-lib-postmortem: corrupt files;
# t-lib-report, t-lib-diff, t-lib-redact) built with
# -fsanitize=undefined, stopping at the first undefined behaviour: signed
# overflow, NULL given to qsort or memcpy, a misaligned load.
#
# Run from the top of the tree after `make` (it needs build/gen):
#   sh tests/security/ubsan.sh
# Prints TAP; exits 0 when every test ran clean, 1 otherwise.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d "${TMPDIR:-/tmp}/leakscope-ubsan.XXXXXX")
trap 'rm -rf "$out"' EXIT
cd "$top" || exit 1
if [ ! -f build/gen/flamegraph-js.h ]; then
	echo "Bail out! run make first (build/gen/flamegraph-js.h is missing)"
	exit 1
fi
flags="-O1 -g -std=gnu11 -D_GNU_SOURCE -DLS_LIBDIR=\"/usr/local/lib/leakscope\"
 -I/usr/include/libiberty -Ibuild/gen -DLS_HAVE_BPF
 -fsanitize=undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
libs="-ldw -lelf -l:libiberty.a -lz -lm -lpthread -lbpf"
tests="t-lib-hostile t-lib-snapshot t-lib-postmortem t-lib-report t-lib-diff t-lib-redact"
n=0 failed=0
# the library once, then each test against it
for f in lib/*.c common/cfi.c; do
	o="$out/$(echo "$f" | tr / _).o"
	# shellcheck disable=SC2086
	cc $flags -c -o "$o" "$f" 2>>"$out/lib.cc" || {
		echo "Bail out! $f does not build"; cat "$out/lib.cc"; exit 1; }
done
ar rcs "$out/lib.a" "$out"/*.o
echo "1..$(echo $tests | wc -w)"
for t in $tests; do
	n=$((n + 1))
	# shellcheck disable=SC2086
	if ! cc $flags -o "$out/$t" "tests/unit/$t.c" "$out/lib.a" \
	     $libs 2>"$out/$t.cc"; then
		echo "not ok $n - $t: does not build"
		sed 's/^/# /' "$out/$t.cc" | head -20
		failed=$((failed + 1))
		continue
	fi
	if UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "$out/$t" \
	   >"$out/$t.out" 2>&1 && ! grep -q "runtime error" "$out/$t.out"; then
		echo "ok $n - $t: no undefined behaviour"
	else
		echo "not ok $n - $t"
		grep -A8 "runtime error\|^not ok" "$out/$t.out" | sed 's/^/# /' | head -30
		failed=$((failed + 1))
	fi
done
[ "$failed" -eq 0 ]
