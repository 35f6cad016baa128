/*
 * leakscope_nif.c - the NIF behind the Erlang module `leakscope` (and the
 * Elixir module `Leakscope`): the agent's view of the VM's own process,
 * from its shell.
 *
 * How it reaches the agent.  The NIF is never linked to the agent and does
 * not call into it: it asks the agent's control socket of its own process
 * (getpid(), lib/client.c), the same versioned protocol `leakscope report
 * PID` uses (docs/CONTROL-PROTOCOL.md), and reads the reply with the same
 * validating parser (lib/snapshot.c).  Why not dlsym(RTLD_DEFAULT) into the
 * agent: the agent exports only the interposed allocator functions
 * (common/interpose.def), so a C API would be a second, unversioned contract
 * whose struct layouts a NIF built from another release could misread
 * inside the VM; over the socket, a mismatch is a refused or malformed
 * reply, i.e. an {error, ...}, never a crash.  The snapshot is serialized
 * by the agent's control thread with its recursion guard held, so asking
 * adds nothing to what is tracked; the NIF's own work (parsing,
 * symbolizing, rendering) runs on a dirty I/O scheduler and frees all it
 * allocates before returning.
 *
 * Every call runs on a dirty I/O scheduler (it waits on the socket, then
 * symbolizes with libdw): a normal scheduler is never held.  Every argument
 * is checked; a wrong type raises badarg, a failure returns {error, Why}.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <erl_nif.h>
#include "../common/contract.h"
#include "../lib/client.h"
#include "../lib/render.h"
#include "../lib/report.h"
#include "../lib/ropt.h"
#include "../lib/symbolize.h"
#include "redact.h"

#define ERR_MAX 512
/* olds/1,2: at most this many blocks in one answer. */
#define OLDS_MAX 100000

static ERL_NIF_TERM atom_ok, atom_error, atom_undefined, atom_true,
	atom_false, atom_no_agent, atom_no_control;

/* Only for the NIF's own fixed names: atoms are never collected. */
static ERL_NIF_TERM mk_atom(ErlNifEnv *env, const char *name)
{
	return enif_make_atom(env, name);
}

/* A binary copy of s, or 'undefined' for NULL. */
static ERL_NIF_TERM mk_str(ErlNifEnv *env, const char *s)
{
	ERL_NIF_TERM t;
	size_t n;
	unsigned char *p;

	if (!s)
		return atom_undefined;
	n = strlen(s);
	p = enif_make_new_binary(env, n, &t);
	if (!p)
		return atom_undefined;
	memcpy(p, s, n);
	return t;
}

static ERL_NIF_TERM mk_error(ErlNifEnv *env, ERL_NIF_TERM why)
{
	return enif_make_tuple2(env, atom_error, why);
}

/* {error, {Tag, <<"reason">>}} */
static ERL_NIF_TERM mk_error_msg(ErlNifEnv *env, const char *tag,
				 const char *msg)
{
	return mk_error(env, enif_make_tuple2(env, mk_atom(env, tag),
					      mk_str(env, msg)));
}

/*
 * Is the agent loaded in this process?  Its malloc is the one the dynamic
 * linker resolves first.  Only used to tell "no agent" from "an agent
 * without its control thread" (LEAKSCOPE_CONTROL=0).
 */
static int agent_loaded(void)
{
	void *sym = dlsym(RTLD_DEFAULT, "malloc");
	Dl_info info;

	if (!sym || !dladdr(sym, &info) || !info.dli_fname)
		return 0;
	return !strncmp(ls_sym_basename(info.dli_fname), "libleakscope", 12);
}

/* The error term for a failed request to the agent. */
static ERL_NIF_TERM agent_error(ErlNifEnv *env, int r, const char *err)
{
	if (r == -ENOENT || r == -ECONNREFUSED)
		return mk_error(env, agent_loaded() ? atom_no_control :
				atom_no_agent);
	return mk_error_msg(env, "agent", err);
}

