/*
 * symbolize.c - offline symbolization with elfutils libdwfl.
 *
 * Each module gets its own Dwfl session, opened lazily: a process maps
 * dozens of libraries but a report touches few of them, and separate
 * sessions let two modules that occupied the same addresses at different
 * generations (dlclose, then dlopen) coexist without libdwfl having to
 * arbitrate between overlapping modules.
 */
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <demangle.h>
#include "symbolize.h"
#include "kallsyms.h"
#include "perfmap.h"
#include "util.h"

#define VDSO_NAME "linux-vdso.so.1"

enum { MOD_OK = 1, MOD_UNUSABLE = -1 };

/* Address ranges [lo, hi) of units or functions, sorted by lo; maxhi is
 * the highest end of a range and every range sorted before it, so that
 * a lookup finds ranges that overlap (nested functions). */
struct span {
	Dwarf_Addr lo, hi, maxhi;
	size_t idx;		/* what the range belongs to */
};

struct spans {
	struct span *v;
	size_t n, cap;
};

/* A compilation unit with code: its DIE, where its ranges and line table
 * are, and with split DWARF (-gsplit-dwarf) the split unit's DIE, where
 * its functions are (else the same DIE again). */
struct cu_ent {
	Dwarf_Die cu, sub;
	const char *comp_dir;	/* owned by libdw, or NULL */
	/* Its functions by address, read when the first address in the
	 * unit comes: one walk of the unit's DIE tree, where a lookup by
	 * dwarf_getscopes() would walk it for every address. */
	int fns_read;
	struct spans fns;	/* idx: into fdie */
	Dwarf_Die *fdie;
	size_t nfdie, fdie_cap;
};

/* A module file opened once, at bias 0: every process that maps the
 * same file (same path and build id) at any address shares it. */
struct pooled {
	char *path;
	uint64_t mnt;		/* the mount namespace it was opened in (a
				   container's, by /proc/PID/root), 0: ours */
	unsigned build_id_len;
	uint8_t build_id[LSNAP_BUILD_ID_MAX];
	Dwfl *dwfl;
	Dwfl_Module *mod;
	int state;
	/* Its units by address, read when the first address comes: from
	 * each unit's own DW_AT_ranges or low and high pc, which every
	 * producer writes, rather than .debug_aranges, which clang and
	 * rustc leave out. */
	int cus_read;
	Dwarf_Addr dwbias;
	struct cu_ent *cus;
	size_t ncus, cus_cap;
	struct spans units;	/* idx: into cus */
};

static void free_units(struct pooled *p)
{
	size_t i;

	for (i = 0; i < p->ncus; i++) {
		free(p->cus[i].fns.v);
		free(p->cus[i].fdie);
	}
	free(p->cus);
	free(p->units.v);
}

struct cache_ent {
	uint64_t addr;		/* relative to the module's load bias */
	uint32_t gen;		/* the pool slot of the module */
	uint32_t used;
	size_t first, count;	/* into ls_sympool.frames */
};

/*
 * What every symbolizer of a pool shares: the opened files, the frames
 * resolved so far by (file, address in the file), and the strings they
 * point to.  The frames' addr, module and mod are per snapshot: filled in
 * when a symbolizer hands them out.
 */
struct ls_sympool {
	struct pooled *v;
	size_t n, cap;

	struct cache_ent *cache;
	size_t cache_cap, cache_used;

	struct ls_symframe *frames;
	size_t nframes, frames_cap;

	char **strs;		/* interned strings, open addressing */
	size_t strs_cap, strs_used;

	struct ls_kallsyms *ksyms;	/* read when a kernel frame comes */
	int ksyms_tried;
};

#define SLOT_UNTRIED (-2)	/* ls_symbolizer.slot: not looked up yet */
#define SLOT_NONE (-1)		/* no file to open */

struct ls_symbolizer {
	const struct ls_snapshot *snap;
	struct ls_sympool *pool;
	int own_pool;
	long *slot;		/* per snapshot module: index in pool */
	struct ls_perfmap *jit;	/* the process's perf map, read when the
				   first address in no module comes */
	int jit_tried;
};

/*
 * Where libdwfl itself looks for separate debug files: only the system's
 * tree (by build ID, and /usr/lib/debug/DIR/LINK), which root owns.  The
 * places beside a module (DIR/LINK, DIR/.debug/LINK) are in whatever dir
 * the snapshot names, maybe another user's, where a FIFO named like the
 * debug link would hold libdwfl's open() for ever: find_debuginfo() opens
 * those itself, as open_module_file() does.
 */
static char *debuginfo_path = "/usr/lib/debug";

static int open_module_file(const char *path);

