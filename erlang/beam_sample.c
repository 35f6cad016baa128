/*
 * beam_sample.c - what `leakscope beam` asks the node each interval
 * (beam.h), with read-only calls only.
 *
 * Lists are fetched in one call each and walked with an export fun
 * (lists:zipwith(fun erlang:process_info/2, Pids, Items),
 * lists:map(fun ets:info/1, Tabs)): no code is loaded on the node, no
 * process of ours runs there beyond what rpc itself starts, and no atom
 * is created (every atom sent is one the node has already).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "beam_int.h"
#include "redact.h"
#include "../lib/client.h"
#include "../lib/symbolize.h"

#define ERRLEN 512

/* Figures asked of every process, in this order. */
static const char *const pinfo_items[] = {
	"registered_name", "initial_call", "current_function", "memory",
	"message_queue_len", "binary", "reductions", "monitors",
	"monitored_by", "links",
};

static const char *const sysinfo_items[] = {
	"process_count", "process_limit", "port_count", "port_limit",
	"atom_count", "atom_limit", "ets_count", "ets_limit",
};

static void drop_samples(struct beam_data *d);

struct sampler {
	struct ls_cnode *c;
	struct beam_data *d;
	unsigned i;		/* current sample */
	char *allocs;		/* encoded [{allocator_sizes, A}, ...] */
	int allocs_len;
	char (*alloc_names)[64];	/* A, in that order */
	size_t nallocs;
	char *err;
	size_t errlen;
};

static int oom(struct sampler *s)
{
	snprintf(s->err, s->errlen, "out of memory");
	return -ENOMEM;
}

static int64_t *series_new(unsigned n)
{
	return calloc(n ? n : 1, sizeof(int64_t));
}

/* rpc with args built by the caller (a list, no version byte). */
static int call(struct sampler *s, const char *mod, const char *fun,
		ei_x_buff *args, struct ls_term_tree *out)
{
	return ls_cnode_rpc(s->c, mod, fun, args, out, s->err, s->errlen);
}

static int call0(struct sampler *s, const char *mod, const char *fun,
		 struct ls_term_tree *out)
{
	ei_x_buff a;
	int r;

	if (ls_cnode_args_none(&a))
		return oom(s);
	r = call(s, mod, fun, &a, out);
	ei_x_free(&a);
	return r;
}

/* erlang:system_info(Item) for an atom item. */
static int sysinfo(struct sampler *s, const char *item,
		   struct ls_term_tree *out)
{
	ei_x_buff a;
	int r;

	if (ei_x_new(&a) || ei_x_encode_list_header(&a, 1) ||
	    ei_x_encode_atom(&a, item) || ei_x_encode_empty_list(&a)) {
		ei_x_free(&a);
		return oom(s);
	}
	r = call(s, "erlang", "system_info", &a, out);
	ei_x_free(&a);
	return r;
}

/* lists:map(fun M:F/1, List) where list is an encoded list. */
static int map_over(struct sampler *s, const char *m, const char *f,
		    const char *list, int len, struct ls_term_tree *out)
{
	ei_x_buff a;
	int r;

	if (ei_x_new(&a) || ei_x_encode_list_header(&a, 2) ||
	    ls_cnode_encode_fun(&a, m, f, 1) || ei_x_append_buf(&a, list, len) ||
	    ei_x_encode_empty_list(&a)) {
		ei_x_free(&a);
		return oom(s);
	}
	r = call(s, "lists", "map", &a, out);
	ei_x_free(&a);
	return r;
}

/* --- scalars ---------------------------------------------------------- */

static struct beam_scalar *scalar(struct sampler *s, const char *name,
				  const char *kind, int bytes)
{
	struct beam_data *d = s->d;
	struct beam_scalar *x;
	size_t i;

	for (i = 0; i < d->nscalars; i++)
		if (!strcmp(d->scalars[i].name, name))
			return &d->scalars[i];
	if (d->nscalars == d->scalars_cap) {
		size_t cap = d->scalars_cap ? 2 * d->scalars_cap : 64;
		void *p = realloc(d->scalars, cap * sizeof(*d->scalars));

		if (!p)
			return NULL;
		d->scalars = p;
		d->scalars_cap = cap;
	}
	x = &d->scalars[d->nscalars];
	memset(x, 0, sizeof(*x));
	snprintf(x->name, sizeof(x->name), "%s", name);
	x->kind = kind;
	x->bytes = bytes;
	x->v = series_new(d->count);
	x->seen = calloc(d->count, 1);
	if (!x->v || !x->seen) {
		free(x->v);
		free(x->seen);
		return NULL;
	}
	d->nscalars++;
	return x;
}