/* A snapshot of this process from its agent; on failure *errt is set. */
static int fetch(ErlNifEnv *env, int blocks, struct ls_snapshot *snap,
		 ERL_NIF_TERM *errt)
{
	char err[ERR_MAX];
	int r;

	r = ls_client_snapshot(getpid(), blocks, snap, err, sizeof(err));
	if (r)
		*errt = agent_error(env, r, err);
	else
		ls_redact_cookie(snap);
	return r;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* [{Module, Function, File, Line}], innermost first; 'undefined' for what
 * is unknown.  Function demangled, or as the symbol table spells it. */
static ERL_NIF_TERM mk_stack(ErlNifEnv *env, struct ls_symbolizer *sym,
			     const struct ls_site *site, struct ls_stack *st,
			     int demangle)
{
	ERL_NIF_TERM list = enif_make_list(env, 0);
	size_t i;

	if (ls_stack_build(sym, site, st))
		return list;
	for (i = st->n; i-- > 0;) {
		const struct ls_symframe *f = &st->f[i];
		ERL_NIF_TERM fr = enif_make_tuple4(env, mk_str(env, f->module),
			mk_str(env, demangle || !f->symbol ? f->function :
			       f->symbol), mk_str(env, f->file),
			f->file && f->line > 0 ? enif_make_int(env, f->line) :
			atom_undefined);

		list = enif_make_list_cell(env, fr, list);
	}
	return list;
}

static int by_birth(const void *a, const void *b)
{
	const struct ls_block *x = a, *y = b;

	return x->birth_ns < y->birth_ns ? -1 : x->birth_ns > y->birth_ns ? 1 :
	       x->addr < y->addr ? -1 : x->addr > y->addr;
}

/*
 * olds(N[, Demangle]) -> [{AgeSeconds, Size, Addr, Ns, Stack}]: the N
 * oldest live blocks, oldest first, as mtrace's olds; Ns is the time spent
 * symbolizing that block's stack.
 */
static ERL_NIF_TERM olds(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct ls_symbolizer *sym = NULL;
	struct ls_stack st = { 0 };
	struct ls_snapshot snap;
	ERL_NIF_TERM ret, *items = NULL;
	unsigned long n;
	int demangle = 0;
	size_t i, k;

	if (!enif_get_ulong(env, argv[0], &n))
		return enif_make_badarg(env);
	if (argc > 1) {
		if (enif_is_identical(argv[1], atom_true))
			demangle = 1;
		else if (!enif_is_identical(argv[1], atom_false))
			return enif_make_badarg(env);
	}
	if (n > OLDS_MAX)
		n = OLDS_MAX;
	if (fetch(env, 1, &snap, &ret))
		return ret;
	qsort(snap.blocks, snap.nblocks, sizeof(*snap.blocks), by_birth);
	k = n < snap.nblocks ? n : snap.nblocks;
	sym = ls_symbolizer_new(&snap);
	items = k ? calloc(k, sizeof(*items)) : NULL;
	if (!sym || (k && !items)) {
		ret = mk_error(env, mk_atom(env, "enomem"));
		goto out;
	}
	for (i = 0; i < k; i++) {
		const struct ls_block *b = &snap.blocks[i];
		const struct ls_site *site = ls_snapshot_site(&snap, b->site);
		uint64_t t0 = now_ns(), age = ls_block_age_ns(&snap, b);
		ERL_NIF_TERM stack = site ? mk_stack(env, sym, site, &st,
						     demangle) :
			enif_make_list(env, 0);

		items[i] = enif_make_tuple5(env,
			enif_make_uint64(env, age / 1000000000u),
			enif_make_uint64(env, b->size),
			enif_make_uint64(env, b->addr),
			enif_make_uint64(env, now_ns() - t0), stack);
	}
	ret = enif_make_list_from_array(env, items, (unsigned)k);
out:
	free(items);
	ls_stack_release(&st);
	ls_symbolizer_free(sym);
	ls_snapshot_release(&snap);
	return ret;
}

static ERL_NIF_TERM olds1(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	return olds(env, argc, argv);
}

static void put(ErlNifEnv *env, ERL_NIF_TERM *map, const char *key,
		ERL_NIF_TERM v)
{
	enif_make_map_put(env, *map, mk_atom(env, key), v, map);
}

static void put_u64(ErlNifEnv *env, ERL_NIF_TERM *map, const char *key,
		    uint64_t v)
{
	put(env, map, key, enif_make_uint64(env, v));
}

static ERL_NIF_TERM calls_map(ErlNifEnv *env, const struct ls_snapshot *s)
{
	ERL_NIF_TERM m = enif_make_new_map(env);
	size_t i;

	/* Call names are the agent's fixed set ("malloc", "free", ...),
	 * NUL-terminated by the parser: a bounded number of atoms. */
	for (i = 0; i < s->ncalls; i++)
		if (s->calls[i].name[0])
			put_u64(env, &m, s->calls[i].name, s->calls[i].count);
	return m;
}

static ERL_NIF_TERM mallinfo_map(ErlNifEnv *env, const struct ls_snapshot *s)
{
	const struct lsnap_mallinfo *mi = &s->mallinfo;
	ERL_NIF_TERM m = enif_make_new_map(env);

	put_u64(env, &m, "arena", mi->arena);
	put_u64(env, &m, "in_use", mi->uordblks);
	put_u64(env, &m, "free", mi->fordblks);
	put_u64(env, &m, "mmapped", mi->hblkhd);
	put_u64(env, &m, "mmapped_blocks", mi->hblks);
	put_u64(env, &m, "releasable", mi->keepcost);
	return m;
}

/* stats() -> #{...}: call counts, live and total figures, glibc's
 * mallinfo2, how stacks were captured. */
static ERL_NIF_TERM stats(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	const struct lsnap_totals *t;
	struct ls_snapshot snap;
	ERL_NIF_TERM m, err;
	size_t i, holding = 0;

	if (fetch(env, 0, &snap, &err))
		return err;
	t = &snap.totals;
	m = enif_make_new_map(env);
	put_u64(env, &m, "pid", snap.hdr.pid);
	put(env, &m, "mode", mk_atom(env, snap.hdr.mode == LSNAP_MODE_SAMPLED ?
				      "sampled" : "full"));
	put_u64(env, &m, "sample_rate", snap.hdr.sample_rate);
	put_u64(env, &m, "uptime_ms",
		(snap.hdr.mono_ns - snap.hdr.start_mono_ns) / 1000000u);
	put_u64(env, &m, "threads", snap.hdr.nthreads);
	put(env, &m, "calls", calls_map(env, &snap));
	put_u64(env, &m, "live_bytes", t->live_bytes);
	put_u64(env, &m, "live_blocks", t->live_blocks);
	put_u64(env, &m, "peak_live_bytes", t->peak_live_bytes);
	put_u64(env, &m, "allocated_bytes", t->allocated_bytes);
	put_u64(env, &m, "allocated_blocks", t->allocated_blocks);
	for (i = 0; i < snap.nsites; i++)
		holding += snap.sites[i].live_blocks > 0;
	put_u64(env, &m, "sites", snap.nsites);
	put_u64(env, &m, "sites_holding", holding);
	if (snap.has_mallinfo)
		put(env, &m, "mallinfo", mallinfo_map(env, &snap));
	if (snap.has_unwind) {
		put_u64(env, &m, "stacks_walked", snap.unwind.walks);
		put_u64(env, &m, "stacks_from_memo", snap.unwind.memo_hits);
	}
	ls_snapshot_release(&snap);
	return m;
}

/* reset() -> ok: the agent forgets every live block seen so far. */
static ERL_NIF_TERM reset(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	char reply[256], err[ERR_MAX];
	int r;

	r = ls_client_request(getpid(), LS_VERB_RESET, reply, sizeof(reply),
			      err, sizeof(err));
	if (r)
		return agent_error(env, r, err);
	if (strcmp(reply, LS_REPLY_OK))
		return mk_error_msg(env, "agent", reply);
	return atom_ok;
}

/* An atom term's text into buf; 0 or -1 when it is not an atom that fits. */
static int get_atom(ErlNifEnv *env, ERL_NIF_TERM t, char *buf, size_t cap)
{
	return enif_get_atom(env, t, buf, (unsigned)cap, ERL_NIF_LATIN1) > 0 ?
	       0 : -1;
}

/* One report option, a row of lib/ropt-table.h the NIF takes, its value
 * an atom or an integer read by the commands' setter; 0, or -1 for an
 * unknown key or a bad value. */
static int report_opt(ErlNifEnv *env, ERL_NIF_TERM key, ERL_NIF_TERM v,
		      struct ls_report_opts *o)
{
	const struct ls_ropt *row;
	char k[32], text[32];
	ErlNifUInt64 u;

	if (get_atom(env, key, k, sizeof(k)) ||
	    !(row = ls_ropt_find(k, LS_RO_NIF)))
		return -1;
	if (enif_get_uint64(env, v, &u))
		snprintf(text, sizeof(text), "%llu", (unsigned long long)u);
	else if (get_atom(env, v, text, sizeof(text)))
		return -1;
	return ls_ropt_set(row, o, text);
}

/* Options as a map or a proplist of {Key, Value}. */
static int report_opts(ErlNifEnv *env, ERL_NIF_TERM t,
		       struct ls_report_opts *o)
{
	ERL_NIF_TERM head, key, val;
	ErlNifMapIterator it;
	char err[256];
	const ERL_NIF_TERM *tup;
	int arity, bad = 0;

	memset(o, 0, sizeof(*o));
	if (enif_is_map(env, t)) {
		if (!enif_map_iterator_create(env, t, &it,
					      ERL_NIF_MAP_ITERATOR_FIRST))
			return -1;
		while (!bad && enif_map_iterator_get_pair(env, &it, &key, &val)) {
			bad = report_opt(env, key, val, o);
			enif_map_iterator_next(env, &it);
		}
		enif_map_iterator_destroy(env, &it);
	} else if (enif_is_list(env, t)) {
		while (!bad && enif_get_list_cell(env, t, &head, &t))
			bad = !enif_get_tuple(env, head, &arity, &tup) ||
			      arity != 2 || report_opt(env, tup[0], tup[1], o);
		bad = bad || !enif_is_empty_list(env, t);
	} else {
		bad = 1;
	}
	return bad || ls_ropt_check(o, 1, err, sizeof(err)) ? -1 : 0;
}

/* The report rendered into a binary. */
static ERL_NIF_TERM render_binary(ErlNifEnv *env, const struct ls_report *rep,
				  const struct ls_report_opts *o)
{
	ERL_NIF_TERM ret;
	char *buf = NULL;
	size_t len = 0;
	unsigned char *p;
	FILE *fp = open_memstream(&buf, &len);
	int r;

	if (!fp)
		return mk_error(env, mk_atom(env, "enomem"));
	r = ls_report_render(fp, rep, o, NULL);
	if (fclose(fp) && !r)
		r = -ENOMEM;
	if (r) {
		ret = mk_error_msg(env, "render", strerror(-r));
		goto out;
	}
	p = enif_make_new_binary(env, len, &ret);
	if (!p)
		ret = mk_error(env, mk_atom(env, "enomem"));
	else
		memcpy(p, buf, len);
out:
	free(buf);
	return ret;
}

/* report(Opts) -> Binary: the report in any format of the library. */
static ERL_NIF_TERM report(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct ls_report_opts o;
	struct ls_snapshot snap;
	struct ls_report rep;
	ERL_NIF_TERM ret;
	int r;

	if (report_opts(env, argv[0], &o))
		return enif_make_badarg(env);
	if (fetch(env, o.need_blocks, &snap, &ret))
		return ret;
	r = ls_report_build(&snap, &o, &rep);
	if (r) {
		ret = mk_error_msg(env, "report", strerror(-r));
		goto out;
	}
	ret = render_binary(env, &rep, &o);
	ls_report_release(&rep);
out:
	ls_snapshot_release(&snap);
	return ret;
}

static int by_rate(const void *a, const void *b)
{
	const struct ls_report_site *x = a, *y = b;

	return x->trend->bytes_per_second < y->trend->bytes_per_second ? 1 :
	       x->trend->bytes_per_second > y->trend->bytes_per_second ? -1 : 0;
}

static ERL_NIF_TERM growing_site(ErlNifEnv *env, struct ls_symbolizer *sym,
				 const struct ls_report_site *r,
				 struct ls_stack *st)
{
	ERL_NIF_TERM m = enif_make_new_map(env);

	put(env, &m, "trend", mk_atom(env, ls_trend_name(r->trend->label)));
	put(env, &m, "bytes_per_second",
	    enif_make_double(env, r->trend->bytes_per_second));
	put(env, &m, "confidence", enif_make_double(env, r->trend->confidence));
	put_u64(env, &m, "samples", r->trend->nsamples);
	put(env, &m, "live_bytes", enif_make_int64(env, r->live_bytes));
	put(env, &m, "live_blocks", enif_make_int64(env, r->live_blocks));
	put_u64(env, &m, "allocated_bytes", r->allocated_bytes);
	put(env, &m, "stack", mk_stack(env, sym, r->site, st, 1));
	return m;
}

/* growing() -> [#{trend, bytes_per_second, ..., stack}]: the sites the
 * agent's growth samples label linear or exponential, fastest first. */
static ERL_NIF_TERM growing(ErlNifEnv *env, int argc,
			    const ERL_NIF_TERM argv[])
{
	struct ls_report_opts o = { .growing = 1 };
	struct ls_symbolizer *sym = NULL;
	struct ls_stack st = { 0 };
	struct ls_snapshot snap;
	struct ls_report rep = { 0 };
	ERL_NIF_TERM ret;
	size_t i;
	int r;

	if (fetch(env, 0, &snap, &ret))
		return ret;
	ls_report_opts_finish(&o);
	r = ls_report_build(&snap, &o, &rep);
	if (r) {
		ret = mk_error_msg(env, "report", strerror(-r));
		goto out;
	}
	sym = ls_symbolizer_new(&snap);
	if (!sym) {
		ret = mk_error(env, mk_atom(env, "enomem"));
		goto out;
	}
	qsort(rep.sites, rep.nsites, sizeof(*rep.sites), by_rate);
	ret = enif_make_list(env, 0);
	for (i = rep.nsites; i-- > 0;)
		ret = enif_make_list_cell(env,
			growing_site(env, sym, &rep.sites[i], &st), ret);
out:
	ls_stack_release(&st);
	ls_symbolizer_free(sym);
	ls_report_release(&rep);
	ls_snapshot_release(&snap);
	return ret;
}

/* formats() -> [atom()]: what report/1 accepts as format, the rows of
 * the report library's renderer table. */
static ERL_NIF_TERM formats(ErlNifEnv *env, int argc,
			    const ERL_NIF_TERM argv[])
{
	ERL_NIF_TERM list = enif_make_list(env, 0);
	size_t n = 0;

	while (ls_renderers[n].name)
		n++;
	while (n-- > 0)
		list = enif_make_list_cell(env,
					   mk_atom(env, ls_renderers[n].name),
					   list);
	return list;
}

static int load(ErlNifEnv *env, void **priv, ERL_NIF_TERM info)
{
	atom_ok = enif_make_atom(env, "ok");
	atom_error = enif_make_atom(env, "error");
	atom_undefined = enif_make_atom(env, "undefined");
	atom_true = enif_make_atom(env, "true");
	atom_false = enif_make_atom(env, "false");
	atom_no_agent = enif_make_atom(env, "no_agent");
	atom_no_control = enif_make_atom(env, "no_control");
	return 0;
}

static int upgrade(ErlNifEnv *env, void **priv, void **old, ERL_NIF_TERM info)
{
	return load(env, priv, info);
}

#define DIRTY ERL_NIF_DIRTY_JOB_IO_BOUND

static ErlNifFunc funcs[] = {
	{ "olds", 1, olds1, DIRTY },
	{ "olds", 2, olds, DIRTY },
	{ "stats", 0, stats, DIRTY },
	{ "reset", 0, reset, DIRTY },
	{ "report", 1, report, DIRTY },
	{ "growing", 0, growing, DIRTY },
	{ "formats", 0, formats, 0 },
};

ERL_NIF_INIT(leakscope, funcs, load, NULL, upgrade, NULL)