static int find_debuginfo(Dwfl_Module *mod, void **userdata,
			  const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	static const char *const beside[] = { "%.*s/%s", "%.*s/.debug/%s" };
	const char *slash = file_name ? strrchr(file_name, '/') : NULL;
	struct stat main_st, st;
	char path[4200];
	size_t i;
	int fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base,
					      file_name, debuglink_file,
					      debuglink_crc,
					      debuginfo_file_name);

	if (fd >= 0 || !slash || !debuglink_file || strchr(debuglink_file, '/') ||
	    stat(file_name, &main_st))
		return fd;
	for (i = 0; i < sizeof(beside) / sizeof(*beside); i++) {
		if ((size_t)snprintf(path, sizeof(path), beside[i],
				     (int)(slash - file_name), file_name,
				     debuglink_file) >= sizeof(path))
			continue;
		fd = open_module_file(path);
		if (fd < 0)
			continue;
		/* not the module itself (a link naming its own file) */
		if (!fstat(fd, &st) && (st.st_dev != main_st.st_dev ||
					st.st_ino != main_st.st_ino) &&
		    (*debuginfo_file_name = strdup(path)))
			return fd;
		close(fd);
	}
	return -1;
}

static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

const char *ls_sym_basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static uint64_t hash_str(const char *s)
{
	return lsnap_fnv1a(LSNAP_FNV_INIT, s, strlen(s));
}