static int put_scalar(struct sampler *s, const char *name, const char *kind,
		      int bytes, int64_t v, int64_t limit)
{
	struct beam_scalar *x = scalar(s, name, kind, bytes);

	if (!x)
		return oom(s);
	x->v[s->i] = v;
	x->seen[s->i] = 1;
	if (limit)
		x->limit = limit;
	return 0;
}

static int sample_counts(struct sampler *s)
{
	static const char *const kinds[] = { "process_count", "port_count",
					     "atom_count", "ets_count" };
	struct ls_term_tree t;
	ei_x_buff list;
	size_t k;
	int r;

	if (ei_x_new(&list) ||
	    ei_x_encode_list_header(&list, (long)(sizeof(sysinfo_items) /
						  sizeof(sysinfo_items[0]))))
		goto nomem;
	for (k = 0; k < sizeof(sysinfo_items) / sizeof(sysinfo_items[0]); k++)
		if (ei_x_encode_atom(&list, sysinfo_items[k]))
			goto nomem;
	if (ei_x_encode_empty_list(&list))
		goto nomem;
	r = map_over(s, "erlang", "system_info", list.buff, list.index, &t);
	ei_x_free(&list);
	if (r)
		return r;
	for (k = 0; k < 4 && !r; k++) {
		const struct ls_term *v = ls_term_at(t.root, 2 * k),
				     *lim = ls_term_at(t.root, 2 * k + 1);

		if (v && v->type == LS_TERM_INT)
			r = put_scalar(s, kinds[k], kinds[k], 0, v->i,
				       ls_term_int(lim, 0));
	}
	ls_term_free(&t);
	return r;
nomem:
	ei_x_free(&list);
	return oom(s);
}

static int sample_memory(struct sampler *s)
{
	struct ls_term_tree t;
	char name[96];
	size_t k;
	int r;

	r = call0(s, "erlang", "memory", &t);
	for (k = 0; !r && t.root->type == LS_TERM_LIST && k < t.root->n; k++) {
		const struct ls_term *e = &t.root->kids[k];
		const struct ls_term *key = ls_term_at(e, 0),
				     *v = ls_term_at(e, 1);

		if (!key || key->type != LS_TERM_ATOM || !v ||
		    v->type != LS_TERM_INT)
			continue;
		snprintf(name, sizeof(name), "memory.%s", key->s);
		r = put_scalar(s, name, "memory", 1, v->i, 0);
	}
	if (!r)
		ls_term_free(&t);
	return r;
}

/* Sum of the current value (element 1) of `key` tuples in one carrier
 * section, and of its blocks' sizes. */
static void alloc_section(const struct ls_term *sec, int64_t *allocated,
			  int64_t *used)
{
	const struct ls_term *blocks = ls_term_val(sec, "blocks"), *b;
	size_t k;

	*allocated += ls_term_int(ls_term_at(ls_term_key(sec, "carriers_size"),
					     1), 0);
	/* OTP < 22: {blocks_size, Cur, ...} in the section itself */
	b = ls_term_key(sec, "blocks_size");
	if (b) {
		*used += ls_term_int(ls_term_at(b, 1), 0);
		return;
	}
	for (k = 0; blocks && blocks->type == LS_TERM_LIST && k < blocks->n; k++)
		*used += ls_term_int(ls_term_at(ls_term_key(
			ls_term_at(&blocks->kids[k], 1), "size"), 1), 0);
}

static int sample_allocators(struct sampler *s, int64_t *total)
{
	static const char *const sections[] = { "mbcs", "mbcs_pool", "sbcs" };
	struct ls_term_tree t;
	const struct ls_term *names;
	char name[96];
	size_t k, i, j;
	int r;

	*total = 0;
	if (!s->allocs)
		return 0;
	r = map_over(s, "erlang", "system_info", s->allocs, s->allocs_len, &t);
	if (r)
		return r;
	names = t.root;
	for (k = 0; !r && k < names->n; k++) {
		const struct ls_term *insts = ls_term_at(names, k);
		int64_t allocated = 0, used = 0;

		for (i = 0; insts && insts->type == LS_TERM_LIST && i < insts->n; i++) {
			const struct ls_term *props = ls_term_at(&insts->kids[i], 2);

			for (j = 0; j < 3; j++)
				alloc_section(ls_term_val(props, sections[j]),
					      &allocated, &used);
		}
		if (!insts || insts->type != LS_TERM_LIST)
			continue;
		*total += allocated;
		if (k >= s->nallocs)
			break;
		snprintf(name, sizeof(name), "alloc.%s.allocated",
			 s->alloc_names[k]);
		r = put_scalar(s, name, "allocator", 1, allocated, 0);
		if (!r) {
			snprintf(name, sizeof(name), "alloc.%s.used",
				 s->alloc_names[k]);
			r = put_scalar(s, name, "allocator_used", 1, used, 0);
		}
	}
	ls_term_free(&t);
	return r;
}

