/*
 * fuzz-util.c - helpers of the fuzz targets (fuzz.h).
 */
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../../common/contract.h"
#include "../../lib/diff.h"
#include "../../lib/render.h"
#include "../../lib/report.h"
#include "../../lib/symbolize.h"
#include "fuzz.h"

void fuzz_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("fuzz: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

int fuzz_memfd(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-input", MFD_CLOEXEC);

	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size) ||
	    lseek(fd, 0, SEEK_SET))
		fuzz_fail("cannot make a memory file: %s", strerror(errno));
	return fd;
}

void fuzz_check_error(const char *what, int ret, const char *err)
{
	if (ret >= 0)
		fuzz_fail("%s: refused with status %d, not a negative errno",
			  what, ret);
	if (!err[0] || strchr(err, '\n'))
		fuzz_fail("%s: refused (%d) without one line of reason: '%s'",
			  what, ret, err);
}

uint32_t fuzz_seed(const uint8_t *data, size_t size)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < size && i < 64; i++)
		h = (h ^ data[size - 1 - i]) * 16777619u;
	return h;
}

struct fix {
	uint32_t version;
	uint64_t fnv;
	struct lsnap_hash hash;
};

static void fix_add(struct fix *f, const uint8_t *p, size_t n)
{
	if (f->version == 1)
		f->fnv = lsnap_fnv1a(f->fnv, p, n);
	else
		lsnap_hash_add(&f->hash, p, n);
}

static uint8_t *fix_snapshot(const uint8_t *data, size_t size, int blank)
{
	uint8_t *c = malloc(size ? size : 1);
	struct lsnap_file_hdr fh;
	struct fix f = { .fnv = LSNAP_FNV_INIT };
	uint32_t count = 0;
	size_t pos = sizeof(fh);

	if (!c)
		fuzz_fail("out of memory");
	memcpy(c, data, size);
	if (size < sizeof(fh))
		return c;
	memcpy(&fh, c, sizeof(fh));
	f.version = fh.version;
	lsnap_hash_init(&f.hash);
	fix_add(&f, c, sizeof(fh));
	while (size - pos >= sizeof(struct lsnap_rec_hdr)) {
		struct lsnap_rec_hdr h;
		struct lsnap_end e;

		memcpy(&h, c + pos, sizeof(h));
		if (h.tag == LSNAP_END) {
			if (size - pos - sizeof(h) < sizeof(e))
				break;
			memcpy(&e, c + pos + sizeof(h), sizeof(e));
			e.nrecords = count;
			e.hash = f.version == 1 ? f.fnv : lsnap_hash_end(&f.hash);
			memcpy(c + pos + sizeof(h), &e, sizeof(e));
			break;
		}
		if (h.len > size - pos - sizeof(h))
			break;
		if (blank && h.tag == LSNAP_MODULE &&
		    h.len > sizeof(struct lsnap_module))
			memset(c + pos + sizeof(h) + sizeof(struct lsnap_module),
			       '_', h.len - sizeof(struct lsnap_module));
		fix_add(&f, c + pos, sizeof(h) + h.len);
		pos += sizeof(h) + h.len;
		count++;
	}
	return c;
}

uint8_t *fuzz_fix_snapshot(const uint8_t *data, size_t size)
{
	return fix_snapshot(data, size, 0);
}

uint8_t *fuzz_fix_snapshot_blank(const uint8_t *data, size_t size)
{
	return fix_snapshot(data, size, 1);
}

#define OWN_DIR "LEAKSCOPE_FUZZ_OWN_DIR"	/* we made the runtime dir */
#define IN_NS "LEAKSCOPE_FUZZ_PID_NS"		/* running in our namespace */

static int exit_status(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Pid 1 of the new namespace: a /proc of its own, the fuzzer as its
 * child; ends with its status, or when the parent outside dies. */
static void namespace_init(char **argv)
{
	pid_t pid;
	int st;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL))
		fuzz_fail("cannot mount a private /proc: %s", strerror(errno));
	pid = fork();
	if (pid == 0) {
		execv("/proc/self/exe", argv);
		fuzz_fail("cannot re-execute: %s", strerror(errno));
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		fuzz_fail("cannot run the fuzzer: %s", strerror(errno));
	_exit(exit_status(st));
}

static void enter_pid_namespace(char **argv)
{
	pid_t pid;
	int st;

	if (unshare(CLONE_NEWPID | CLONE_NEWNS) &&
	    unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS)) {
		fprintf(stderr, "fuzz: skipped: no private pid namespace (needs "
			"root or user namespaces): %s\n", strerror(errno));
		_exit(77);
	}
	setenv(IN_NS, "1", 1);
	pid = fork();
	if (pid == 0)
		namespace_init(argv);
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		fuzz_fail("cannot start the namespace: %s", strerror(errno));
	_exit(exit_status(st));
}