static int strs_grow(struct ls_sympool *s)
{
	size_t ncap = s->strs_cap ? s->strs_cap * 2 : 256, i;
	char **n = calloc(ncap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (i = 0; i < s->strs_cap; i++) {
		size_t j;

		if (!s->strs[i])
			continue;
		j = hash_str(s->strs[i]) & (ncap - 1);
		while (n[j])
			j = (j + 1) & (ncap - 1);
		n[j] = s->strs[i];
	}
	free(s->strs);
	s->strs = n;
	s->strs_cap = ncap;
	return 0;
}

/* A copy of str owned by s, shared between equal strings; NULL on
 * ENOMEM or when str is NULL. */
static const char *intern(struct ls_symbolizer *sym, const char *str)
{
	struct ls_sympool *s = sym->pool;
	size_t j;

	if (!str)
		return NULL;
	if (2 * (s->strs_used + 1) > s->strs_cap && strs_grow(s))
		return NULL;
	j = hash_str(str) & (s->strs_cap - 1);
	while (s->strs[j]) {
		if (!strcmp(s->strs[j], str))
			return s->strs[j];
		j = (j + 1) & (s->strs_cap - 1);
	}
	s->strs[j] = strdup(str);
	if (s->strs[j])
		s->strs_used++;
	return s->strs[j];
}

/*
 * C++ and Rust (legacy and v0) names demangled; others as they are.  A
 * symbol version ("__libc_start_main@@GLIBC_2.34", as .symtab has it) is
 * dropped: it is noise in a stack and would split flame graph frames.
 */
static const char *intern_demangled(struct ls_symbolizer *s, const char *name,
				    const char **raw)
{
	const char *at = strchr(name, '@');
	char *plain = NULL, *d = NULL;
	const char *r;

	*raw = NULL;
	if (at && at != name) {
		plain = strndup(name, (size_t)(at - name));
		if (!plain)
			return NULL;
		name = plain;
	}
	if (name[0] == '_' && (name[1] == 'Z' || name[1] == 'R'))
		d = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
	r = intern(s, d ? d : name);
	*raw = d ? intern(s, name) : r;
	free(d);
	free(plain);
	return r;
}

struct ls_sympool *ls_sympool_new(void)
{
	return calloc(1, sizeof(struct ls_sympool));
}

void ls_sympool_free(struct ls_sympool *p)
{
	size_t i;

	if (!p)
		return;
	ls_kallsyms_free(p->ksyms);
	for (i = 0; i < p->n; i++) {
		if (p->v[i].dwfl)
			dwfl_end(p->v[i].dwfl);
		free_units(&p->v[i]);
		free(p->v[i].path);
	}
	for (i = 0; i < p->strs_cap; i++)
		free(p->strs[i]);
	free(p->strs);
	free(p->cache);
	free(p->frames);
	free(p->v);
	free(p);
}

struct ls_symbolizer *ls_symbolizer_new_shared(const struct ls_snapshot *snap,
					       struct ls_sympool *pool)
{
	struct ls_symbolizer *s = calloc(1, sizeof(*s));
	size_t i;

	if (!s)
		goto fail;
	s->snap = snap;
	s->pool = pool;
	s->slot = malloc((snap->nmodules ? snap->nmodules : 1) *
			 sizeof(*s->slot));
	if (!s->slot)
		goto fail;
	for (i = 0; i < snap->nmodules; i++)
		s->slot[i] = SLOT_UNTRIED;
	/* libdwfl would otherwise ask debuginfod servers for missing debug
	 * files: a report must never touch the network.  Only when set: in
	 * a host process (the NIF) an environment write races other
	 * threads' getenv. */
	if (getenv("DEBUGINFOD_URLS"))
		unsetenv("DEBUGINFOD_URLS");
	return s;
fail:
	ls_symbolizer_free(s);
	errno = ENOMEM;
	return NULL;
}

struct ls_symbolizer *ls_symbolizer_new(const struct ls_snapshot *snap)
{
	struct ls_sympool *pool = ls_sympool_new();
	struct ls_symbolizer *s = pool ? ls_symbolizer_new_shared(snap, pool) :
				  NULL;

	if (!s) {
		ls_sympool_free(pool);
		errno = ENOMEM;
		return NULL;
	}
	s->own_pool = 1;
	return s;
}

void ls_symbolizer_free(struct ls_symbolizer *s)
{
	if (!s)
		return;
	if (s->own_pool)
		ls_sympool_free(s->pool);
	ls_perfmap_free(s->jit);
	free(s->slot);
	free(s);
}

/*
 * The module holding addr for a site of generation gen: the one mapped
 * there during gen, else the first one mapped there after gen, because
 * the agent records a new module only at its next refresh and a site can
 * be created in between.  Returns its index or -1.
 */
static long pick_module(const struct ls_snapshot *snap, uint32_t gen,
			uint64_t addr)
{
	long best = -1;
	size_t i;

	for (i = 0; i < snap->nmodules; i++) {
		const struct ls_module *m = &snap->modules[i];

		if (addr < m->lo || addr >= m->hi)
			continue;
		if (gen >= m->gen_from && gen < m->gen_to)
			return (long)i;
		if (m->gen_from > gen && (best < 0 ||
		    m->gen_from < snap->modules[best].gen_from))
			best = (long)i;
	}
	return best;
}

static int has_file(const struct ls_module *m)
{
	return m->path[0] && strcmp(m->path, VDSO_NAME) != 0;
}

static int build_id_matches(Dwfl_Module *mod, const struct pooled *p)
{
	const unsigned char *bits = NULL;
	GElf_Addr vaddr;
	Dwarf_Addr bias;
	int len;

	if (!dwfl_module_getelf(mod, &bias))
		return 0;
	len = dwfl_module_build_id(mod, &bits, &vaddr);
	if (len < 0)
		len = 0;
	return (unsigned)len == p->build_id_len &&
		(len == 0 || !memcmp(bits, p->build_id, (size_t)len));
}

static int same_file(const struct pooled *p, const struct ls_module *m,
		     uint64_t mnt)
{
	return p->mnt == mnt && p->build_id_len == m->build_id_len &&
		!memcmp(p->build_id, m->build_id, m->build_id_len) &&
		!strcmp(p->path, m->path);
}

/*
 * A module's file for libdw, or -1: a snapshot (another user's, or a
 * file anyone wrote) names its modules' paths, and libdw would open a
 * FIFO there and wait for a writer for ever, or read /dev/zero without
 * end.  Opened without waiting, taken only when it is a regular file,
 * then made blocking again for libdw.
 */
/* The file the live process (snap, asked in a container) maps at path,
 * where it lives: /proc/PID/map_files/RANGE of a mapping of path, by
 * fd, for a path its root does not reach (deleted, or mounted over).
 * The fd or -1. */
static int open_map_file(pid_t pid, const char *path)
{
	char maps[64], line[4400], file[128];
	unsigned long lo, hi;
	int at, fd = -1;
	FILE *fp;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	fp = fopen(maps, "re");
	while (fp && fd < 0 && fgets(line, sizeof(line), fp)) {
		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &at) != 2 ||
		    strcmp(line + at, path))
			continue;
		snprintf(file, sizeof(file), "/proc/%d/map_files/%lx-%lx",
			 (int)pid, lo, hi);
		fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	}
	if (fp)
		fclose(fp);
	return fd;
}

/* path in the root of the container snap was asked in, by fd (never
 * following its symlinks out of it): the fd, -1 when it is not there,
 * -ENOENT when snap is not of a container's process. */
static int open_in_container(const struct ls_snapshot *snap, const char *path)
{
	int root, fd;

	if (!snap->has_container || !snap->container.other_root)
		return -ENOENT;
	root = ls_container_root(&snap->container);
	fd = root >= 0 ? ls_container_open(root, path, O_RDONLY | O_NONBLOCK) : -1;
	if (root >= 0)
		close(root);
	return fd >= 0 ? fd : open_map_file(snap->container.pid, path);
}