static int64_t rss_bytes(long pid)
{
	char path[64];
	long long size, res;
	FILE *fp;
	int ok;

	snprintf(path, sizeof(path), "/proc/%ld/statm", pid);
	fp = fopen(path, "re");
	if (!fp)
		return -1;
	ok = fscanf(fp, "%lld %lld", &size, &res) == 2;
	fclose(fp);
	return ok ? (int64_t)res * sysconf(_SC_PAGESIZE) : -1;
}

/* --- processes ------------------------------------------------------- */

static struct beam_proc *proc_get(struct sampler *s, unsigned num,
				  unsigned serial)
{
	struct beam_data *d = s->d;
	size_t h = (num * 2654435761u ^ serial) % PHASH;
	struct beam_proc *p;
	int k;

	for (p = d->phash[h]; p; p = p->next)
		if (p->num == num && p->serial == serial)
			return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->num = num;
	p->serial = serial;
	p->seen = calloc(d->count, 1);
	for (k = 0; k < PM_N; k++)
		p->v[k] = series_new(d->count);
	for (k = 0; k < PM_N && p->seen; k++)
		if (!p->v[k])
			break;
	if (!p->seen || k < PM_N) {
		for (k = 0; k < PM_N; k++)
			free(p->v[k]);
		free(p->seen);
		free(p);
		return NULL;
	}
	p->next = d->phash[h];
	d->phash[h] = p;
	d->nprocs++;
	return p;
}

static int64_t list_len(const struct ls_term *t)
{
	return t && t->type == LS_TERM_LIST ? (int64_t)t->n : 0;
}

static int64_t binary_bytes(const struct ls_term *bins)
{
	int64_t sum = 0;
	size_t k;

	for (k = 0; bins && bins->type == LS_TERM_LIST && k < bins->n; k++)
		sum += ls_term_int(ls_term_at(&bins->kids[k], 1), 0);
	return sum;
}

/* The group a process is counted in: its initial call, or where it sits
 * when it was spawned from a fun through erlang:apply/2. */
static const char *group_key(const struct beam_proc *p)
{
	if (!strcmp(p->init, "erlang:apply/2") || !p->init[0])
		return p->current;
	return p->init;
}

/* One more of key in this sample. */
static int group_add(struct sampler *s, struct beam_groups *gs,
		     const char *key)
{
	struct beam_group *g = NULL;
	size_t i;

	for (i = 0; i < gs->n; i++)
		if (!strcmp(gs->g[i].key, key)) {
			g = &gs->g[i];
			break;
		}
	if (!g) {
		if (gs->n == gs->cap) {
			size_t cap = gs->cap ? 2 * gs->cap : 64;
			void *np = realloc(gs->g, cap * sizeof(*gs->g));

			if (!np)
				return oom(s);
			gs->g = np;
			gs->cap = cap;
		}
		g = &gs->g[gs->n];
		memset(g, 0, sizeof(*g));
		snprintf(g->key, sizeof(g->key), "%s", key);
		g->v = series_new(s->d->count);
		g->seen = calloc(s->d->count, 1);
		if (!g->v || !g->seen) {
			free(g->v);
			free(g->seen);
			return oom(s);
		}
		gs->n++;
	}
	g->v[s->i]++;
	g->seen[s->i] = 1;
	return 0;
}

#define PROC_LIB_INIT "proc_lib:init_p/5"

/* One process's figures into its record; *out is NULL when it exited
 * between the two calls. */
