/*
 * trace.c - the user side of `leakscope trace`: opens the skeleton of
 * trace.bpf.c, sets its constants, sizes its maps, loads, attaches and
 * polls the ring buffer (see tracer.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "tracer.h"
#include "tracemodel.h"
#include "trace.skel.h"

#define TRACEFS "/sys/kernel/tracing"

struct ls_tracer {
	struct trace *skel;
	struct ring_buffer *rb;
	struct bpf_link **links;
	size_t nlinks;
	uint32_t fns;
	ls_tracer_cb cb;
	void *arg;
};

static int verbose;

static int print_fn(enum libbpf_print_level level, const char *fmt,
		    va_list ap)
{
	if (!verbose || level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* ------------------------------------------------------------------ */
/* What the machine allows.                                            */

static int has_caps(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return 0;
	/* CAP_BPF 39, CAP_PERFMON 38: both in the second word. */
	return (d[1].effective & (1u << (39 - 32))) &&
	       (d[1].effective & (1u << (38 - 32)));
}

static int tracefs_ready(char *err, size_t errlen)
{
	struct stat st;

	if (!stat(TRACEFS "/events", &st))
		return 0;
	if (geteuid() == 0 &&
	    !mount("nodev", TRACEFS, "tracefs", 0, NULL) &&
	    !stat(TRACEFS "/events", &st))
		return 0;
	snprintf(err, errlen, "tracefs is not mounted on " TRACEFS
		 " (as root: mount -t tracefs nodev " TRACEFS ")");
	return -ENOENT;
}

int ls_tracer_check(enum ls_tracer_what what, char *err, size_t errlen)
{
	struct stat st;

	if (geteuid() != 0 && !has_caps()) {
		snprintf(err, errlen, "tracing needs root, or CAP_BPF and "
			 "CAP_PERFMON");
		return -EPERM;
	}
	if (stat("/sys/kernel/btf/vmlinux", &st)) {
		snprintf(err, errlen, "this kernel has no BTF "
			 "(/sys/kernel/btf/vmlinux): eBPF tracing needs "
			 "CONFIG_DEBUG_INFO_BTF");
		return -ENOTSUP;
	}
	if (what == LS_TRACE_ALLOC &&
	    stat("/sys/bus/event_source/devices/uprobe/type", &st)) {
		snprintf(err, errlen, "this kernel has no uprobes "
			 "(CONFIG_UPROBE_EVENTS)");
		return -ENOTSUP;
	}
	return tracefs_ready(err, errlen);
}

/* ------------------------------------------------------------------ */
/* Allocator functions in a file.                                      */

/* File offset of symbol name in the ELF file, or 0. */
static uint64_t sym_offset(Elf *e, const char *name)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	uint64_t val = 0;

	while (!val && (scn = elf_nextscn(e, scn))) {
		Elf_Data *d;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) ||
		    !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; d && i < n; i++) {
			GElf_Sym s;
			const char *nm;

			if (!gelf_getsym(d, (int)i, &s) || !s.st_value ||
			    GELF_ST_TYPE(s.st_info) != STT_FUNC)
				continue;
			nm = elf_strptr(e, sh.sh_link, s.st_name);
			if (nm && !strcmp(nm, name)) {
				val = s.st_value;
				break;
			}
		}
	}
	return val;
}

static uint64_t vaddr_to_off(Elf *e, uint64_t v)
{
	size_t n, i;
	GElf_Phdr ph;

	if (elf_getphdrnum(e, &n))
		return 0;
	for (i = 0; i < n; i++)
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    v >= ph.p_vaddr && v < ph.p_vaddr + ph.p_filesz)
			return v - ph.p_vaddr + ph.p_offset;
	return 0;
}