static int regular_file(int fd)
{
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || fcntl(fd, F_SETFL, 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

static int open_module_file(const char *path)
{
	return regular_file(open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC));
}

/* m's file as the process of snap sees it. */
static int open_target_file(const struct ls_snapshot *snap, const char *path)
{
	int fd = open_in_container(snap, path);

	return fd == -ENOENT ? open_module_file(path) : regular_file(fd);
}

/* Open m's file at bias 0 into a new pool entry. */
static void open_pooled(struct pooled *p, const struct ls_snapshot *snap,
			const struct ls_module *m)
{
	int fd;

	p->state = MOD_UNUSABLE;
	fd = m->file ? open_module_file(m->file) : -1;
	if (fd < 0)
		fd = open_target_file(snap, m->path);
	if (fd < 0)
		return;
	p->dwfl = dwfl_begin(&offline_callbacks);
	if (!p->dwfl) {
		close(fd);
		return;
	}
	dwfl_report_begin(p->dwfl);
	/* Addresses are asked relative to the load bias (addr - m->bias),
	 * which is dl_iterate_phdr's dlpi_addr: the ELF's own p_vaddr.
	 * libdw owns fd once it took the module. */
	p->mod = dwfl_report_elf(p->dwfl, ls_sym_basename(m->path), m->path,
				 fd, 0, true);
	if (!p->mod)
		close(fd);
	dwfl_report_end(p->dwfl, NULL, NULL);
	if (p->mod && build_id_matches(p->mod, p))
		p->state = MOD_OK;
}

/* The pool entry of m's file, opened the first time any symbolizer of
 * the pool asks; its index, or SLOT_NONE. */
static long pool_find(struct ls_sympool *pool, const struct ls_snapshot *snap,
		      const struct ls_module *m)
{
	uint64_t mnt = snap->has_container && snap->container.other_root ?
		       snap->container.ns_mnt : 0;
	struct pooled *p;
	size_t i;

	for (i = 0; i < pool->n; i++)
		if (same_file(&pool->v[i], m, mnt))
			return (long)i;
	if (LS_GROW(pool->v, pool->n + 1, pool->cap))
		return SLOT_NONE;
	p = memset(&pool->v[pool->n], 0, sizeof(*p));
	p->path = strdup(m->path);
	if (!p->path)
		return SLOT_NONE;
	p->mnt = mnt;
	p->build_id_len = m->build_id_len;
	memcpy(p->build_id, m->build_id, m->build_id_len);
	open_pooled(p, snap, m);
	return (long)pool->n++;
}

/*
 * Module i's opened file, or NULL when its symbols cannot be used.  A
 * live process in a container is read through its root (its paths are
 * its own); the build id check keeps a wrong file from giving wrong
 * names.
 */
static Dwfl_Module *open_module(struct ls_symbolizer *s, size_t i)
{
	const struct ls_module *m = &s->snap->modules[i];

	if (s->slot[i] == SLOT_UNTRIED)
		s->slot[i] = has_file(m) ? pool_find(s->pool, s->snap, m) :
			     SLOT_NONE;
	if (s->slot[i] < 0 || s->pool->v[s->slot[i]].state != MOD_OK)
		return NULL;
	return s->pool->v[s->slot[i]].mod;
}

/* --- units and functions by address -------------------------------- */

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Add die's address ranges to sp as belonging to idx; returns how many
 * (0: none, the DIE has no code), or -ENOMEM. */
static int spans_add(struct spans *sp, Dwarf_Die *die, size_t idx)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	int n = 0;

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (lo >= hi)
			continue;
		if (LS_GROW(sp->v, sp->n + 1, sp->cap))
			return -ENOMEM;
		sp->v[sp->n++] = (struct span){ .lo = lo, .hi = hi, .idx = idx };
		n++;
	}
	return n;
}

static void spans_sort(struct spans *sp)
{
	size_t i;

	qsort(sp->v, sp->n, sizeof(*sp->v), cmp_span);
	for (i = 0; i < sp->n; i++)
		sp->v[i].maxhi = i && sp->v[i - 1].maxhi > sp->v[i].hi ?
			sp->v[i - 1].maxhi : sp->v[i].hi;
}

/* The idx of the range holding pc that starts last (the innermost of
 * nested ones), or -1. */
static long spans_find(const struct spans *sp, Dwarf_Addr pc)
{
	size_t lo = 0, hi = sp->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sp->v[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo-- > 0 && sp->v[lo].maxhi > pc)
		if (sp->v[lo].hi > pc)
			return (long)sp->v[lo].idx;
	return -1;
}