static int take_proc(struct sampler *s, const struct ls_term *pid,
		     const struct ls_term *info, struct beam_proc **out)
{
	struct beam_proc *p;
	const struct ls_term *name;
	unsigned i = s->i;

	*out = NULL;
	if (!pid || pid->type != LS_TERM_PID || !info ||
	    info->type != LS_TERM_LIST)
		return 0;
	p = proc_get(s, pid->num, pid->serial);
	if (!p)
		return oom(s);
	*out = p;
	name = ls_term_val(info, "registered_name");
	if (name && name->type == LS_TERM_ATOM)
		snprintf(p->name, sizeof(p->name), "%s", name->s);
	if (!p->resolved) {
		ls_term_show(ls_term_val(info, "initial_call"), p->init,
			     sizeof(p->init));
		p->resolved = strcmp(p->init, PROC_LIB_INIT) != 0;
	}
	ls_term_show(ls_term_val(info, "current_function"), p->current,
		     sizeof(p->current));
	p->seen[i] = 1;
	p->v[PM_MEMORY][i] = ls_term_int(ls_term_val(info, "memory"), 0);
	p->v[PM_MQ][i] = ls_term_int(ls_term_val(info, "message_queue_len"), 0);
	p->v[PM_BINARY][i] = binary_bytes(ls_term_val(info, "binary"));
	p->v[PM_REDUCTIONS][i] = ls_term_int(ls_term_val(info, "reductions"), 0);
	p->v[PM_MONITORS][i] = list_len(ls_term_val(info, "monitors"));
	p->v[PM_MONITORED_BY][i] = list_len(ls_term_val(info, "monitored_by"));
	p->v[PM_LINKS][i] = list_len(ls_term_val(info, "links"));
	return 0;
}

/*
 * lists:zipwith(fun erlang:process_info/2, Pids, [Items, Items, ...]) for
 * n pids of the list pids: those at idx[0..n), or from index first when
 * idx is NULL; each pid's encoding is copied from the answer it came in.
 */
static int pinfo_all(struct sampler *s, const struct ls_term_tree *pids,
		     const size_t *idx, size_t first, size_t n,
		     const char *const *items, size_t nitems,
		     struct ls_term_tree *out)
{
	ei_x_buff a, one;
	const char *raw;
	size_t k;
	int len, r = -ENOMEM;

	if (ei_x_new(&a) || ei_x_new(&one))
		goto out;
	if (ei_x_encode_list_header(&one, (long)nitems))
		goto out;
	for (k = 0; k < nitems; k++)
		if (ei_x_encode_atom(&one, items[k]))
			goto out;
	if (ei_x_encode_empty_list(&one) || ei_x_encode_list_header(&a, 3) ||
	    ls_cnode_encode_fun(&a, "erlang", "process_info", 2))
		goto out;
	if (n && ei_x_encode_list_header(&a, (long)n))
		goto out;
	for (k = 0; k < n; k++) {
		raw = ls_term_raw(pids, &pids->root->kids[idx ? idx[k] :
							   first + k], &len);
		if (ei_x_append_buf(&a, raw, len))
			goto out;
	}
	if (ei_x_encode_empty_list(&a) ||
	    (n && ei_x_encode_list_header(&a, (long)n)))
		goto out;
	for (k = 0; k < n; k++)
		if (ei_x_append_buf(&a, one.buff, one.index))
			goto out;
	if (ei_x_encode_empty_list(&a) || ei_x_encode_empty_list(&a))
		goto out;
	r = call(s, "lists", "zipwith", &a, out);
out:
	if (r == -ENOMEM)
		oom(s);
	ei_x_free(&a);
	ei_x_free(&one);
	return r;
}

/*
 * Processes are asked about PINFO_CHUNK at a time: the answer about each
 * is a proplist of ~40 terms, and 100,000 of them in one tree would hold
 * ~200 MB here; in chunks the peak is a few MB, for the same calls' work
 * on the node.
 */
#define PINFO_CHUNK 4096

/*
 * Every process started by proc_lib (each gen_server, supervisor...) has
 * the initial call proc_lib:init_p/5; the one that tells them apart is in
 * its dictionary ('$initial_call').  OTP 25 gives a process's dictionary
 * only whole, so it is asked once per such process, for the n of this
 * chunk (procs[k] is the record of pids->root->kids[first + k]).
 */
static int resolve_proc_lib(struct sampler *s, const struct ls_term_tree *pids,
			    size_t first, struct beam_proc **procs, size_t n)
{
	static const char *const items[] = { "dictionary" };
	struct ls_term_tree dicts;
	size_t *idx, *which, k, m = 0;
	int r = 0;

	idx = calloc(n ? n : 1, sizeof(*idx));
	which = calloc(n ? n : 1, sizeof(*which));
	if (!idx || !which) {
		r = oom(s);
		goto out;
	}
	for (k = 0; k < n; k++)
		if (procs[k] && !procs[k]->resolved) {
			idx[m] = first + k;
			which[m++] = k;
		}
	if (!m || (r = pinfo_all(s, pids, idx, 0, m, items, 1, &dicts)))
		goto out;
	for (k = 0; k < m; k++) {
		struct beam_proc *p = procs[which[k]];
		const struct ls_term *ic = ls_term_val(ls_term_val(
			ls_term_at(dicts.root, k), "dictionary"), "$initial_call");

		if (ic && ic->type == LS_TERM_TUPLE)
			ls_term_show(ic, p->init, sizeof(p->init));
		p->resolved = 1;
	}
	ls_term_free(&dicts);
out:
	free(idx);
	free(which);
	return r;
}