/* Offsets of every family function in obj; 0 for those it lacks. */
static int family_offsets(const char *obj, const char *prefix,
			  uint64_t off[LS_TFN_COUNT], char *err, size_t errlen)
{
	char name[128];
	Elf *e = NULL;
	int fd, i, ret = 0;

	elf_version(EV_CURRENT);
	fd = open(obj, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open '%s': %s", obj,
			 strerror(errno));
		return ret;
	}
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		snprintf(err, errlen, "'%s' is not an ELF file", obj);
		ret = -EINVAL;
		goto out;
	}
	for (i = 0; i < LS_TFN_COUNT; i++) {
		snprintf(name, sizeof(name), "%s%s", prefix ? prefix : "",
			 ls_trace_fn_name((unsigned)i));
		off[i] = vaddr_to_off(e, sym_offset(e, name));
	}
	if (!off[LS_TFN_MALLOC] || !off[LS_TFN_FREE]) {
		snprintf(err, errlen, "'%s' has no %smalloc and %sfree", obj,
			 prefix ? prefix : "", prefix ? prefix : "");
		ret = -ENOENT;
	}
out:
	if (e)
		elf_end(e);
	close(fd);
	return ret;
}

static struct bpf_program *entry_prog(struct trace *s, int fn)
{
	struct bpf_program *p[LS_TFN_COUNT] = {
#define LS_INTERPOSE(sym, NAME, field, ret, params, attr, kind, real, got, export) \
	LS_IP_COUNTED_##kind([LS_TFN_##NAME] = s->progs.ls_##sym##_enter,)
#include "../common/interpose.def"
	};

	return p[fn];
}

static int keep_link(struct ls_tracer *t, struct bpf_link *l, const char *what,
		     char *err, size_t errlen)
{
	long e = libbpf_get_error(l);

	if (e || !l) {
		snprintf(err, errlen, "cannot attach to %s: %s", what,
			 strerror(e ? (int)-e : EINVAL));
		return e ? (int)e : -EINVAL;
	}
	t->links[t->nlinks++] = l;
	return 0;
}

/* Functions without an exit: free and munmap. */
static int entry_only(int fn)
{
	return fn == LS_TFN_FREE || fn == LS_TFN_MUNMAP;
}

static int attach_family(struct ls_tracer *t, const struct ls_tracer_opts *o,
			 char *err, size_t errlen)
{
	uint64_t off[LS_TFN_COUNT] = { 0 };
	int i, j, ret;

	ret = family_offsets(o->obj, o->prefix, off, err, errlen);
	for (i = 0; i < LS_TFN_COUNT && !ret; i++) {
		for (j = 0; j < i && off[i]; j++)
			if (off[j] == off[i])
				off[i] = 0;	/* an alias: probed once */
		if (!off[i])
			continue;
		ret = keep_link(t, bpf_program__attach_uprobe(entry_prog(t->skel, i),
			false, o->pid ? o->pid : -1, o->obj, off[i]),
			ls_trace_fn_name((unsigned)i), err, errlen);
		if (!ret && !entry_only(i))
			ret = keep_link(t, bpf_program__attach_uprobe(
				t->skel->progs.ls_alloc_exit, true,
				o->pid ? o->pid : -1, o->obj, off[i]),
				ls_trace_fn_name((unsigned)i), err, errlen);
		t->fns |= 1u << i;
	}
	return ret;
}

/* ------------------------------------------------------------------ */
/* Programs per event source.                                          */

static void autoload_only(struct trace *s, struct bpf_program *const *keep,
			  size_t n)
{
	struct bpf_program *p;
	size_t i;

	bpf_object__for_each_program(p, s->obj) {
		int on = 0;

		for (i = 0; i < n; i++)
			on |= keep[i] == p;
		bpf_program__set_autoload(p, on);
	}
}