/* Record the unit whose DIE is cu (and split DIE sub) with its ranges;
 * a unit without code (types only) is left out.  -ENOMEM or 0. */
static int add_unit(struct pooled *p, Dwarf_Die *cu, Dwarf_Die *sub)
{
	Dwarf_Attribute a;
	int n;

	if (LS_GROW(p->cus, p->ncus + 1, p->cus_cap))
		return -ENOMEM;
	n = spans_add(&p->units, cu, p->ncus);
	if (n <= 0)
		return n;
	memset(&p->cus[p->ncus], 0, sizeof(p->cus[p->ncus]));
	p->cus[p->ncus].cu = *cu;
	p->cus[p->ncus].sub = sub ? *sub : *cu;
	p->cus[p->ncus].comp_dir = dwarf_formstring(
		dwarf_attr(cu, DW_AT_comp_dir, &a));
	p->ncus++;
	return 0;
}

/* Index the units of p's debug information (the file's own, or the one
 * libdwfl found through .gnu_debuglink or the build id) by their own
 * DW_AT_ranges or low and high pc, which every producer writes, rather
 * than by .debug_aranges, which clang and rustc leave out. */
static void read_units(struct pooled *p)
{
	Dwarf *dw = dwfl_module_getdwarf(p->mod, &p->dwbias);
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie, subdie;
	uint8_t type;

	p->cus_read = 1;
	while (dw && dwarf_get_units(dw, cu, &cu, NULL, &type, &cudie,
				     &subdie) == 0) {
		int split = type == DW_UT_skeleton && dwarf_tag(&subdie) ==
			DW_TAG_compile_unit;

		if (type != DW_UT_compile && type != DW_UT_skeleton)
			continue;
		if (add_unit(p, &cudie, split ? &subdie : NULL))
			break;
	}
	spans_sort(&p->units);
}

/* The unit whose code holds pc (a file address), or NULL. */
static struct cu_ent *cu_of(struct pooled *p, Dwarf_Addr pc)
{
	long i;

	if (!p->cus_read)
		read_units(p);
	i = spans_find(&p->units, pc - p->dwbias);
	return i < 0 ? NULL : &p->cus[i];
}

/*
 * Index the functions below parent: every subprogram with code, nested
 * ones included, found in the namespaces, types and blocks that can
 * hold them.  Returns -ENOMEM or 0.
 */
static int read_fns(struct cu_ent *cu, Dwarf_Die *parent, int depth)
{
	Dwarf_Die c;
	int n;

	if (depth > 64 || dwarf_child(parent, &c) != 0)
		return 0;
	do {
		switch (dwarf_tag(&c)) {
		case DW_TAG_subprogram:
			if (LS_GROW(cu->fdie, cu->nfdie + 1, cu->fdie_cap))
				return -ENOMEM;
			n = spans_add(&cu->fns, &c, cu->nfdie);
			if (n < 0)
				return n;
			if (n > 0)
				cu->fdie[cu->nfdie++] = c;
			/* fall through - to functions nested in it */
		case DW_TAG_lexical_block:
		case DW_TAG_namespace:
		case DW_TAG_module:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			if (dwarf_haschildren(&c) == 1 &&
			    read_fns(cu, &c, depth + 1))
				return -ENOMEM;
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&c, &c) == 0);
	return 0;
}

/* The DIE of the innermost function whose code holds pc, or NULL. */
static Dwarf_Die *fn_of(struct cu_ent *cu, Dwarf_Addr pc)
{
	long i;

	if (!cu->fns_read) {
		Dwarf_Die top = cu->sub;

		cu->fns_read = 1;
		read_fns(cu, &top, 0);
		spans_sort(&cu->fns);
	}
	i = spans_find(&cu->fns, pc);
	return i < 0 ? NULL : &cu->fdie[i];
}

/* Name of a subprogram or inlined-subroutine DIE, demangled; *raw gets
 * the name as the debug information spells it (mangled). */
static const char *die_name(struct ls_symbolizer *s, Dwarf_Die *die,
			    const char **raw)
{
	Dwarf_Attribute a;
	const char *name = NULL;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		name = dwarf_formstring(&a);
	if (!name && dwarf_attr_integrate(die, DW_AT_name, &a))
		name = dwarf_formstring(&a);
	*raw = NULL;
	return name ? intern_demangled(s, name, raw) : NULL;
}

/*
 * A source path as llvm-symbolizer and addr2line print it: one the line
 * table gives relative (rustc's, "src/main.rs") is taken from the unit's
 * compilation directory.
 */
