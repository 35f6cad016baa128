/*
 * heapmodel.c - choosing the heap model, and whether the allocator's own
 * mappings may be left out of the roots (heapmodel.h).
 */
#include <link.h>
#include <stddef.h>
#include <string.h>
#include "dynamic.h"
#include "glibcheap.h"
#include "dllock.h"
#include "heapmodel.h"
#include "real.h"

static struct ls_heapmodel model = {
	.id = LSNAP_ALLOC_GLIBC, .name = "glibc", .chunk_headers = 1,
};

/*
 * The answer depends only on which objects are loaded (and the model,
 * fixed by ls_heapmodel_learn), so it is kept with the loader's counts
 * of loads and unloads, read at the walk's start: a check on a process
 * that loaded nothing since the last one walks no object.  adds is
 * written last (0 while the rest changes), so a check that stopped
 * another mid-update (the exit path) walks rather than read half of it.
 */
static struct {
	unsigned long long adds, subs;	/* 0, 0: nothing kept */
	int known;
} last;

/* Objects walked for references to the allocator's entry points that
 * bypass the hooks (names: those that resolve into the allocator). */
struct walk {
	const char *names[16];
	size_t n;
	unsigned seen;		/* objects so far: the first is the program */
	int program_allocates;	/* the allocator is in the program itself */
	int bypassed;		/* another object refers to one of names */
};

static int holds(const struct dl_phdr_info *info, uint64_t a)
{
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t s = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && a >= s && a - s < ph->p_memsz)
			return 1;
	}
	return 0;
}

static int named(const char *name, void *arg)
{
	const struct walk *w = arg;
	size_t i;

	for (i = 0; i < w->n; i++)
		if (!strcmp(name, w->names[i]))
			return 1;
	return 0;
}

static int walk_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct walk *w = arg;
	struct ls_dyn d;
	int first = w->seen++ == 0;

	(void)size;
	if (holds(info, ls_real_alloc_lo)) {
		w->program_allocates |= first;
		return 0;
	}
	if (holds(info, (uint64_t)(uintptr_t)&ls_heapmodel_learn) ||
	    ls_dyn_read(info, &d))
		return 0;	/* the agent; an object without symbols */
	w->bypassed |= w->n && ls_dyn_refers(&d, named, w);
	return 0;
}

/* Does the allocator's object define name? */
static int by_allocator(const char *name)
{
	void *f = ls_real_lookup(name);

	return f && ls_real_by_allocator((uintptr_t)f);
}

/* Walk the loaded objects for the entry points of list (NULL-ended)
 * that resolve into the allocator. */
static void walk(struct walk *w, const char *const *list)
{
	memset(w, 0, sizeof(*w));
	for (; list && *list && w->n < sizeof(w->names) / sizeof(w->names[0]);
	     list++) {
		if (by_allocator(*list))
			w->names[w->n++] = *list;
	}
	dl_iterate_phdr(walk_object, w);
}

void ls_heapmodel_learn(void)
{
	struct ls_heapmodel m = { .id = LSNAP_ALLOC_GLIBC, .name = "glibc",
				  .chunk_headers = 1 };
	struct walk w;

	if (ls_real_alloc_lo || ls_real_alloc_hi) {
		m.chunk_headers = 0;
		if (ls_jeheap_detect(m.version, sizeof(m.version))) {
			m.id = LSNAP_ALLOC_JEMALLOC;
			m.name = "jemalloc";
			m.bypass = ls_jeheap_bypass;
			/* In the program itself, the allocator's mappings
			 * cannot be told from the program's own. */
			walk(&w, NULL);
			m.own_maps = !w.program_allocates;
		} else if (by_allocator("tc_version")) {
			/* Its mappings come from raw system calls and sbrk,
			 * which no hook sees: all of it is scanned. */
			m.id = LSNAP_ALLOC_TCMALLOC;
			m.name = "tcmalloc";
		} else {
			m.id = LSNAP_ALLOC_OTHER;
			m.name = "other";
		}
	}
	model = m;
	__atomic_store_n(&last.adds, 0, __ATOMIC_RELEASE); /* walk again */
	ls_glibcheap_learn();	/* does nothing unless malloc is libc's */
}

const struct ls_heapmodel *ls_heapmodel(void)
{
	return &model;
}

/* The loader's counts of objects loaded and unloaded so far (the first
 * object's dl_phdr_info carries them). */
static int generation(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long long *g = arg;

	if (size < offsetof(struct dl_phdr_info, dlpi_subs) +
		   sizeof(info->dlpi_subs))
		return 1;	/* too old a loader: g stays 0, never cached */
	g[0] = info->dlpi_adds;
	g[1] = info->dlpi_subs;
	return 1;
}

int ls_heapmodel_maps_known(void)
{
	unsigned long long g[2] = { 0, 0 };
	struct walk w;

	if (!model.own_maps)
		return 0;
	/* Another thread in the loader: what the last walk found. */
	if (ls_dl_iterate(generation, g) < 0)
		return __atomic_load_n(&last.adds, __ATOMIC_ACQUIRE) ?
		       last.known : 0;
	if (g[0] && g[0] == __atomic_load_n(&last.adds, __ATOMIC_ACQUIRE) &&
	    g[1] == last.subs)
		return last.known;
	__atomic_store_n(&last.adds, 0, __ATOMIC_RELEASE);
	walk(&w, model.bypass);
	last.known = !w.bypassed;
	last.subs = g[1];
	__atomic_store_n(&last.adds, g[0], __ATOMIC_RELEASE);
	return !w.bypassed;
}