static void choose_programs(struct trace *s, const struct ls_tracer_opts *o)
{
	struct bpf_program *list[16];
	size_t n = 0;
	int i;

	if (o->pid)
		list[n++] = s->progs.ls_exec;
	switch (o->what) {
	case LS_TRACE_ALLOC:
		for (i = 0; i < LS_TFN_COUNT; i++)
			list[n++] = entry_prog(s, i);
		list[n++] = s->progs.ls_alloc_exit;
		break;
	case LS_TRACE_BRK:
		list[n++] = s->progs.ls_brk;
		break;
	case LS_TRACE_MMAP:
		list[n++] = s->progs.ls_sys_mmap_enter;
		list[n++] = s->progs.ls_sys_mmap_exit;
		list[n++] = s->progs.ls_sys_munmap;
		break;
	case LS_TRACE_FAULT:
		list[n++] = s->progs.ls_fault;
		break;
	case LS_TRACE_KERNEL:
		list[n++] = s->progs.ls_kmalloc;
		list[n++] = s->progs.ls_kfree;
		list[n++] = s->progs.ls_cache_alloc;
		list[n++] = s->progs.ls_cache_free;
		list[n++] = s->progs.ls_page_alloc;
		list[n++] = s->progs.ls_page_free;
		if (o->percpu) {
			list[n++] = s->progs.ls_percpu_alloc;
			list[n++] = s->progs.ls_percpu_free;
		}
		break;
	}
	autoload_only(s, list, n);
}