/*
 * Processes are asked about PINFO_CHUNK at a time: the answer about each
 * is a proplist of ~40 terms, and 100,000 of them in one tree would hold
 * ~200 MB here; in chunks the peak is a few MB, for the same calls' work
 * on the node.
 */
#define PINFO_CHUNK 4096

static int sample_chunk(struct sampler *s, const struct ls_term_tree *pids,
			size_t first, size_t n, struct beam_proc **procs)
{
	struct ls_term_tree infos;
	size_t k;
	int r;

	r = pinfo_all(s, pids, NULL, first, n, pinfo_items,
		      sizeof(pinfo_items) / sizeof(pinfo_items[0]), &infos);
	for (k = 0; !r && k < n; k++)
		r = take_proc(s, &pids->root->kids[first + k],
			      ls_term_at(infos.root, k), &procs[k]);
	if (r)
		return r;
	ls_term_free(&infos);
	r = resolve_proc_lib(s, pids, first, procs, n);
	for (k = 0; !r && k < n; k++)
		if (procs[k])
			r = group_add(s, &s->d->procs_by_init,
				      group_key(procs[k]));
	return r;
}

static int sample_procs(struct sampler *s)
{
	struct beam_proc **procs = NULL;
	struct ls_term_tree pids;
	size_t first, n;
	int r;

	r = call0(s, "erlang", "processes", &pids);
	if (r)
		return r;
	if (pids.root->type != LS_TERM_LIST) {
		ls_term_free(&pids);
		snprintf(s->err, s->errlen, "node '%s': erlang:processes() "
			 "answered something else than a list", s->d->node);
		return -EPROTO;
	}
	procs = calloc(PINFO_CHUNK, sizeof(*procs));
	if (!procs)
		r = oom(s);
	for (first = 0; !r && first < pids.root->n; first += n) {
		n = pids.root->n - first;
		if (n > PINFO_CHUNK)
			n = PINFO_CHUNK;
		r = sample_chunk(s, &pids, first, n, procs);
	}
	free(procs);
	ls_term_free(&pids);
	return r;
}

/* --- ETS -------------------------------------------------------------- */

static struct beam_tab *tab_get(struct sampler *s, const char *id, int len)
{
	struct beam_data *d = s->d;
	struct beam_tab *t;
	size_t i;

	if (len > (int)sizeof(t->id))
		len = sizeof(t->id);
	for (i = 0; i < d->ntabs; i++)
		if (d->tabs[i].idlen == len && !memcmp(d->tabs[i].id, id, len))
			return &d->tabs[i];
	if (d->ntabs == d->tabs_cap) {
		size_t cap = d->tabs_cap ? 2 * d->tabs_cap : 64;
		void *p = realloc(d->tabs, cap * sizeof(*d->tabs));

		if (!p)
			return NULL;
		d->tabs = p;
		d->tabs_cap = cap;
	}
	t = &d->tabs[d->ntabs];
	memset(t, 0, sizeof(*t));
	memcpy(t->id, id, (size_t)len);
	t->idlen = len;
	t->memory = series_new(d->count);
	t->size = series_new(d->count);
	t->seen = calloc(d->count, 1);
	if (!t->memory || !t->size || !t->seen) {
		free(t->memory);
		free(t->size);
		free(t->seen);
		return NULL;
	}
	d->ntabs++;
	return t;
}

static int sample_ets(struct sampler *s)
{
	struct ls_term_tree tabs, infos;
	const char *raw;
	size_t k;
	int len, r;

	r = call0(s, "ets", "all", &tabs);
	if (r)
		return r;
	raw = ls_term_raw(&tabs, tabs.root, &len);
	r = map_over(s, "ets", "info", raw, len, &infos);
	if (r)
		goto out;
	for (k = 0; !r && infos.root->type == LS_TERM_LIST && k < infos.root->n; k++) {
		const struct ls_term *info = &infos.root->kids[k];
		const struct ls_term *id = ls_term_val(info, "id"),
				     *name = ls_term_val(info, "name");
		struct beam_tab *t;
		const char *idraw;
		int idlen;

		if (info->type != LS_TERM_LIST)
			continue;	/* deleted meanwhile */
		if (!id)
			id = name;
		if (!id)
			continue;
		idraw = ls_term_raw(&infos, id, &idlen);
		t = tab_get(s, idraw, idlen);
		if (!t) {
			r = oom(s);
			break;
		}
		ls_term_show(name, t->name, sizeof(t->name));
		ls_term_show(ls_term_val(info, "owner"), t->owner,
			     sizeof(t->owner));
		t->memory[s->i] = ls_term_int(ls_term_val(info, "memory"), 0) *
				  s->d->wordsize;
		t->size[s->i] = ls_term_int(ls_term_val(info, "size"), 0);
		t->seen[s->i] = 1;
		r = group_add(s, &s->d->tabs_by_name, t->name);
	}
	ls_term_free(&infos);
out:
	ls_term_free(&tabs);
	return r;
}

