/*
 * t-erlang-report.c - erlang/beam_report.c on samples built here: what is
 * labelled growing (linear or exponential AND a material rise), what is
 * left quiet (one step, a rise below the material minimum, noise, a
 * process gone by the end), the order, and --gc-check's clamp.
 */
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "../../erlang/beam_int.h"

#define N 10

static struct beam_data d;

static struct beam_proc *proc(unsigned num, const char *name)
{
	struct beam_proc *p = calloc(1, sizeof(*p));
	int k;

	p->num = num;
	p->serial = 0;
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->init, sizeof(p->init), "t:%s/0", name);
	snprintf(p->current, sizeof(p->current), "t:loop/0");
	p->seen = calloc(N, 1);
	for (k = 0; k < PM_N; k++)
		p->v[k] = calloc(N, sizeof(int64_t));
	p->next = d.phash[num % PHASH];
	d.phash[num % PHASH] = p;
	d.nprocs++;
	return p;
}

static void scalar(const char *name, const char *kind, int bytes,
		   const int64_t *v)
{
	struct beam_scalar *x;

	d.scalars = realloc(d.scalars, (d.nscalars + 1) * sizeof(*d.scalars));
	x = &d.scalars[d.nscalars++];
	memset(x, 0, sizeof(*x));
	snprintf(x->name, sizeof(x->name), "%s", name);
	x->kind = kind;
	x->bytes = bytes;
	x->v = calloc(N, sizeof(int64_t));
	x->seen = calloc(N, 1);
	memcpy(x->v, v, N * sizeof(int64_t));
	memset(x->seen, 1, N);
}

/* The JSON object of the series whose subject contains what and whose
 * metric is metric, copied into buf; NULL when absent. */
static const char *series(const char *json, const char *what,
			  const char *metric, char *buf, size_t cap)
{
	const char *p = json;
	char m[128];

	snprintf(m, sizeof(m), "\"metric\":\"%s\"", metric);
	while ((p = strstr(p, "{\"kind\":"))) {
		const char *end = strstr(p, "]}");
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n >= cap)
			n = cap - 1;
		memcpy(buf, p, n);
		buf[n] = 0;
		if (strstr(buf, what) && strstr(buf, m))
			return buf;
		p += 8;
	}
	return NULL;
}

static int growing(const char *json, const char *what, const char *metric)
{
	char buf[4096];
	const char *s = series(json, what, metric, buf, sizeof(buf));

	return s ? strstr(s, "\"growing\":true") != NULL : -1;
}

int main(void)
{
	static const int64_t procs[N] = { 100, 110, 120, 130, 140, 150, 160,
					  170, 180, 190 };
	static const int64_t atoms[N] = { 9000, 9000, 9001, 9000, 9000, 9002,
					  9000, 9001, 9000, 9000 };
	static const int64_t step[N] = { 5, 5, 5, 5, 5, 900, 900, 900, 900,
					 900 };
	struct ls_beam_opts o = { .top = 5, .json = 1 };
	struct beam_proc *mb, *slow, *once, *gone;
	char *json = NULL;
	size_t len = 0, i;
	FILE *out;

	d.count = d.taken = N;
	d.interval_s = d.period_s = 1.0;
	snprintf(d.node, sizeof(d.node), "t@host");
	snprintf(d.otp, sizeof(d.otp), "25");
	d.phash = calloc(PHASH, sizeof(*d.phash));
	scalar("process_count", "process_count", 0, procs);
	d.scalars[0].limit = 262144;
	scalar("atom_count", "atom_count", 0, atoms);
	scalar("port_count", "port_count", 0, step);

	mb = proc(1, "mailbox_leak");	/* +10 a sample: growing */
	slow = proc(2, "slow_mailbox");	/* +1 a sample: rises 9 < 10 */
	once = proc(3, "one_step");	/* memory steps once: not linear */
	gone = proc(4, "gone");		/* grows, but exits before the end */
	for (i = 0; i < N; i++) {
		mb->seen[i] = slow->seen[i] = once->seen[i] = 1;
		gone->seen[i] = i < N - 1;
		mb->v[PM_MQ][i] = 10 * (int64_t)i;
		slow->v[PM_MQ][i] = (int64_t)i;
		once->v[PM_MEMORY][i] = i < 5 ? 10000 : 2000000;
		gone->v[PM_MQ][i] = 100 * (int64_t)i;
	}
	d.gc = calloc(1, sizeof(*d.gc));
	d.gc[0] = (struct beam_gc){ .num = 1, .bins_before = 16,
				    .bins_after = 32, .bytes_before = 100,
				    .bytes_after = 200 };
	snprintf(d.gc[0].label, sizeof(d.gc[0].label), "<0.1.0> mailbox_leak");
	d.ngc = 1;
	d.gc_done = 1;
	snprintf(d.native_why, sizeof(d.native_why), "no agent here");

	out = open_memstream(&json, &len);
	ok(!ls_beam_report(out, &d, &o), "report built");
	fclose(out);

	is_u64(growing(json, "process_count", "process_count"), 1,
	       "process_count +10 a sample: growing");
	is_u64(growing(json, "atom_count", "atom_count"), 0,
	       "atom_count's noise: quiet");
	is_u64(growing(json, "port_count", "port_count"), 0,
	       "port_count's one step: quiet");
	is_u64(growing(json, "mailbox_leak", "message_queue_len"), 1,
	       "a mailbox +10 a sample: growing");
	ok(growing(json, "slow_mailbox", "message_queue_len") != 1,
	   "a mailbox rising by 9 in all: below the material 10");
	ok(growing(json, "one_step", "memory") != 1,
	   "a process's memory stepping once: quiet");
	ok(growing(json, "gone", "message_queue_len") == -1,
	   "a process gone by the end: no series");
	ok(strstr(json, "\"limit\":262144") != NULL, "process_limit reported");
	ok(strstr(json, "\"gc_check\":[]") != NULL,
	   "gc-check: a process holding more after the collection freed "
	   "nothing (not a negative amount)");
	ok(strstr(json, "\"native\":null") &&
	   strstr(json, "\"native_unavailable\":\"no agent here\""),
	   "no agent: native null with the reason");
	/* growing first */
	ok(strstr(json, "mailbox_leak") < strstr(json, "atom_count"),
	   "growing series before steady ones");
	ls_beam_data_free(&d);
	free(json);
	return tap_done();
}