static int attach_tracepoints(struct ls_tracer *t, char *err, size_t errlen)
{
	struct bpf_program *p;
	int ret;

	bpf_object__for_each_program(p, t->skel->obj) {
		const char *sec = bpf_program__section_name(p);

		if (!bpf_program__autoload(p) || strncmp(sec, "tracepoint/", 11))
			continue;
		ret = keep_link(t, bpf_program__attach(p),
				bpf_program__section_name(p), err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

/* Exponential gaps of mean rate, by inversion of evenly spread
 * quantiles: the table's mean is the rate to within 0.1%. */
static int fill_gaps(struct ls_tracer *t, uint64_t rate)
{
	int fd = bpf_map__fd(t->skel->maps.gaps);
	uint32_t i;

	for (i = 0; i < LS_TRACE_GAPS; i++) {
		double u = (i + 0.5) / LS_TRACE_GAPS;
		uint64_t g = (uint64_t)(-log(u) * (double)rate) + 1;

		if (bpf_map_update_elem(fd, &i, &g, BPF_ANY))
			return -errno;
	}
	return 0;
}

static int on_record(void *ctx, void *data, size_t len)
{
	struct ls_tracer *t = ctx;

	if (len < sizeof(struct ls_trace_event))
		return 0;
	return t->cb(t->arg, data, len);
}

static void set_rodata(struct trace *s, const struct ls_tracer_opts *o)
{
	s->rodata->target_tgid = (uint32_t)o->pid;
	s->rodata->stack_mode = o->stack_mode;
	s->rodata->stack_bytes = o->stack_bytes > LS_TRACE_MAX_STACK ?
				 LS_TRACE_MAX_STACK : o->stack_bytes;
	s->rodata->min_size = o->min_size;
	s->rodata->max_size = o->max_size;
	s->rodata->sample_rate = o->sample_rate;
	s->rodata->combined = o->combined && o->stack_mode == LS_STACK_FP;
	/* A quarter of the ring: the reader's own 50 ms polls keep up
	 * below that. */
	s->rodata->wakeup_bytes = (o->ringbuf_bytes ? o->ringbuf_bytes :
				   64u << 20) / 4;
}

static int load(struct ls_tracer *t, const struct ls_tracer_opts *o,
		char *err, size_t errlen)
{
	int ret;

	t->skel = trace__open();
	if (!t->skel) {
		snprintf(err, errlen, "cannot open the BPF object: %s",
			 strerror(errno));
		return -errno;
	}
	set_rodata(t->skel, o);
	bpf_map__set_max_entries(t->skel->maps.events,
				 o->ringbuf_bytes ? o->ringbuf_bytes : 64u << 20);
	choose_programs(t->skel, o);
	ret = trace__load(t->skel);
	if (ret) {
		snprintf(err, errlen, "cannot load the BPF programs: %s%s",
			 strerror(-ret), verbose ? "" : " (-v shows why)");
		return ret;
	}
	if (o->sample_rate && (ret = fill_gaps(t, o->sample_rate))) {
		snprintf(err, errlen, "cannot fill the sampling table: %s",
			 strerror(-ret));
		return ret;
	}
	return 0;
}

int ls_tracer_start(const struct ls_tracer_opts *o, ls_tracer_cb cb,
		    void *arg, struct ls_tracer **out, char *err,
		    size_t errlen)
{
	struct ls_tracer *t = calloc(1, sizeof(*t));
	int ret;

	*out = NULL;
	verbose = o->verbose;
	libbpf_set_print(print_fn);
	if (!t || !(t->links = calloc(2 * LS_TFN_COUNT + 16, sizeof(*t->links)))) {
		free(t);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	t->cb = cb;
	t->arg = arg;
	ret = load(t, o, err, errlen);
	if (!ret)
		ret = attach_tracepoints(t, err, errlen);
	if (!ret && o->what == LS_TRACE_ALLOC)
		ret = attach_family(t, o, err, errlen);
	if (!ret) {
		t->rb = ring_buffer__new(bpf_map__fd(t->skel->maps.events),
					 on_record, t, NULL);
		if (!t->rb) {
			ret = -errno;
			snprintf(err, errlen, "cannot open the ring buffer: %s",
				 strerror(errno));
		}
	}
	if (ret) {
		ls_tracer_stop(t);
		return ret;
	}
	*out = t;
	return 0;
}

int ls_tracer_poll(struct ls_tracer *t, int timeout_ms)
{
	int n = ring_buffer__poll(t->rb, timeout_ms), m;

	/* Records sent without a wakeup (trace.bpf.c: wakeup_bytes) are
	 * read here, when the wait ends either way. */
	if (n < 0 && n != -EINTR)
		return n;
	m = ring_buffer__consume(t->rb);
	if (m < 0)
		return m;
	return (n > 0 ? n : 0) + m;
}

void ls_tracer_stats(struct ls_tracer *t, uint64_t stats[LS_STAT_COUNT])
{
	int ncpu = libbpf_num_possible_cpus(), fd;
	uint32_t k;
	uint64_t *v;
	int c;

	memset(stats, 0, LS_STAT_COUNT * sizeof(*stats));
	if (ncpu <= 0 || !(v = calloc((size_t)ncpu, sizeof(*v))))
		return;
	fd = bpf_map__fd(t->skel->maps.stats);
	for (k = 0; k < LS_STAT_COUNT; k++)
		if (!bpf_map_lookup_elem(fd, &k, v))
			for (c = 0; c < ncpu; c++)
				stats[k] += v[c];
	free(v);
}

int ls_tracer_combined_each(struct ls_tracer *t,
			    int (*cb)(void *arg, const uint64_t *ips,
				      uint32_t n,
				      const struct ls_trace_comb *c),
			    void *arg)
{
	int cfd = bpf_map__fd(t->skel->maps.comb);
	int sfd = bpf_map__fd(t->skel->maps.stacks);
	uint64_t ips[LS_TRACE_MAX_IPS];
	struct ls_trace_comb c;
	uint32_t key, next, n;
	int ret, first = 1;

	while (!bpf_map_get_next_key(cfd, first ? NULL : &key, &next)) {
		first = 0;
		key = next;
		if (bpf_map_lookup_elem(cfd, &key, &c) || !c.blocks)
			continue;
		memset(ips, 0, sizeof(ips));
		if (bpf_map_lookup_elem(sfd, &key, ips))
			continue;
		for (n = 0; n < LS_TRACE_MAX_IPS && ips[n]; n++)
			;
		if ((ret = cb(arg, ips, n, &c)))
			return ret;
	}
	return 0;
}

void ls_tracer_stop(struct ls_tracer *t)
{
	size_t i;

	if (!t)
		return;
	ring_buffer__free(t->rb);
	for (i = 0; i < t->nlinks; i++)
		bpf_link__destroy(t->links[i]);
	trace__destroy(t->skel);
	free(t->links);
	free(t);
}
