# leakscope - GNU Makefile
#
#   make              build/leakscope and build/libleakscope.so
#   make check        install missing Debian packages, build, run the tests
#   make fuzz         the fuzz targets (tests/fuzz/, docs/SECURITY.md)
#   make agent-clang  the agent built with clang, build/clang/libleakscope.so
#   make demo         install missing Debian packages, build, run the demo
#   make bench        the benchmarks (not part of check)
#   make install PREFIX=/usr/local

PREFIX ?= /usr/local
BINDIR = $(PREFIX)/bin
LIBDIR = $(PREFIX)/lib/leakscope
MANDIR = $(PREFIX)/share/man

CC ?= gcc
CXX ?= g++
OPT ?= -O2
WARN = -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes
CFLAGS_COMMON = $(OPT) -g -std=gnu11 $(WARN) -D_GNU_SOURCE
B = build

# The agent runs inside other programs: position independent, only the
# interposed symbols exported, no dependency that drags symbols into the
# target's global scope (libunwind is dlopen()ed RTLD_LOCAL at run time).
AGENT_CFLAGS = $(CFLAGS_COMMON) -fPIC -fvisibility=hidden -ftls-model=initial-exec \
	-fno-stack-protector -fomit-frame-pointer $(AGENT_OPT) -include agent/glibcver.h
# Extra code generation flags for the agent alone, at compile and link
# (empty by default).  docs/perf-log/compiler-options.md measured
# link-time optimization and the rest: fewer
# instructions (-1.8% on the churn), no time won that the load did not
# cover, and LTO fails tests/integration/t_check.py (a dead agent frame
# keeps a dropped block's address), so none is the default.  To try them:
#   make clean && make AGENT_OPT='-flto=auto -ffat-lto-objects -fno-tree-slp-vectorize'
# (fat objects: the unit tests' archive, the report library's cfi.o and
# the benchmarks then still link the agent's objects as plain code).
AGENT_OPT ?=
AGENT_LDLIBS = -ldl -lpthread

# The report library (lib/) and the command (cli/) share flags.
CLI_CFLAGS = $(CFLAGS_COMMON) -DLS_LIBDIR='"$(LIBDIR)"' -I/usr/include/libiberty
CLI_LDLIBS = -ldw -lelf -l:libiberty.a -lz -lm -lpthread

# The eBPF tracer (`leakscope trace`, bpf/) is built when clang, bpftool,
# libbpf's headers and the kernel's BTF are all here; without them
# leakscope builds without it and `leakscope trace` says why.  Decided
# when this Makefile is read: `make demo`, `check` and `bench` install the
# packages first and read it again in a sub-make, so the decision (and
# the note `all` prints) is about what the build really has.
BPF_CLANG ?= clang
BPF_STRIP ?= $(shell command -v llvm-strip 2>/dev/null)
BPFTOOL ?= $(shell PATH="$$PATH:/usr/sbin:/sbin" command -v bpftool 2>/dev/null)
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
LIBBPF_H ?= /usr/include/bpf/libbpf.h
BPF_MISSING := $(strip \
	$(if $(shell command -v $(BPF_CLANG) 2>/dev/null),,clang) \
	$(if $(and $(BPFTOOL),$(shell command -v $(BPFTOOL) 2>/dev/null)),,bpftool) \
	$(if $(wildcard $(LIBBPF_H)),,libbpf-dev) \
	$(if $(shell test -r $(VMLINUX_BTF) && echo y),,$(VMLINUX_BTF)))
HAVE_BPF := $(if $(BPF_MISSING),,yes)
ls_comma := ,
ls_space := $(subst ,, )
ifeq ($(HAVE_BPF),yes)
BPF_OBJ = $(B)/bpf/trace.o $(B)/bpf/tracemodel.o
CLI_CFLAGS += -DLS_HAVE_BPF
CLI_LDLIBS += -lbpf
else
BPF_OBJ =
endif