static const char *full_path(struct ls_symbolizer *s, const struct cu_ent *cu,
			     const char *file)
{
	char *joined;
	const char *r;

	if (!file || file[0] == '/' || !cu->comp_dir)
		return intern(s, file);
	if (asprintf(&joined, "%s/%s", cu->comp_dir, file) < 0)
		return NULL;
	r = intern(s, joined);
	free(joined);
	return r;
}

/* Where an inlined subroutine was called from. */
static void call_site(struct ls_symbolizer *s, const struct cu_ent *cu,
		      Dwarf_Die *die, Dwarf_Files *files, const char **file,
		      int *line)
{
	Dwarf_Attribute a;
	Dwarf_Word v;

	*file = NULL;
	*line = 0;
	if (files && dwarf_attr(die, DW_AT_call_file, &a) &&
	    dwarf_formudata(&a, &v) == 0)
		*file = full_path(s, cu, dwarf_filesrc(files, v, NULL, NULL));
	if (dwarf_attr(die, DW_AT_call_line, &a) &&
	    dwarf_formudata(&a, &v) == 0 && v <= INT32_MAX)
		*line = (int)v;
}

/* The deepest chain of inlined functions followed. */
#define MAX_NEST (2 * LS_SYM_MAX_FRAMES)

struct nest {
	Dwarf_Die die[MAX_NEST];	/* outermost first */
	int n;
};

/*
 * Append to w the inlined subroutines below parent that hold pc,
 * outermost first, through the lexical blocks that hold it.  A DIE whose
 * ranges libdw cannot read is taken as not holding pc, where
 * dwarf_getscopes() gives up on the whole unit (it does on rustc's
 * output).
 */
static void inlined_walk(Dwarf_Die *parent, Dwarf_Addr pc, struct nest *w)
{
	Dwarf_Die c;

	if (w->n >= MAX_NEST || dwarf_child(parent, &c) != 0)
		return;
	do {
		switch (dwarf_tag(&c)) {
		case DW_TAG_inlined_subroutine:
			if (dwarf_haspc(&c, pc) != 1)
				break;
			w->die[w->n++] = c;
			inlined_walk(&c, pc, w);
			return;
		case DW_TAG_lexical_block:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
			if (dwarf_haspc(&c, pc) != 1)
				break;
			inlined_walk(&c, pc, w);
			return;
		default:
			break;
		}
	} while (dwarf_siblingof(&c, &c) == 0);
}

/*
 * The functions at pc from the unit's DIE tree, innermost first, into
 * fr[0..max): the inlined ones (inlined = 1), then the subprogram that
 * holds the code, named as its DIE names it.  On entry *file and *line
 * are the line-table position of pc; each inlined frame takes the
 * current position and hands its call site on to its caller, so on
 * return they are the position in the function that holds the code.
 * Returns the count of frames written, the subprogram's included when
 * the tree has one (*named then set).
 */
static size_t die_chain(struct ls_symbolizer *s, struct cu_ent *cu,
			Dwarf_Addr pc, struct ls_symframe *fr, size_t max,
			const char **file, int *line, int *named)
{
	Dwarf_Die die, *fn = fn_of(cu, pc);
	Dwarf_Files *files = NULL;
	struct nest w;
	size_t nfiles, n = 0;
	int i;

	*named = 0;
	w.n = 0;
	if (fn) {
		w.die[w.n++] = *fn;
		inlined_walk(fn, pc, &w);
	}
	die = cu->cu;
	if (dwarf_getsrcfiles(&die, &files, &nfiles))
		files = NULL;
	for (i = w.n - 1; i >= 0 && n < max; i--) {
		Dwarf_Die *d = &w.die[i];

		fr[n].function = die_name(s, d, &fr[n].symbol);
		if (dwarf_tag(d) == DW_TAG_subprogram) {
			*named = fr[n].function != NULL;
			n += *named;
			break;
		}
		fr[n].inlined = 1;
		fr[n].file = *file;
		fr[n].line = *line;
		call_site(s, cu, d, files, file, line);
		n++;
	}
	return n;
}

/*
 * The line-table row of pc in the unit: the last row at or below pc,
 * which must not end its sequence -- a pc past the end of every sequence
 * that starts below it has no line, rather than one of a neighbouring
 * sequence.  libdw sorts the rows by address, an end-of-sequence row
 * before a row that starts another sequence at the same address.
 */