/* --- one sample, the whole run ---------------------------------------- */

static int sample_one(struct sampler *s)
{
	int64_t total, rss = -1;
	int r;

	r = sample_counts(s);
	if (!r)
		r = sample_memory(s);
	if (!r)
		r = sample_allocators(s, &total);
	/* RSS right after the allocators: the two are subtracted. */
	if (!r && s->d->rss_local)
		rss = rss_bytes(s->d->os_pid);
	if (!r)
		r = sample_procs(s);
	if (!r)
		r = sample_ets(s);
	if (r || rss < 0)
		return r;
	r = put_scalar(s, "rss", "rss", 1, rss, 0);
	if (!r && s->allocs)
		r = put_scalar(s, "native", "native", 1, rss - total, 0);
	return r;
}

/* The allocators to ask about, encoded once as [{allocator_sizes, A}]. */
static int setup_allocators(struct sampler *s)
{
	struct ls_term_tree t;
	ei_x_buff x;
	size_t k, n = 0;
	int r;

	r = sysinfo(s, "alloc_util_allocators", &t);
	if (r)
		return r;
	if (t.root->type != LS_TERM_LIST || !t.root->n)
		goto done;	/* another release's shape: no allocator figures */
	s->alloc_names = calloc(t.root->n, sizeof(*s->alloc_names));
	if (!s->alloc_names || ei_x_new(&x)) {
		ls_term_free(&t);
		return oom(s);
	}
	for (k = 0; k < t.root->n; k++)
		n += t.root->kids[k].type == LS_TERM_ATOM;
	r = ei_x_encode_list_header(&x, (long)n);
	for (k = 0; !r && k < t.root->n; k++) {
		const struct ls_term *a = &t.root->kids[k];

		if (a->type != LS_TERM_ATOM)
			continue;
		snprintf(s->alloc_names[s->nallocs++], 64, "%s", a->s);
		r = ei_x_encode_tuple_header(&x, 2) ||
		    ei_x_encode_atom(&x, "allocator_sizes") ||
		    ei_x_encode_atom(&x, a->s);
	}
	if (r || ei_x_encode_empty_list(&x)) {
		ei_x_free(&x);
		ls_term_free(&t);
		return oom(s);
	}
	s->allocs = x.buff;	/* owned from here on */
	s->allocs_len = x.index;
done:
	ls_term_free(&t);
	return 0;
}

/* Does the node's host part name this machine? */
static int host_is_local(const char *node)
{
	const char *at = strchr(node, '@');
	char here[256] = "";
	size_t n;

	if (!at)
		return 0;
	at++;
	if (!strcmp(at, "localhost") || !strncmp(at, "127.", 4) ||
	    !strcmp(at, "::1"))
		return 1;
	if (gethostname(here, sizeof(here) - 1))
		return 0;
	n = strcspn(here, ".");
	return !strcmp(at, here) || (strlen(at) == n && !strncmp(at, here, n)) ||
	       (!strncmp(at, here, n) && at[n] == '.');
}

/*
 * Is the node this host's process pid, a BEAM?  Then its RSS and its agent
 * are ours to read.  The host is checked too: a pid from another machine
 * (or another pid namespace) may exist here as something else.
 */