static char own_dir[64];

static int remove_one(const char *path, const struct stat *st, int type,
		      struct FTW *ftw)
{
	return remove(path);
}

/* At the end of the run: the runtime dir we made, and what is in it. */
static void clean_up(void)
{
	nftw(own_dir, remove_one, 8, FTW_DEPTH | FTW_PHYS);
}

void fuzz_private(char **argv, int pid_ns)
{
	char tmpl[] = "/tmp/leakscope-fuzz-XXXXXX";
	const char *dir = getenv(LS_ENV_RUNTIME_DIR);

	if (dir && (!pid_ns || getenv(IN_NS))) {
		/* The fuzzing process; the ones libFuzzer's -fork starts
		 * inherit the dir but leave it to this one. */
		if (getenv(OWN_DIR) && strlen(dir) < sizeof(own_dir)) {
			strcpy(own_dir, dir);
			atexit(clean_up);
		}
		unsetenv(OWN_DIR);
		return;
	}
	if (!dir) {
		if (!mkdtemp(tmpl))
			fuzz_fail("cannot make a runtime dir: %s",
				  strerror(errno));
		setenv(LS_ENV_RUNTIME_DIR, tmpl, 1);
		setenv(OWN_DIR, "1", 1);
	}
	if (pid_ns)
		enter_pid_namespace(argv);
	execv("/proc/self/exe", argv);
	fuzz_fail("cannot re-execute: %s", strerror(errno));
}

static FILE *devnull(void)
{
	static FILE *fp;

	if (!fp && !(fp = fopen("/dev/null", "we")))
		fuzz_fail("cannot open /dev/null");
	return fp;
}

/* Module paths come from the input: never open one. */
static void empty_module_paths(struct ls_snapshot *snap)
{
	size_t i;

	for (i = 0; i < snap->nmodules; i++)
		snap->modules[i].path[0] = 0;
}

static void opts_from_seed(struct ls_report_opts *o, uint32_t seed)
{
	memset(o, 0, sizeof(*o));
	o->by = (int)(seed % 4);
	o->histogram = !!(seed & 0x10);
	o->show_allocs = !!(seed & 0x20);
	o->growing = !!(seed & 0x40);
	o->top = seed & 0x80 ? (seed >> 8) % 5 : 0;
	o->depth = (seed >> 11) % 4;
	o->hide_runtime = !!(seed & 0x4000);
	o->full_names = !!(seed & 0x8000);
	o->only = (seed >> 16) & 0xf;
	o->svg.inverted = !!(seed & 0x100000);
	o->svg.colors = (seed >> 21) & 1;
	o->svg.count = (seed >> 22) & 1;
	if (o->by == LS_BY_LIVE && (seed & 0x800000)) {
		o->min_size = (seed >> 24) & 0xf;
		o->max_size = seed & 0x1000000 ? 4096 : 0;
		o->min_age_ns = (seed >> 28) * 1000000ull;
	}
	ls_report_opts_finish(o);
}

/* One renderer (by pick) of every row: each input costs one. */
static void render_one(const struct ls_report *rep, struct ls_report_opts *o,
		       struct ls_symbolizer *sym, uint32_t pick)
{
	const struct ls_renderer *r;
	size_t n = 0;

	for (r = ls_renderers; r->name; r++)
		n++;
	r = &ls_renderers[pick % n];
	o->format = r;
	ls_report_render(devnull(), rep, o, sym);
	if (r->stats)
		r->stats(devnull(), rep->snap);
	o->format = NULL;
}

static void diff_self(const struct ls_snapshot *snap,
		      struct ls_report_opts *o)
{
	const struct ls_renderer *r;
	struct ls_diff d;

	if (ls_diff_build(snap, snap, o, &d))
		return;
	for (r = ls_renderers; r->name; r++)
		if (ls_diff_format_ok(r)) {
			o->format = r;
			ls_diff_render(devnull(), &d, o);
		}
	o->format = NULL;
	ls_diff_release(&d);
}

void fuzz_use_snapshot(struct ls_snapshot *snap, uint32_t seed)
{
	uint32_t pick = seed * 2654435761u >> 16;
	struct ls_report_opts o;
	struct ls_symbolizer *sym;
	struct ls_report rep;

	empty_module_paths(snap);
	sym = ls_symbolizer_new(snap);
	if (!sym)
		fuzz_fail("no symbolizer: %s", strerror(errno));
	opts_from_seed(&o, seed);
	if (!ls_report_build(snap, &o, &rep)) {
		render_one(&rep, &o, sym, pick);
		ls_report_release(&rep);
	}
	if (pick & 0x100)
		diff_self(snap, &o);
	if (snap->has_blocks && (pick & 0x200))
		ls_render_olds(devnull(), snap, &o, sym, seed % 8);
	ls_symbolizer_free(sym);
}
