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
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <demangle.h>
#include "symbolize.h"

#define VDSO_NAME "linux-vdso.so.1"

enum { MOD_UNTRIED = 0, MOD_OK = 1, MOD_UNUSABLE = -1 };

struct modstate {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	int state;
};

struct cache_ent {
	uint64_t addr;
	uint32_t gen;
	uint32_t used;
	size_t first, count;	/* into ls_symbolizer.frames */
};

struct ls_symbolizer {
	const struct ls_snapshot *snap;
	struct modstate *mods;

	struct cache_ent *cache;
	size_t cache_cap, cache_used;

	struct ls_symframe *frames;
	size_t nframes, frames_cap;

	char **strs;		/* interned strings, open addressing */
	size_t strs_cap, strs_used;
};

static char *debuginfo_path;	/* NULL: libdwfl's default search path */

static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
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

static int strs_grow(struct ls_symbolizer *s)
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
static const char *intern(struct ls_symbolizer *s, const char *str)
{
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

struct ls_symbolizer *ls_symbolizer_new(const struct ls_snapshot *snap)
{
	struct ls_symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		goto fail;
	s->snap = snap;
	s->mods = calloc(snap->nmodules ? snap->nmodules : 1,
			 sizeof(*s->mods));
	if (!s->mods)
		goto fail;
	/* libdwfl would otherwise ask debuginfod servers for missing debug
	 * files: a report must never touch the network. */
	unsetenv("DEBUGINFOD_URLS");
	return s;
fail:
	ls_symbolizer_free(s);
	errno = ENOMEM;
	return NULL;
}

void ls_symbolizer_free(struct ls_symbolizer *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; s->mods && i < s->snap->nmodules; i++)
		if (s->mods[i].dwfl)
			dwfl_end(s->mods[i].dwfl);
	for (i = 0; i < s->strs_cap; i++)
		free(s->strs[i]);
	free(s->strs);
	free(s->mods);
	free(s->cache);
	free(s->frames);
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

static int build_id_matches(Dwfl_Module *mod, const struct ls_module *m)
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
	return (unsigned)len == m->build_id_len &&
		(len == 0 || !memcmp(bits, m->build_id, (size_t)len));
}

/*
 * Open module i from disk once; nonzero when its symbols can be used.
 * NEEDSWORK: a process in another mount namespace (a container) sees other
 * files under the same paths; for a live target /proc/PID/root/PATH would
 * be the right file.  The build id check keeps a wrong file from giving
 * wrong names meanwhile.
 */
static int open_module(struct ls_symbolizer *s, size_t i)
{
	struct modstate *ms = &s->mods[i];
	const struct ls_module *m = &s->snap->modules[i];

	if (ms->state != MOD_UNTRIED)
		return ms->state == MOD_OK;
	ms->state = MOD_UNUSABLE;
	if (!has_file(m))
		return 0;
	ms->dwfl = dwfl_begin(&offline_callbacks);
	if (!ms->dwfl)
		return 0;
	dwfl_report_begin(ms->dwfl);
	/* add_p_vaddr: the snapshot's bias is dl_iterate_phdr's dlpi_addr,
	 * to which the ELF's p_vaddr are relative. */
	ms->mod = dwfl_report_elf(ms->dwfl, ls_sym_basename(m->path), m->path,
				  -1, m->bias, true);
	dwfl_report_end(ms->dwfl, NULL, NULL);
	if (ms->mod && build_id_matches(ms->mod, m))
		ms->state = MOD_OK;
	return ms->state == MOD_OK;
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

/* Symbolize addr from scratch into fr; returns the frame count. */
static size_t resolve(struct ls_symbolizer *s, uint32_t gen, uint64_t addr,
		      struct ls_symframe *fr)
{
	long idx = pick_module(s->snap, gen, addr);
	const char *modpath = NULL, *file, *name;
	Dwfl_Module *mod;
	uint64_t pc = addr ? addr - 1 : 0;
	GElf_Off off;
	GElf_Sym sym;
	size_t n, i;
	int line;

	memset(fr, 0, LS_SYM_MAX_FRAMES * sizeof(*fr));
	if (idx >= 0 && s->snap->modules[idx].path[0])
		modpath = intern(s, s->snap->modules[idx].path);
	if (idx < 0 || !open_module(s, (size_t)idx)) {
		fr[0].addr = addr;
		fr[0].module = modpath;
		fr[0].mod = idx >= 0 ? &s->snap->modules[idx] : NULL;
		return 1;
	}
	mod = s->mods[idx].mod;
	line_of(s, mod, pc, &file, &line);
	n = inline_chain(s, mod, pc, fr, LS_SYM_MAX_FRAMES - 1, &file, &line);
	name = dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);
	if (name) {
		fr[n].function = intern_demangled(s, name, &fr[n].symbol);
		fr[n].offset = off;
	}
	fr[n].file = file;
	fr[n].line = line;
	for (i = 0; i <= n; i++) {
		fr[i].addr = addr;
		fr[i].module = modpath;
		fr[i].mod = &s->snap->modules[idx];
	}
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

static int cache_grow(struct ls_symbolizer *s)
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

/* Resolve and remember (gen, addr); returns its cache entry or NULL. */
static struct cache_ent *add_entry(struct ls_symbolizer *s, uint32_t gen,
				   uint64_t addr)
{
	struct ls_symframe fr[LS_SYM_MAX_FRAMES];
	size_t n = resolve(s, gen, addr, fr);
	struct cache_ent *e;

	if (s->nframes + n > s->frames_cap) {
		size_t ncap = s->frames_cap ? s->frames_cap * 2 : 1024;
		struct ls_symframe *p;

		while (ncap < s->nframes + n)
			ncap *= 2;
		p = realloc(s->frames, ncap * sizeof(*p));
		if (!p)
			return NULL;
		s->frames = p;
		s->frames_cap = ncap;
	}
	if (2 * (s->cache_used + 1) > s->cache_cap && cache_grow(s))
		return NULL;
	memcpy(s->frames + s->nframes, fr, n * sizeof(*fr));
	e = cache_slot(s->cache, s->cache_cap, gen, addr);
	*e = (struct cache_ent){ .addr = addr, .gen = gen, .used = 1,
				 .first = s->nframes, .count = n };
	s->nframes += n;
	s->cache_used++;
	return e;
}

int ls_symbolize_frame(struct ls_symbolizer *s, uint32_t gen, uint64_t addr,
		       struct ls_symframe *out, size_t max, size_t *n)
{
	struct cache_ent *e = NULL;

	if (s->cache_cap)
		e = cache_slot(s->cache, s->cache_cap, gen, addr);
	if (!e || !e->used)
		e = add_entry(s, gen, addr);
	if (!e)
		return -ENOMEM;
	*n = e->count;
	if (max < e->count)
		return -ENOSPC;
	memcpy(out, s->frames + e->first, e->count * sizeof(*out));
	return 0;
}