static Dwarf_Line *line_row(const struct cu_ent *cu, Dwarf_Addr pc)
{
	Dwarf_Die die = cu->cu;
	Dwarf_Lines *lines;
	Dwarf_Line *l;
	Dwarf_Addr a;
	size_t n, lo = 0, hi;
	bool end;

	if (dwarf_getsrclines(&die, &lines, &n) || !n)
		return NULL;
	hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (dwarf_lineaddr(dwarf_onesrcline(lines, mid), &a) == 0 &&
		    a <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || !(l = dwarf_onesrcline(lines, lo - 1)) ||
	    dwarf_lineendsequence(l, &end) || end)
		return NULL;
	return l;
}

static void line_of(struct ls_symbolizer *s, const struct cu_ent *cu,
		    Dwarf_Addr pc, const char **file, int *line)
{
	Dwarf_Line *l = line_row(cu, pc);

	*file = NULL;
	*line = 0;
	if (!l || dwarf_lineno(l, line))
		return;
	*file = full_path(s, cu, dwarf_linesrc(l, NULL, NULL));
	if (!*file)
		*line = 0;
}

/*
 * Symbolize rel, an address relative to mod's load bias, from scratch
 * into fr; returns the frame count.  Every name, line and inline chain is
 * that of pc = rel - 1, the call instruction of a return address (the
 * last instruction of a function whose call does not return is followed
 * by the next function).  The function that holds the code is named as
 * the symbol table names it, as llvm-symbolizer does: that tells gcc's
 * clones and split parts ("f.constprop.0", "f.cold") from f itself, and
 * gives a C++ static function its parameters; the debug information's
 * name serves where no symbol covers pc.  addr, module and mod are left
 * for the caller.
 */
static size_t resolve(struct ls_symbolizer *s, struct pooled *p,
		      uint64_t rel, struct ls_symframe *fr)
{
	const char *file = NULL, *name;
	uint64_t pc = rel ? rel - 1 : 0;
	struct cu_ent *cu = cu_of(p, pc);
	struct ls_symframe *last;
	GElf_Off off;
	GElf_Sym sym;
	size_t n = 0;
	int line = 0, named = 0;

	memset(fr, 0, LS_SYM_MAX_FRAMES * sizeof(*fr));
	if (cu) {
		line_of(s, cu, pc - p->dwbias, &file, &line);
		n = die_chain(s, cu, pc - p->dwbias, fr, LS_SYM_MAX_FRAMES,
			      &file, &line, &named);
	}
	if (!named)
		n += n < LS_SYM_MAX_FRAMES;
	last = &fr[n - 1];
	name = dwfl_module_addrinfo(p->mod, pc, &off, &sym, NULL, NULL, NULL);
	if (name) {
		last->function = intern_demangled(s, name, &last->symbol);
		last->offset = off + (rel ? 1 : 0);
	}
	last->inlined = 0;
	last->file = file;
	last->line = line;
	return n;
}

static uint64_t hash_key(uint32_t gen, uint64_t addr)
{
	uint64_t h = (addr ^ ((uint64_t)gen << 47)) * 0x9e3779b97f4a7c15ULL;

	return h ^ (h >> 29);
}

static struct cache_ent *cache_slot(struct cache_ent *tab, size_t cap,
				    uint32_t gen, uint64_t addr)
{
	size_t j = hash_key(gen, addr) & (cap - 1);

	while (tab[j].used && (tab[j].gen != gen || tab[j].addr != addr))
		j = (j + 1) & (cap - 1);
	return &tab[j];
}

static int cache_grow(struct ls_sympool *s)
{
	size_t ncap = s->cache_cap ? s->cache_cap * 2 : 1024, i;
	struct cache_ent *n = calloc(ncap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (i = 0; i < s->cache_cap; i++)
		if (s->cache[i].used)
			*cache_slot(n, ncap, s->cache[i].gen,
				    s->cache[i].addr) = s->cache[i];
	free(s->cache);
	s->cache = n;
	s->cache_cap = ncap;
	return 0;
}

/* The cached frames of (slot, rel), resolved now if new; NULL on
 * ENOMEM. */
static struct cache_ent *lookup(struct ls_symbolizer *sym, long slot,
				uint64_t rel)
{
	struct ls_sympool *p = sym->pool;
	struct ls_symframe fr[LS_SYM_MAX_FRAMES];
	struct cache_ent *e;
	size_t n;

	if (p->cache_cap) {
		e = cache_slot(p->cache, p->cache_cap, (uint32_t)slot, rel);
		if (e->used)
			return e;
	}
	n = resolve(sym, &p->v[slot], rel, fr);
	if (LS_GROW(p->frames, p->nframes + n, p->frames_cap))
		return NULL;
	if (2 * (p->cache_used + 1) > p->cache_cap && cache_grow(p))
		return NULL;
	memcpy(p->frames + p->nframes, fr, n * sizeof(*fr));
	e = cache_slot(p->cache, p->cache_cap, (uint32_t)slot, rel);
	*e = (struct cache_ent){ .addr = rel, .gen = (uint32_t)slot, .used = 1,
				 .first = p->nframes, .count = n };
	p->nframes += n;
	p->cache_used++;
	return e;
}

/* A kernel return address (the eBPF tracer's kernel stacks), through
 * /proc/kallsyms: the function holding the call, offset from addr. */
static int resolve_kernel(struct ls_symbolizer *s, const struct ls_module *m,
			  uint64_t addr, struct ls_symframe *out, size_t max,
			  size_t *n)
{
	struct ls_sympool *p = s->pool;
	const char *name, *mod;
	uint64_t off;

	*n = 1;
	if (max < 1)
		return -ENOSPC;
	if (!p->ksyms_tried) {
		p->ksyms_tried = 1;
		p->ksyms = ls_kallsyms_load(NULL);
	}
	memset(out, 0, sizeof(*out));
	out->addr = addr;
	out->module = m->path;
	out->mod = m;
	name = ls_kallsyms_find(p->ksyms, addr ? addr - 1 : 0, &off, &mod);
	if (name) {
		out->function = intern(s, name);
		out->offset = off + 1;
		if (mod[0])
			out->module = intern(s, mod);
	}
	return 0;
}

/*
 * An address in no module: JIT code, named by the snapshot's own record
 * of it (LSNAP_JIT, added by `leakscope snapshot`), else by the
 * runtime's perf map, /tmp/perf-PID.map, when it wrote one
 * (ls_perfmap_load_pid() says whose map is read).  Returns 1 when it
 * names addr into *f.
 */
static int resolve_jit(struct ls_symbolizer *s, uint64_t addr,
		       struct ls_symframe *f)
{
	static const char *const stop[LSNAP_FRAME_STOP_END] = {
		[LSNAP_FRAME_STOP_NOFP] =
			"unwinding stopped: code without CFI or frame pointers",
	};
	const struct ls_snapshot *snap = s->snap;
	uint64_t pc = addr ? addr - 1 : 0, lo = 0, size;
	const char *name = NULL, *runtime = NULL;
	size_t i;

	if (addr && addr < LSNAP_FRAME_STOP_END) {
		f->function = f->symbol = intern(s, stop[addr]);
		f->module = "leakscope";
		return f->function != NULL;
	}
	for (i = 0; i < snap->njit && !name; i++)
		if (pc >= snap->jit[i].lo && pc < snap->jit[i].hi) {
			name = snap->jit[i].name;
			lo = snap->jit[i].lo;
			runtime = snap->jit[i].beam ? "beam jit" : "jit";
		}
	if (!name && !snap->njit) {
		if (!s->jit_tried && snap->hdr.pid) {
			s->jit_tried = 1;
			s->jit = ls_perfmap_load_pid((pid_t)snap->hdr.pid);
		}
		name = ls_perfmap_find(s->jit, pc, &lo, &size);
		runtime = ls_perfmap_runtime(s->jit);
	}
	if (!name || !(f->function = intern(s, name)))
		return 0;
	f->symbol = f->function;
	f->offset = addr - lo;
	f->module = runtime;
	return 1;
}

int ls_symbolize_frame(struct ls_symbolizer *s, uint32_t gen, uint64_t addr,
		       struct ls_symframe *out, size_t max, size_t *n)
{
	long idx = pick_module(s->snap, gen, addr);
	const struct ls_module *m = idx >= 0 ? &s->snap->modules[idx] : NULL;
	Dwfl_Module *mod;
	struct cache_ent *e;
	size_t i;

	if (m && !strcmp(m->path, LS_KERNEL_MODULE))
		return resolve_kernel(s, m, addr, out, max, n);
	mod = m ? open_module(s, (size_t)idx) : NULL;
	*n = 1;
	if (!mod) {		/* no module, or no usable file: its name */
		if (max < 1)
			return -ENOSPC;
		memset(out, 0, sizeof(*out));
		e = NULL;
	} else {
		/* The file was opened at bias 0: ask for file addresses. */
		e = lookup(s, s->slot[idx], addr - m->bias);
		if (!e)
			return -ENOMEM;
		*n = e->count;
		if (max < e->count)
			return -ENOSPC;
		memcpy(out, s->pool->frames + e->first, e->count * sizeof(*out));
	}
	for (i = 0; i < *n; i++) {
		out[i].addr = addr;
		out[i].module = m && m->path[0] ? m->path : NULL;
		out[i].mod = m;
	}
	if (!m)
		resolve_jit(s, addr, out);
	return 0;
}