static int local_beam(const char *node, long pid)
{
	char path[64], exe[4096];
	ssize_t n;

	if (!host_is_local(node))
		return 0;
	snprintf(path, sizeof(path), "/proc/%ld/exe", pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0;
	exe[n] = 0;
	return !strncmp(ls_sym_basename(exe), "beam", 4);
}

static int setup(struct sampler *s)
{
	struct ls_term_tree t;
	int r, rel;

	r = sysinfo(s, "otp_release", &t);
	if (r)
		return r;
	snprintf(s->d->otp, sizeof(s->d->otp), "%s",
		 t.root->type == LS_TERM_STRING ? t.root->s : "?");
	ls_term_free(&t);
	rel = atoi(s->d->otp);
	if (rel < 23) {
		snprintf(s->err, s->errlen, "node '%s' runs OTP %s: leakscope "
			 "beam needs OTP 23 or later", s->d->node, s->d->otp);
		return -EPROTONOSUPPORT;
	}
	r = sysinfo(s, "wordsize", &t);
	if (r)
		return r;
	s->d->wordsize = ls_term_int(t.root, 8);
	ls_term_free(&t);
	r = call0(s, "os", "getpid", &t);
	if (r)
		return r;
	if (t.root->type == LS_TERM_STRING)
		s->d->os_pid = atol(t.root->s);
	ls_term_free(&t);
	s->d->rss_local = s->d->os_pid > 0 &&
			  local_beam(s->d->node, s->d->os_pid);
	return setup_allocators(s);
}

/* --- --gc-check: recon's bin_leak ----------------------------------------- */

static int count_bins(struct sampler *s, const struct ls_term_tree *pids,
		      struct ls_term_tree *out)
{
	static const char *const items[] = { "binary" };

	return pinfo_all(s, pids, NULL, 0, pids->root->type == LS_TERM_LIST ?
			 pids->root->n : 0, items, 1, out);
}

static int gc_check(struct sampler *s)
{
	struct ls_term_tree pids, before, after, done;
	ei_x_buff a;
	const char *raw;
	size_t k, n;
	int len, r;

	r = call0(s, "erlang", "processes", &pids);
	if (r)
		return r;
	r = count_bins(s, &pids, &before);
	if (r)
		goto out_pids;
	/* The one intrusive call: every process collects its garbage. */
	raw = ls_term_raw(&pids, pids.root, &len);
	if (ei_x_new(&a) || ei_x_encode_list_header(&a, 2) ||
	    ls_cnode_encode_fun(&a, "erlang", "garbage_collect", 1) ||
	    ei_x_append_buf(&a, raw, len) || ei_x_encode_empty_list(&a)) {
		ei_x_free(&a);
		r = oom(s);
		goto out_before;
	}
	r = call(s, "lists", "foreach", &a, &done);
	ei_x_free(&a);
	if (r)
		goto out_before;
	ls_term_free(&done);
	r = count_bins(s, &pids, &after);
	if (r)
		goto out_before;
	n = pids.root->type == LS_TERM_LIST ? pids.root->n : 0;
	s->d->gc = calloc(n ? n : 1, sizeof(*s->d->gc));
	if (!s->d->gc) {
		r = oom(s);
		goto out_after;
	}
	for (k = 0; k < n; k++) {
		const struct ls_term *pid = &pids.root->kids[k];
		const struct ls_term *b = ls_term_val(ls_term_at(before.root, k),
						      "binary");
		const struct ls_term *a2 = ls_term_val(ls_term_at(after.root, k),
						       "binary");
		struct beam_gc *g = &s->d->gc[s->d->ngc];
		struct beam_proc *p;

		if (pid->type != LS_TERM_PID || !b || !a2)
			continue;
		g->num = pid->num;
		g->serial = pid->serial;
		g->bins_before = list_len(b);
		g->bins_after = list_len(a2);
		g->bytes_before = binary_bytes(b);
		g->bytes_after = binary_bytes(a2);
		p = proc_get(s, pid->num, pid->serial);
		snprintf(g->label, sizeof(g->label), "<0.%u.%u> %s", pid->num,
			 pid->serial, p ? (p->name[0] ? p->name : group_key(p)) :
			 "");
		s->d->ngc++;
	}
	s->d->gc_done = 1;
out_after:
	ls_term_free(&after);
out_before:
	ls_term_free(&before);
out_pids:
	ls_term_free(&pids);
	return r;
}

/* The agent's snapshot of the node's process, when it runs one. */
static void native_sites(struct beam_data *d)
{
	char err[ERRLEN];

	if (!d->rss_local) {
		snprintf(d->native_why, sizeof(d->native_why), "the node is "
			 "not on this host: its process is out of reach");
		return;
	}
	if (ls_client_snapshot((pid_t)d->os_pid, 0, &d->native, err,
			       sizeof(err))) {
		snprintf(d->native_why, sizeof(d->native_why), "%s", err);
		return;
	}
	ls_redact_cookie(&d->native);
	d->has_native = 1;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Wait, answering ticks, until the monotonic time `at` (ms). */
static int idle_until(struct sampler *s, uint64_t at)
{
	uint64_t now = mono_ms();

	if (at > now && ls_cnode_idle(s->c, (unsigned)(at - now))) {
		snprintf(s->err, s->errlen, "node '%s': connection lost",
			 s->d->node);
		return -EPIPE;
	}
	return 0;
}

/*
 * Samples start on a fixed schedule, one interval apart, whatever each
 * took (the trends' rates divide by the spacing); when a sample takes
 * longer than the interval the next starts at once, and the spacing the
 * trends use is the mean one actually measured.
 */
static int ls_beam_sample_all(struct ls_cnode *c, const struct ls_beam_opts *o,
		       struct beam_data *d, char *err, size_t errlen)
{
	struct sampler s = { .c = c, .d = d, .err = err, .errlen = errlen };
	uint64_t ms = (uint64_t)(o->interval_s * 1000 + 0.5), start = 0, last = 0;
	int r;

	d->phash = calloc(PHASH, sizeof(*d->phash));
	if (!d->phash)
		return oom(&s);
	r = setup(&s);
	/*
	 * A warm-up sample, dropped: the first calls may make the node load
	 * a module or create atoms for them (rpc's own machinery), a step
	 * in the first sample that the trends would take for the node's.
	 */
	if (!r)
		r = sample_one(&s);
	drop_samples(d);
	if (!r)
		r = idle_until(&s, mono_ms() + ms);
	for (s.i = 0; !r && s.i < d->count; s.i++) {
		if (s.i && (r = idle_until(&s, start + s.i * ms)))
			break;
		last = mono_ms();
		if (!s.i)
			start = last;
		r = sample_one(&s);
		if (!r)
			d->taken = s.i + 1;
	}
	if (!r && d->taken > 1 && last > start)
		d->period_s = (double)(last - start) / 1000.0 /
			      (double)(d->taken - 1);
	if (!r && o->gc_check)
		r = gc_check(&s);
	if (!r)
		native_sites(d);
	free(s.allocs);
	free(s.alloc_names);
	return r;
}

static void groups_drop(struct beam_groups *gs)
{
	size_t i;

	for (i = 0; i < gs->n; i++) {
		free(gs->g[i].v);
		free(gs->g[i].seen);
	}
	gs->n = 0;
}

/* Drop the samples, keep what setup() learnt about the node. */
static void drop_samples(struct beam_data *d)
{
	size_t i;
	int k;

	for (i = 0; d->phash && i < PHASH; i++) {
		struct beam_proc *p = d->phash[i], *next;

		for (; p; p = next) {
			next = p->next;
			for (k = 0; k < PM_N; k++)
				free(p->v[k]);
			free(p->seen);
			free(p);
		}
		d->phash[i] = NULL;
	}
	d->nprocs = 0;
	for (i = 0; i < d->ntabs; i++) {
		free(d->tabs[i].memory);
		free(d->tabs[i].size);
		free(d->tabs[i].seen);
	}
	d->ntabs = 0;
	for (i = 0; i < d->nscalars; i++) {
		free(d->scalars[i].v);
		free(d->scalars[i].seen);
	}
	d->nscalars = 0;
	groups_drop(&d->procs_by_init);
	groups_drop(&d->tabs_by_name);
	d->taken = 0;
}

void ls_beam_data_free(struct beam_data *d)
{
	drop_samples(d);
	free(d->phash);
	free(d->tabs);
	free(d->scalars);
	free(d->procs_by_init.g);
	free(d->tabs_by_name.g);
	free(d->gc);
	if (d->has_native)
		ls_snapshot_release(&d->native);
	memset(d, 0, sizeof(*d));
}

int ls_beam_run(const struct ls_beam_opts *o, FILE *out, char *err,
		size_t errlen)
{
	struct beam_data d = { 0 };
	struct ls_cnode c;
	char *buf = NULL;
	size_t len = 0;
	FILE *mem;
	int r;

	r = ls_cnode_connect(&c, o->node, o->cookie, o->port, o->timeout_ms,
			     err, errlen);
	if (r)
		return r;
	d.count = o->count;
	d.interval_s = o->interval_s;
	d.period_s = o->interval_s;
	snprintf(d.node, sizeof(d.node), "%s", c.node);
	r = ls_beam_sample_all(&c, o, &d, err, errlen);
	ls_cnode_close(&c);
	if (r)
		goto out;
	/* Whole or nothing: rendered in memory first. */
	mem = open_memstream(&buf, &len);
	if (!mem) {
		r = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	r = ls_beam_report(mem, &d, o);
	if (fclose(mem) && !r)
		r = -ENOMEM;
	if (r) {
		snprintf(err, errlen, "cannot build the report: %s",
			 strerror(-r));
		goto out;
	}
	if (fwrite(buf, 1, len, out) != len || fflush(out)) {
		r = -EIO;
		snprintf(err, errlen, "cannot write the report: %s",
			 strerror(errno));
	}
out:
	free(buf);
	ls_beam_data_free(&d);
	return r;
}
