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
#include "util.h"

#define VDSO_NAME "linux-vdso.so.1"

enum { MOD_OK = 1, MOD_UNUSABLE = -1 };

/* A module file opened once, at bias 0: every process that maps the
 * same file (same path and build id) at any address shares it. */
struct pooled {
	char *path;
	unsigned build_id_len;
	uint8_t build_id[LSNAP_BUILD_ID_MAX];
	Dwfl *dwfl;
	Dwfl_Module *mod;
	int state;
};

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

static int same_file(const struct pooled *p, const struct ls_module *m)
{
	return p->build_id_len == m->build_id_len &&
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
static int open_module_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || fcntl(fd, F_SETFL, 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Open m's file at bias 0 into a new pool entry. */
static void open_pooled(struct pooled *p, const struct ls_module *m)
{
	int fd;

	p->state = MOD_UNUSABLE;
	fd = open_module_file(m->path);
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
static long pool_find(struct ls_sympool *pool, const struct ls_module *m)
{
	struct pooled *p;
	size_t i;

	for (i = 0; i < pool->n; i++)
		if (same_file(&pool->v[i], m))
			return (long)i;
	if (LS_GROW(pool->v, pool->n + 1, pool->cap))
		return SLOT_NONE;
	p = memset(&pool->v[pool->n], 0, sizeof(*p));
	p->path = strdup(m->path);
	if (!p->path)
		return SLOT_NONE;
	p->build_id_len = m->build_id_len;
	memcpy(p->build_id, m->build_id, m->build_id_len);
	open_pooled(p, m);
	return (long)pool->n++;
}

/*
 * Module i's opened file, or NULL when its symbols cannot be used.
 * NEEDSWORK: a process in another mount namespace (a container) sees other
 * files under the same paths; for a live target /proc/PID/root/PATH would
 * be the right file.  The build id check keeps a wrong file from giving
 * wrong names meanwhile.
 */
static Dwfl_Module *open_module(struct ls_symbolizer *s, size_t i)
{
	const struct ls_module *m = &s->snap->modules[i];

	if (s->slot[i] == SLOT_UNTRIED)
		s->slot[i] = has_file(m) ? pool_find(s->pool, m) : SLOT_NONE;
	if (s->slot[i] < 0 || s->pool->v[s->slot[i]].state != MOD_OK)
		return NULL;
	return s->pool->v[s->slot[i]].mod;
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

/* Where an inlined subroutine was called from. */
static void call_site(struct ls_symbolizer *s, Dwarf_Die *die,
		      Dwarf_Files *files, const char **file, int *line)
{
	Dwarf_Attribute a;
	Dwarf_Word v;

	*file = NULL;
	*line = 0;
	if (files && dwarf_attr(die, DW_AT_call_file, &a) &&
	    dwarf_formudata(&a, &v) == 0)
		*file = intern(s, dwarf_filesrc(files, v, NULL, NULL));
	if (dwarf_attr(die, DW_AT_call_line, &a) &&
	    dwarf_formudata(&a, &v) == 0 && v <= INT32_MAX)
		*line = (int)v;
}

/*
 * The DIEs enclosing pc, innermost first, as a malloc()ed array; returns
 * their count (0 or less: none).  Past the innermost inlined instance
 * dwarf_getscopes() follows the abstract origin, so the chain of concrete
 * instances, one per level of inlining, is taken from the DIE tree above
 * the innermost scope instead.
 */
static int concrete_scopes(Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die **scopes)
{
	Dwarf_Die inner;
	int n = dwarf_getscopes(cu, pc, scopes);

	if (n <= 0)
		return n;
	inner = (*scopes)[0];
	free(*scopes);
	*scopes = NULL;
	return dwarf_getscopes_die(&inner, scopes);
}

/*
 * The inlined functions at pc, innermost first, into fr[0..max).  On
 * entry *file and *line are the line-table position of pc; each inlined
 * frame takes the current position and hands its call site on to its
 * caller, so on return they are the position in the function that holds
 * the code.
 */
static size_t inline_chain(struct ls_symbolizer *s, Dwfl_Module *mod,
			   uint64_t pc, struct ls_symframe *fr, size_t max,
			   const char **file, int *line)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = dwfl_module_addrdie(mod, pc, &bias), *scopes = NULL;
	Dwarf_Files *files = NULL;
	size_t nfiles, n = 0;
	int i, nsc;

	if (!cu)
		return 0;
	nsc = concrete_scopes(cu, pc - bias, &scopes);
	if (dwarf_getsrcfiles(cu, &files, &nfiles))
		files = NULL;
	for (i = 0; i < nsc && n < max; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_subprogram)
			break;
		if (tag != DW_TAG_inlined_subroutine)
			continue;
		fr[n].function = die_name(s, &scopes[i], &fr[n].symbol);
		fr[n].inlined = 1;
		fr[n].file = *file;
		fr[n].line = *line;
		call_site(s, &scopes[i], files, file, line);
		n++;
	}
	free(scopes);
	return n;
}

static void line_of(struct ls_symbolizer *s, Dwfl_Module *mod, uint64_t pc,
		    const char **file, int *line)
{
	Dwfl_Line *l = dwfl_module_getsrc(mod, pc);
	const char *f = l ? dwfl_lineinfo(l, NULL, line, NULL, NULL, NULL) : NULL;

	*file = intern(s, f);
	if (!*file)
		*line = 0;
}

/* Symbolize rel, an address relative to mod's load bias, from scratch
 * into fr; returns the frame count.  addr, module and mod are left for
 * the caller. */
static size_t resolve(struct ls_symbolizer *s, Dwfl_Module *mod, uint64_t rel,
		      struct ls_symframe *fr)
{
	const char *file, *name;
	uint64_t pc = rel ? rel - 1 : 0;
	GElf_Off off;
	GElf_Sym sym;
	size_t n;
	int line;

	memset(fr, 0, LS_SYM_MAX_FRAMES * sizeof(*fr));
	line_of(s, mod, pc, &file, &line);
	n = inline_chain(s, mod, pc, fr, LS_SYM_MAX_FRAMES - 1, &file, &line);
	name = dwfl_module_addrinfo(mod, rel, &off, &sym, NULL, NULL, NULL);
	if (name) {
		fr[n].function = intern_demangled(s, name, &fr[n].symbol);
		fr[n].offset = off;
	}
	fr[n].file = file;
	fr[n].line = line;
	return n + 1;
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
				Dwfl_Module *mod, uint64_t rel)
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
	n = resolve(sym, mod, rel, fr);
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
		e = lookup(s, s->slot[idx], mod, addr - m->bias);
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
	return 0;
}