AGENT_SRC = $(wildcard agent/*.c)
# common/: built once, with the agent's flags, for the agent and the
# report library: cfi.c, the .eh_frame reader (lib/stackcopy.c, the eBPF
# tracer's), and stopwait.c, the wait for threads to stop (lib/ptrace.c).
COMMON_OBJ = $(B)/common/cfi.o $(B)/common/stopwait.o
AGENT_OBJ = $(AGENT_SRC:%.c=$(B)/%.o) $(COMMON_OBJ)
# Everything but the interposed entry points, for unit tests.
AGENT_CORE_OBJ = $(filter-out $(B)/agent/hooks.o $(B)/agent/switch.o,$(AGENT_OBJ))

# lib/: the report library (sources, model, analysis, symbolization,
# renderers); never prints to the terminal nor exits.  cli/: the commands.
LIB_SRC = $(wildcard lib/*.c)
LIB_OBJ = $(LIB_SRC:%.c=$(B)/%.o)
REPORT_LIB = $(B)/libleakscope-report.a

CLI_SRC = $(wildcard cli/*.c)
CLI_OBJ = $(CLI_SRC:%.c=$(B)/%.o)
# The commands without main(), for unit tests that drive them.
CLI_LIB_OBJ = $(filter-out $(B)/cli/main.o,$(CLI_OBJ))

# web/: the server of `leakscope serve` (libmicrohttpd) and its page,
# whose files web/embed.S embeds with .incbin, Chart.js from Debian's
# libjs-chart.js among them: the binary fetches nothing at run time.
CHARTJS ?= /usr/share/javascript/chart.js/chart.min.js
WEB_SRC = $(wildcard web/*.c)
WEB_OBJ = $(WEB_SRC:%.c=$(B)/%.o) $(B)/web/embed.o
WEB_LIB = $(B)/libleakscope-web.a
WEB_LDLIBS = -lmicrohttpd

UNIT_SRC = $(filter-out $(if $(HAVE_EI),,tests/unit/t-erlang-%),$(wildcard tests/unit/t-*.c))
UNIT_BIN = $(UNIT_SRC:%.c=$(B)/%)

# Ground-truth workloads: optimised and built WITHOUT frame pointers, as
# Debian's own packages are, so the tests prove stacks do not need them.
WL_CFLAGS = -O2 -g -fomit-frame-pointer -Wall -D_GNU_SOURCE -pthread
WL_C = $(filter-out tests/workloads/lib%.c,$(wildcard tests/workloads/*.c))
WL_CXX = $(wildcard tests/workloads/*.cc)
WL_LIB = $(wildcard tests/workloads/lib*.c)
WL_BIN = $(WL_C:%.c=$(B)/%) $(WL_CXX:%.cc=$(B)/%) $(WL_LIB:%.c=$(B)/%.so)

DEMO_BIN = $(B)/demo/leaky-server

# erlang/: the NIF module (leakscope, Leakscope) and the C node behind
# `leakscope beam`, built when Debian's erlang-dev is installed.  The NIF
# links the report library, so it gets a position-independent copy of it.
ERL_ROOT ?= /usr/lib/erlang
ERL_INC = $(ERL_ROOT)/usr/include
EI_LIB = $(ERL_ROOT)/usr/lib/libei.a
HAVE_EI := $(and $(wildcard $(ERL_INC)/ei.h),$(wildcard $(EI_LIB)),yes)
ERLC ?= erlc
ELIXIRC ?= elixirc
HAVE_ELIXIR := $(shell command -v $(ELIXIRC) >/dev/null 2>&1 && echo yes)
EBIN = $(B)/erlang/ebin
PIC_LIB_OBJ = $(LIB_SRC:%.c=$(B)/pic/%.o)
REPORT_LIB_PIC = $(B)/libleakscope-report-pic.a
CNODE_SRC = $(filter-out erlang/leakscope_nif.c,$(wildcard erlang/*.c))
CNODE_OBJ = $(if $(HAVE_EI),$(CNODE_SRC:%.c=$(B)/%.o))
CNODE_LDLIBS = $(if $(HAVE_EI),$(EI_LIB))
ERLANG_OUT = $(if $(HAVE_EI),$(EBIN)/leakscope_nif.so $(EBIN)/leakscope.beam \
	$(if $(HAVE_ELIXIR),$(EBIN)/Elixir.Leakscope.beam))
ERL_TEST_OUT = $(if $(HAVE_EI),$(B)/erlang/test/leaky_nif.so $(B)/erlang/test/leaky_nif.beam \
	$(B)/erlang/test/beam_leaks.beam)

all: bpf-note $(B)/leakscope $(B)/libleakscope.so $(B)/leakscope.1 $(ERLANG_OUT)

# Said when the build runs, not when a target that installs the packages
# first (deps, demo, check, bench) is only read.
bpf-note:
ifneq ($(HAVE_BPF),yes)
	@echo "leakscope: building without eBPF tracing (leakscope trace): missing $(subst $(ls_space),$(ls_comma) ,$(BPF_MISSING))" >&2
endif

$(B)/common/%.o: common/%.c common/%.h agent/glibcver.h
	@mkdir -p $(@D)
	$(CC) $(AGENT_CFLAGS) -c -o $@ $<

$(B)/agent/%.o: agent/%.c $(wildcard agent/*.h) $(wildcard common/*.h) common/interpose.def
	@mkdir -p $(@D)
	$(CC) $(AGENT_CFLAGS) -c -o $@ $<

# -z defs: a symbol no object defines fails the link, not every program
# the agent is preloaded into (an edit once dropped a function that two
# objects call; the unit tests, which link only what they use, passed).
$(B)/libleakscope.so: $(AGENT_OBJ) $(B)/gen/exports.map
	$(CC) $(AGENT_CFLAGS) -shared -o $@ $(AGENT_OBJ) $(AGENT_LDLIBS) -Wl,--version-script=$(B)/gen/exports.map -Wl,-z,nodelete -Wl,-z,defs

# The export map, from the table of interposed functions.
$(B)/gen/exports.map: agent/exports.map.in common/interpose.def common/interpose.h
	@mkdir -p $(@D)
	$(CC) -E -P -x c -o $@.tmp $< && mv $@.tmp $@

# The agent built with clang as well, same sources and flags, into
# build/clang/, with the agent's unit tests (themselves built with
# $(CC): they rely on gcc's noipa) linked with it;
# tests/integration/t_clang_agent.py compares it with this one.  `make
# tests` builds it when clang is here.
AGENT_CLANG ?= clang
HAVE_AGENT_CLANG := $(if $(shell command -v $(AGENT_CLANG) 2>/dev/null),yes)
AGENT_TEST_CC ?= $(CC)

agent-clang:
	@$(MAKE) --no-print-directory B=$(B)/clang CC=$(AGENT_CLANG) AGENT_TEST_CC=$(CC) agent-clang-build

agent-clang-build: $(B)/libleakscope.so $(filter $(B)/tests/unit/t-agent-%,$(UNIT_BIN))

$(B)/agent-core.a: $(AGENT_CORE_OBJ)
	rm -f $@ && ar rcs $@ $^

$(B)/lib/%.o: lib/%.c $(wildcard lib/*.h) $(wildcard common/*.h)
	@mkdir -p $(@D)
	$(CC) $(CLI_CFLAGS) -c -o $@ $<

# The flame graph's script, kept as a plain .js file, compiled in as a C
# string (every line quoted, backslashes and quotes escaped).
$(B)/gen/flamegraph-js.h: lib/flamegraph.js
	@mkdir -p $(@D)
	sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $< > $@.tmp && mv $@.tmp $@

$(B)/lib/flamegraph_svg.o: $(B)/gen/flamegraph-js.h
$(B)/lib/flamegraph_svg.o: CLI_CFLAGS += -I$(B)/gen

# lib/stackcopy.c reads CFI with the agent's own reader.
$(REPORT_LIB): $(LIB_OBJ) $(COMMON_OBJ)
	rm -f $@ && ar rcs $@ $^

$(B)/cli/%.o: cli/%.c $(wildcard cli/*.h) $(wildcard lib/*.h) $(wildcard common/*.h) $(wildcard erlang/*.h)
	@mkdir -p $(@D)
	$(CC) $(CLI_CFLAGS) $(if $(HAVE_EI),-DLS_HAVE_EI) -c -o $@ $<

$(B)/web/%.o: web/%.c $(wildcard web/*.h) $(wildcard lib/*.h) $(wildcard common/*.h)
	@mkdir -p $(@D)
	$(CC) $(CLI_CFLAGS) -c -o $@ $<

$(B)/web/embed.o: web/embed.S $(wildcard web/page/*) $(CHARTJS)
	@mkdir -p $(@D)
	$(CC) -DCHARTJS='"$(CHARTJS)"' -I. -c -o $@ $<

$(WEB_LIB): $(WEB_OBJ)
	rm -f $@ && ar rcs $@ $^

$(B)/leakscope: $(CLI_OBJ) $(BPF_OBJ) $(CNODE_OBJ) $(WEB_LIB) $(REPORT_LIB)
	$(CC) -o $@ $^ $(CNODE_LDLIBS) $(CLI_LDLIBS) $(WEB_LDLIBS)

# --- erlang/ ----------------------------------------------------------------

$(B)/pic/lib/%.o: lib/%.c $(wildcard lib/*.h) $(wildcard common/*.h)
	@mkdir -p $(@D)
	$(CC) $(CLI_CFLAGS) -fPIC -fvisibility=hidden -c -o $@ $<

$(B)/pic/lib/flamegraph_svg.o: $(B)/gen/flamegraph-js.h
$(B)/pic/lib/flamegraph_svg.o: CLI_CFLAGS += -I$(B)/gen

$(REPORT_LIB_PIC): $(PIC_LIB_OBJ) $(B)/common/stopwait.o
	rm -f $@ && ar rcs $@ $^

$(B)/erlang/%.o: erlang/%.c $(wildcard erlang/*.h) $(wildcard lib/*.h) $(wildcard common/*.h)
	@mkdir -p $(@D)
	$(CC) $(CLI_CFLAGS) -D_REENTRANT -I$(ERL_INC) -c -o $@ $<

$(EBIN)/leakscope_nif.so: erlang/leakscope_nif.c $(REPORT_LIB_PIC) $(wildcard lib/*.h)
	@mkdir -p $(@D)
	$(CC) $(CLI_CFLAGS) -fPIC -fvisibility=hidden -shared -I$(ERL_INC) -o $@ $< \
		$(REPORT_LIB_PIC) $(CLI_LDLIBS) -ldl

$(EBIN)/leakscope.beam: erlang/leakscope.erl
	@mkdir -p $(@D)
	$(ERLC) -o $(@D) $<

$(EBIN)/Elixir.Leakscope.beam: erlang/lib/leakscope.ex $(EBIN)/leakscope.beam
	@mkdir -p $(@D)
	$(ELIXIRC) --ignore-module-conflict -pa $(EBIN) -o $(@D) $< >/dev/null

# Test NIF and BEAM workloads (tests/integration/t_erlang.py).
$(B)/erlang/test/%.so: erlang/test/%.c
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -fPIC -shared -I$(ERL_INC) -o $@ $<

$(B)/erlang/test/%.beam: erlang/test/%.erl
	@mkdir -p $(@D)
	$(ERLC) -o $(@D) $<

# bpf/: vmlinux.h is generated from the running kernel's BTF, never kept
# in the tree; the skeleton embeds the BPF object (debug info stripped,
# BTF kept).
$(B)/bpf/vmlinux.h:
	@mkdir -p $(@D)
	$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@.tmp && mv $@.tmp $@

$(B)/bpf/%.bpf.o: bpf/%.bpf.c bpf/%.h $(B)/bpf/vmlinux.h common/interpose.def common/interpose.h
	$(BPF_CLANG) -g -O2 -Wall -target bpf -D__TARGET_ARCH_x86 -I$(B)/bpf -Ibpf -c -o $@ $<
	$(if $(BPF_STRIP),$(BPF_STRIP) -g $@)

$(B)/bpf/%.skel.h: $(B)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $* > $@.tmp && mv $@.tmp $@

$(B)/bpf/trace.o: bpf/trace.c $(wildcard bpf/*.h) $(B)/bpf/trace.skel.h $(wildcard lib/*.h) common/interpose.def common/interpose.h
	$(CC) $(CLI_CFLAGS) -I$(B)/bpf -c -o $@ $<

$(B)/bpf/tracemodel.o: bpf/tracemodel.c $(wildcard bpf/*.h) $(wildcard lib/*.h) common/interpose.def common/interpose.h
	$(CC) $(CLI_CFLAGS) -c -o $@ $<

# The manual page, printed by the command from the tables its --help
# comes from.
$(B)/leakscope.1: $(B)/leakscope
	$(B)/leakscope help --man >$@.tmp && mv $@.tmp $@

$(B)/cli-lib.a: $(CLI_LIB_OBJ) $(BPF_OBJ)
	rm -f $@ && ar rcs $@ $^

$(B)/tests/unit/t-agent-%: tests/unit/t-agent-%.c $(B)/agent-core.a tests/unit/tap.h tests/unit/scratch.h
	@mkdir -p $(@D)
	$(AGENT_TEST_CC) $(CFLAGS_COMMON) -fPIC -o $@ $< $(B)/agent-core.a $(AGENT_LDLIBS)
# The agent has its own log and expm1; this test compares them with libm's.
$(B)/tests/unit/t-agent-fmath: AGENT_LDLIBS += -lm

# t-lib-*: the report library (lib/) alone; t-cli-*: the commands (cli/).
$(B)/tests/unit/t-lib-%: tests/unit/t-lib-%.c $(REPORT_LIB) tests/unit/tap.h tests/unit/lib-selfmap.h tests/unit/lib-fixture.h tests/unit/scratch.h
	@mkdir -p $(@D)
	$(CC) $(CLI_CFLAGS) -o $@ $< $(REPORT_LIB) $(CLI_LDLIBS)

$(B)/tests/unit/t-cli-%: tests/unit/t-cli-%.c $(B)/cli-lib.a $(REPORT_LIB) tests/unit/tap.h tests/unit/scratch.h
	@mkdir -p $(@D)
	$(CC) $(CLI_CFLAGS) -o $@ $< $(B)/cli-lib.a $(REPORT_LIB) $(CLI_LDLIBS)

$(B)/tests/unit/t-web-%: tests/unit/t-web-%.c $(WEB_LIB) $(REPORT_LIB) tests/unit/tap.h
	@mkdir -p $(@D)
	$(CC) $(CLI_CFLAGS) -o $@ $< $(WEB_LIB) $(REPORT_LIB) $(CLI_LDLIBS) $(WEB_LDLIBS)

$(B)/tests/unit/t-erlang-%: tests/unit/t-erlang-%.c $(CNODE_OBJ) $(REPORT_LIB) tests/unit/tap.h
	@mkdir -p $(@D)
	$(CC) $(CLI_CFLAGS) -D_REENTRANT -I$(ERL_INC) -o $@ $< $(CNODE_OBJ) $(REPORT_LIB) $(EI_LIB) $(CLI_LDLIBS)

$(B)/tests/workloads/lib%.so: tests/workloads/lib%.c tests/workloads/wl.h
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -fPIC -shared -o $@ $<

$(B)/tests/workloads/%: tests/workloads/%.c tests/workloads/wl.h
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -o $@ $< -ldl

# A program `leakscope attach` must refuse: no dynamic loader.
$(B)/tests/workloads/static-wait: tests/workloads/static-wait.c
	@mkdir -p $(@D)
	$(CC) -O2 -static -o $@ $<

# Non-PIE, taking &malloc and &free as python3 does: its canonical PLT
# stubs are what the global lookup answers (tests/workloads/attach-busy.c).
$(B)/tests/workloads/attach-busy: tests/workloads/attach-busy.c tests/workloads/wl.h
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -fno-pie -no-pie -o $@ $<

# Linked with a library whose constructor allocates (before main).
$(B)/tests/workloads/early-ctor: tests/workloads/early-ctor.c tests/workloads/wl.h $(B)/tests/workloads/libearly.so
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -o $@ $< -L$(@D) -learly -Wl,-rpath,'$$ORIGIN'

# Linked with its own allocator: malloc resolves to libtinyalloc.
$(B)/tests/workloads/mapped-totals: tests/workloads/mapped-totals.c tests/workloads/wl.h $(B)/tests/workloads/libtinyalloc.so
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -o $@ $< -L$(@D) -ltinyalloc -Wl,-rpath,'$$ORIGIN'

$(B)/tests/workloads/%: tests/workloads/%.cc tests/workloads/wl.h
	@mkdir -p $(@D)
	$(CXX) $(filter-out -D_GNU_SOURCE,$(WL_CFLAGS)) -o $@ $<

$(B)/demo/%: demo/%.c
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -o $@ $<

# --- tests/fuzz/: libFuzzer targets (docs/SECURITY.md, "Fuzzing") -----------
# The parsers of untrusted input, linked from their real sources built
# again with clang, AddressSanitizer and UndefinedBehaviorSanitizer in
# build/fuzz/.  Built when clang's libFuzzer runtime (libclang-rt-14-dev)
# is installed; `make check` runs each a few seconds (tests/fuzz/run-fuzz).
FUZZ_CC ?= clang
FB = $(B)/fuzz
FUZZ_SAN = -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
FUZZ_CFLAGS = -O1 -g -std=gnu11 -D_GNU_SOURCE -DLS_LIBDIR='"$(LIBDIR)"' \
	-I/usr/include/libiberty $(FUZZ_SAN) -fsanitize=fuzzer-no-link
FUZZ_TARGETS = snapshot postmortem request reply web options cfi jitdump \
	$(if $(HAVE_EI),term)
FUZZ_BIN = $(FUZZ_TARGETS:%=$(FB)/fuzz-%)
FUZZ_LIB = $(FB)/libreport.a
HAVE_FUZZER = $(shell printf 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }' | \
	$(FUZZ_CC) -fsanitize=fuzzer,address,undefined -x c - -o /dev/null 2>/dev/null && echo yes)

fuzz:
	@if [ "$(HAVE_FUZZER)" = yes ]; then $(MAKE) --no-print-directory $(FUZZ_BIN); \
	else echo "leakscope: fuzz targets not built: $(FUZZ_CC) with libFuzzer and the sanitizers' runtime (libclang-rt-14-dev) is missing"; fi

$(FB)/%.o: %.c $(wildcard lib/*.h) $(wildcard common/*.h) $(wildcard agent/*.h) $(wildcard web/*.h) $(wildcard cli/*.h) tests/fuzz/fuzz.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

$(FB)/lib/flamegraph_svg.o: $(B)/gen/flamegraph-js.h
$(FB)/lib/flamegraph_svg.o: FUZZ_CFLAGS += -I$(B)/gen

$(FUZZ_LIB): $(LIB_SRC:%.c=$(FB)/%.o) $(FB)/common/cfi.o $(FB)/common/stopwait.o
	rm -f $@ && ar rcs $@ $^

# Each target: its file, the helpers (fuzz-util.c), the code it fuzzes.
# -latomic: lib/postmortem.c loads a packed (unaligned) 64-bit counter
# atomically, which clang leaves to libatomic.
$(FB)/fuzz-%: $(FB)/tests/fuzz/fuzz-%.o $(FB)/tests/fuzz/fuzz-util.o $(FUZZ_LIB)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $(filter %.o,$^) \
		$(filter %.a,$^) $(CLI_LDLIBS) $(WEB_LDLIBS) -latomic

$(FB)/fuzz-request: $(FB)/agent/request.o
$(FB)/fuzz-term: $(FB)/erlang/term.o $(EI_LIB)
$(FB)/erlang/term.o $(FB)/tests/fuzz/fuzz-term.o: erlang/term.h
$(FB)/erlang/term.o $(FB)/tests/fuzz/fuzz-term.o: FUZZ_CFLAGS += -I$(ERL_INC)
$(FB)/fuzz-web: $(WEB_SRC:%.c=$(FB)/%.o) $(B)/web/embed.o
$(FB)/fuzz-options: $(FB)/cli/parse-options.o $(FB)/cli/report-args.o \
	$(FB)/cli/error.o

deps:
	@sh tools/install-deps.sh

# Programs that drive the libraries' internals from the integration tests.
TOOL_BIN = $(patsubst %.c,$(B)/%,$(wildcard tests/tools/*.c))

$(B)/tests/tools/%: tests/tools/%.c $(REPORT_LIB)
	@mkdir -p $(@D)
	$(CC) $(CLI_CFLAGS) -o $@ $< $(REPORT_LIB) $(CLI_LDLIBS)

tests: all $(UNIT_BIN) $(WL_BIN) $(TOOL_BIN) $(ERL_TEST_OUT) $(DEMO_BIN) \
	$(if $(HAVE_AGENT_CLANG),agent-clang)

check: deps
	@$(MAKE) --no-print-directory tests fuzz
	@sh tests/run-tests

demo: deps
	@$(MAKE) --no-print-directory all $(DEMO_BIN)
	@sh demo/run-demo

bench: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory -C bench

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 0755 $(B)/libleakscope.so $(DESTDIR)$(LIBDIR)/libleakscope.so
	install -m 0755 $(B)/leakscope $(DESTDIR)$(BINDIR)/leakscope
	install -m 0644 $(B)/leakscope.1 $(DESTDIR)$(MANDIR)/man1/leakscope.1
	$(if $(ERLANG_OUT),install -d $(DESTDIR)$(LIBDIR)/erlang/ebin)
	$(if $(ERLANG_OUT),install -m 0644 $(ERLANG_OUT) $(DESTDIR)$(LIBDIR)/erlang/ebin/)

clean:
	rm -rf $(B)

.PHONY: all bpf-note deps tests check demo bench install clean fuzz agent-clang \
	agent-clang-build
.SECONDARY:
