/*
 * metrics.c - a snapshot reduced to Prometheus metrics, and their text
 * exposition (metrics.h, docs/FLEET.md).
 *
 * Label cardinality is what hurts a Prometheus server, so a process
 * exports a bounded number of sites, and a site's id is a hash of what
 * its stack says in source terms (not of its addresses): the same leak in
 * a thousand processes of one build is one site id, which the alert rules
 * can group by.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "metrics.h"
#include "report.h"
#include "stack.h"
#include "trend.h"

/* ------------------------------------------------------------ site ids */

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
	const unsigned char *p = data;

	while (n--)
		h = (h ^ *p++) * FNV_PRIME;
	return h;
}

static uint64_t fnv_str(uint64_t h, const char *s)
{
	return fnv(h, s ? s : "", s ? strlen(s) + 1 : 1);
}

/* The frame in source terms: where the code is, not where it was loaded. */
static uint64_t hash_frame(uint64_t h, const struct ls_symframe *f)
{
	uint64_t off = f->mod ? f->addr - f->mod->bias : f->addr;
	int line = f->line;

	h = fnv_str(h, f->module ? ls_sym_basename(f->module) : NULL);
	if (f->symbol)
		h = fnv_str(h, f->symbol);
	else
		h = fnv(h, &off, sizeof(off));
	h = fnv_str(h, f->file);
	return fnv(h, &line, sizeof(line));
}

static void site_id(const struct ls_stack *st, uint32_t kind, char *out)
{
	uint64_t h = fnv(FNV_OFFSET, &kind, sizeof(kind));
	size_t i;

	for (i = 0; i < st->n; i++)
		h = hash_frame(h, &st->f[i]);
	snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* ------------------------------------------------------- site labels */

static char *frame_function(const struct ls_symframe *f)
{
	char *s = NULL;

	if (f->function)
		s = strdup(f->function);
	else if (f->module && asprintf(&s, "[%s]", ls_sym_basename(f->module)) < 0)
		s = NULL;
	else if (!f->module && asprintf(&s, "0x%llx",
					(unsigned long long)f->addr) < 0)
		s = NULL;
	if (s && strlen(s) > LS_METRICS_LABEL_MAX)
		s[LS_METRICS_LABEL_MAX] = 0;
	return s;
}

static char *frame_location(const struct ls_symframe *f)
{
	char *s = NULL;

	if (!f->file || !f->line)
		return strdup(f->file ? ls_sym_basename(f->file) : "");
	if (asprintf(&s, "%s:%d", ls_sym_basename(f->file), f->line) < 0)
		return NULL;
	if (strlen(s) > LS_METRICS_LABEL_MAX)
		s[LS_METRICS_LABEL_MAX] = 0;
	return s;
}

/* id, function and location of r's site, symbolized through sym. */
static int site_labels(struct ls_metrics_site *m,
		       const struct ls_report_site *r,
		       struct ls_symbolizer *sym, struct ls_stack *st)
{
	static const struct ls_symframe none = { 0 };
	int ret = ls_stack_build(sym, r->site, st);

	if (ret)
		return ret;
	site_id(st, r->site->kind, m->id);
	if ((ret = ls_stack_view(st, 0, 0, 1)))
		return ret;
	m->function = frame_function(st->n ? &st->f[0] : &none);
	m->location = frame_location(st->n ? &st->f[0] : &none);
	return m->function && m->location ? 0 : -ENOMEM;
}

static void site_figures(struct ls_metrics_site *m,
			 const struct ls_report_site *r)
{
	m->kind = ls_site_kind_name(r->site->kind);
	m->live_bytes = r->live_bytes;
	m->live_blocks = r->live_blocks;
	m->has_trend = r->trend != NULL;
	m->bytes_per_second = r->trend ? r->trend->bytes_per_second : 0;
	m->trend = ls_trend_name(r->trend ? r->trend->label :
				 LS_TREND_UNKNOWN);
}

/* ------------------------------------------------- choosing the sites */

static int growing(const struct ls_report_site *r)
{
	return r->trend && (r->trend->label == LS_TREND_LINEAR ||
			    r->trend->label == LS_TREND_EXPONENTIAL);
}

/* Growing sites first, fastest first; then by live bytes, as the report
 * sorts them (its order is the tie-break, so the choice is stable). */
static int by_interest(const void *x, const void *y)
{
	const struct ls_report_site *a = *(const struct ls_report_site *const *)x;
	const struct ls_report_site *b = *(const struct ls_report_site *const *)y;
	int ga = growing(a), gb = growing(b);

	if (ga != gb)
		return gb - ga;
	if (ga && a->trend->bytes_per_second != b->trend->bytes_per_second)
		return a->trend->bytes_per_second < b->trend->bytes_per_second ?
			1 : -1;
	return a < b ? -1 : a > b;
}

static int by_id(const void *x, const void *y)
{
	return strcmp(((const struct ls_metrics_site *)x)->id,
		      ((const struct ls_metrics_site *)y)->id);
}

static void site_release(struct ls_metrics_site *m)
{
	free(m->function);
	free(m->location);
	memset(m, 0, sizeof(*m));
}

/* Merge sites with one id (their stacks read the same: two call sites
 * on one line, stacks cut at the depth limit): one series each. */
static void merge_same(struct ls_metrics_proc *p)
{
	size_t i, k = 0;

	qsort(p->sites, p->nsites, sizeof(*p->sites), by_id);
	for (i = 0; i < p->nsites; i++) {
		struct ls_metrics_site *m = &p->sites[i], *keep;

		if (k && !strcmp(p->sites[k - 1].id, m->id)) {
			keep = &p->sites[k - 1];
			if (m->live_bytes > keep->live_bytes)
				keep->trend = m->trend;
			keep->live_bytes += m->live_bytes;
			keep->live_blocks += m->live_blocks;
			keep->bytes_per_second += m->bytes_per_second;
			keep->has_trend |= m->has_trend;
			site_release(m);
			continue;
		}
		if (k != i) {
			p->sites[k] = *m;
			memset(m, 0, sizeof(*m));
		}
		k++;
	}
	p->nsites = k;
}

static int build_sites(struct ls_metrics_proc *p, const struct ls_report *rep,
		       struct ls_symbolizer *sym, size_t max_sites)
{
	const struct ls_report_site **order;
	struct ls_stack st = { 0 };
	size_t i, n = rep->nsites < max_sites ? rep->nsites : max_sites;
	int r = 0;

	order = malloc((rep->nsites ? rep->nsites : 1) * sizeof(*order));
	p->sites = calloc(n ? n : 1, sizeof(*p->sites));
	if (!order || !p->sites) {
		free(order);
		return -ENOMEM;
	}
	for (i = 0; i < rep->nsites; i++)
		order[i] = &rep->sites[i];
	qsort(order, rep->nsites, sizeof(*order), by_interest);
	for (i = 0; i < n && !r; i++) {
		site_figures(&p->sites[i], order[i]);
		r = site_labels(&p->sites[i], order[i], sym, &st);
		p->nsites = i + 1;
	}
	ls_stack_release(&st);
	free(order);
	if (!r)
		merge_same(p);
	return r;
}

/* ------------------------------------------------------- the process */

static void proc_figures(struct ls_metrics_proc *p,
			 const struct ls_snapshot *s)
{
	const struct lsnap_header *h = &s->hdr;

	p->pid = (pid_t)h->pid;
	if (s->argc && s->argv[0])
		snprintf(p->command, sizeof(p->command), "%s",
			 ls_sym_basename(s->argv[0]));
	p->mode = h->mode == LSNAP_MODE_SAMPLED ? "sampled" : "full";
	p->sample_rate = h->mode == LSNAP_MODE_SAMPLED ? h->sample_rate : 0;
	p->uptime_s = h->mono_ns > h->start_mono_ns ?
		      (double)(h->mono_ns - h->start_mono_ns) / 1e9 : 0;
	p->has_totals = s->has_totals;
	p->live_bytes = s->totals.live_bytes;
	p->live_blocks = s->totals.live_blocks;
	p->peak_live_bytes = s->totals.peak_live_bytes;
	p->allocated_bytes = s->totals.allocated_bytes;
	p->allocated_blocks = s->totals.allocated_blocks;
	p->dropped = s->dropped;
	p->has_agent_memory = s->has_agent_memory;
	p->agent_mapped = s->agent_memory.mapped;
	p->agent_resident = s->agent_memory.resident;
}

int ls_metrics_proc_build(struct ls_metrics_proc *p,
			  const struct ls_snapshot *snap,
			  struct ls_symbolizer *sym, size_t max_sites,
			  const char *container)
{
	struct ls_report_opts opts = { .by = LS_BY_LIVE };
	struct ls_report rep;
	int r;

	memset(p, 0, sizeof(*p));
	proc_figures(p, snap);
	if (container)
		snprintf(p->container, sizeof(p->container), "%s", container);
	ls_report_opts_finish(&opts);
	if ((r = ls_report_build(snap, &opts, &rep)))
		return r;
	p->sites_live = rep.nsites;
	r = build_sites(p, &rep, sym, max_sites < LS_METRICS_SITES_MAX ?
			max_sites : LS_METRICS_SITES_MAX);
	ls_report_release(&rep);
	if (r)
		ls_metrics_proc_release(p);
	return r;
}

void ls_metrics_proc_release(struct ls_metrics_proc *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nsites; i++)
		site_release(&p->sites[i]);
	free(p->sites);
	p->sites = NULL;
	p->nsites = 0;
}

/* ------------------------------------------------------- containers */

static int all_hex(const char *s, size_t n)
{
	return strspn(s, "0123456789abcdef") >= n;
}

/* A 64-hex-digit run that starts at a path element or after "-" (docker-
 * ID.scope, cri-containerd-ID.scope, crio-ID, libpod-ID, /docker/ID). */
static int find_id(const char *line, char *out, size_t cap)
{
	const char *p;

	for (p = line; *p && *p != '\n'; p++) {
		if ((p == line || p[-1] == '/' || p[-1] == '-') &&
		    all_hex(p, 64) && !strchr("0123456789abcdef", p[64] ? p[64] : 'x')) {
			snprintf(out, cap, "%.12s", p);
			return 1;
		}
	}
	return 0;
}

/* systemd-nspawn: ".../machine.slice/machine-NAME.scope/...", where the
 * unit name spells '-' as "\x2d". */
static int find_machine(const char *line, char *out, size_t cap)
{
	const char *p = strstr(line, "/machine.slice/machine-"), *e;
	size_t n = 0;

	if (!p)
		return 0;
	p += strlen("/machine.slice/machine-");
	e = strstr(p, ".scope");
	if (!e || e == p || memchr(p, '\n', (size_t)(e - p)))
		return 0;
	while (p < e && n + 1 < cap) {
		if (e - p >= 4 && !strncmp(p, "\\x2d", 4)) {
			out[n++] = '-';
			p += 4;
		} else {
			out[n++] = *p++;
		}
	}
	out[n] = 0;
	return 1;
}

int ls_metrics_container_parse(const char *cgroup, char *out, size_t cap)
{
	const char *line;

	if (!cap)
		return 0;
	*out = 0;
	for (line = cgroup; line && *line; ) {
		const char *nl = strchr(line, '\n');

		if (find_id(line, out, cap) || find_machine(line, out, cap))
			return 1;
		line = nl ? nl + 1 : NULL;
	}
	*out = 0;
	return 0;
}

/* A container whose cgroup names no runtime's id (systemd-nspawn
 * --keep-unit, unshare): named by its hostname (lib/container.h). */
static int container_named(pid_t pid, char *out, size_t cap)
{
	struct ls_container c;

	if (!cap || ls_container_of(pid, &c) || !ls_container_is(&c))
		return 0;
	ls_container_describe(&c);
	ls_container_name(&c, out, cap);
	return 1;
}

int ls_metrics_container(pid_t pid, char *out, size_t cap)
{
	char path[64], *buf = malloc(65536);
	ssize_t n, got = 0;
	int fd, r = 0;

	if (cap)
		*out = 0;
	if (!buf)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	while (fd >= 0 && got < 65535 &&
	       (n = read(fd, buf + got, (size_t)(65535 - got))) > 0)
		got += n;
	if (fd >= 0) {
		close(fd);
		buf[got] = 0;
		r = ls_metrics_container_parse(buf, out, cap);
	}
	free(buf);
	return r ? r : container_named(pid, out, cap);
}

/* ------------------------------------------------------ exposition */

/* Length of the valid UTF-8 sequence at s, or 0. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n = *s >= 0xf0 && *s <= 0xf4 ? 4 : *s >= 0xe0 ? 3 :
		   *s >= 0xc2 && *s <= 0xdf ? 2 : 0;
	size_t i;

	if (*s >= 0xf5)
		return 0;
	for (i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* A label value as both formats want it: backslash, double quote and
 * newline escaped; other control characters and bytes that are not
 * UTF-8 (a label must be) printed as '?'. */
static void put_escaped(FILE *out, const char *v)
{
	const unsigned char *s = (const unsigned char *)v;
	size_t n;

	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(out, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", out);
		else if (*s < 0x20 || *s == 0x7f)
			fputc('?', out);
		else if (*s < 0x80)
			fputc(*s, out);
		else if ((n = utf8_len(s))) {
			fwrite(s, 1, n, out);
			s += n - 1;
		} else
			fputc('?', out);
	}
}

void ls_metrics_family(FILE *out, const char *name, const char *type,
		       const char *help, int openmetrics)
{
	const char *sfx = !openmetrics && !strcmp(type, "counter") ? "_total" : "";

	fprintf(out, "# HELP %s%s %s\n# TYPE %s%s %s\n", name, sfx, help, name,
		sfx, type);
}

void ls_metrics_value(FILE *out, const char *name, int counter,
		      const char *const *labels, double v)
{
	size_t i;

	fputs(name, out);
	if (counter)
		fputs("_total", out);
	for (i = 0; labels && labels[i]; i += 2) {
		fprintf(out, "%s%s=\"", i ? "," : "{", labels[i]);
		put_escaped(out, labels[i + 1]);
		fputc('"', out);
	}
	if (labels && labels[0])
		fputc('}', out);
	if (v == floor(v) && fabs(v) < 9.007199254740992e15)
		fprintf(out, " %.0f\n", v);
	else
		fprintf(out, " %.9g\n", v);
}

/* The process families: each a figure of struct ls_metrics_proc. */
struct proc_family {
	const char *name, *type, *help;
	double (*get)(const struct ls_metrics_proc *p);
	int needs;	/* 1: has_totals, 2: has_agent_memory */
};

#define GETTER(field) \
	static double get_##field(const struct ls_metrics_proc *p) \
	{ return (double)p->field; }
GETTER(live_bytes)
GETTER(live_blocks)
GETTER(peak_live_bytes)
GETTER(allocated_bytes)
GETTER(allocated_blocks)
GETTER(dropped)
GETTER(agent_mapped)
GETTER(agent_resident)
GETTER(sites_live)
GETTER(uptime_s)

static const struct proc_family proc_families[] = {
	{ "leakscope_process_live_bytes", "gauge",
	  "Bytes the process holds in live allocations now.", get_live_bytes, 1 },
	{ "leakscope_process_live_blocks", "gauge",
	  "Live allocations (blocks) the process holds now.", get_live_blocks, 1 },
	{ "leakscope_process_peak_live_bytes", "gauge",
	  "Most bytes the process held live at once since tracking began.",
	  get_peak_live_bytes, 1 },
	{ "leakscope_process_allocated_bytes", "counter",
	  "Bytes allocated since tracking began.", get_allocated_bytes, 1 },
	{ "leakscope_process_allocated_blocks", "counter",
	  "Allocations made since tracking began.", get_allocated_blocks, 1 },
	{ "leakscope_process_dropped_events", "counter",
	  "Allocation events the agent could not record (its figures are low by that much).",
	  get_dropped, 0 },
	{ "leakscope_process_sites", "gauge",
	  "Allocation sites holding memory (the exported sites are at most --metrics-sites of them).",
	  get_sites_live, 0 },
	{ "leakscope_process_tracked_seconds", "gauge",
	  "Seconds since the agent began tracking the process.", get_uptime_s, 0 },
	{ "leakscope_agent_mapped_bytes", "gauge",
	  "Memory the leakscope agent itself has mapped in the process.",
	  get_agent_mapped, 2 },
	{ "leakscope_agent_resident_bytes", "gauge",
	  "Resident memory of the leakscope agent's own mappings in the process.",
	  get_agent_resident, 2 },
};

static int proc_has(const struct ls_metrics_proc *p, int needs)
{
	return needs == 1 ? p->has_totals : needs == 2 ? p->has_agent_memory : 1;
}

static void proc_labels(const struct ls_metrics_proc *p, char *pid,
			const char **l)
{
	snprintf(pid, 16, "%d", (int)p->pid);
	l[0] = "pid";
	l[1] = pid;
	l[2] = "command";
	l[3] = p->command;
	l[4] = "container";
	l[5] = p->container;
	l[6] = NULL;
}

static void write_proc_families(FILE *out, const struct ls_metrics_proc *procs,
				size_t n, int om)
{
	const char *l[12];
	char pid[16], rate[32];
	size_t f, i;

	ls_metrics_family(out, "leakscope_process_info", "gauge",
			  "A traced process: its tracking mode and sampling rate.", om);
	for (i = 0; i < n; i++) {
		proc_labels(&procs[i], pid, l);
		snprintf(rate, sizeof(rate), "%llu",
			 (unsigned long long)procs[i].sample_rate);
		l[6] = "mode";
		l[7] = procs[i].mode;
		l[8] = "sample_rate";
		l[9] = rate;
		l[10] = NULL;
		ls_metrics_value(out, "leakscope_process_info", 0, l, 1);
	}
	for (f = 0; f < sizeof(proc_families) / sizeof(*proc_families); f++) {
		const struct proc_family *pf = &proc_families[f];
		int counter = !strcmp(pf->type, "counter");

		ls_metrics_family(out, pf->name, pf->type, pf->help, om);
		for (i = 0; i < n; i++) {
			if (!proc_has(&procs[i], pf->needs))
				continue;
			proc_labels(&procs[i], pid, l);
			ls_metrics_value(out, pf->name, counter, l, pf->get(&procs[i]));
		}
	}
}

/* The site families: live bytes, blocks, growth rate, trend. */
enum { SITE_BYTES, SITE_BLOCKS, SITE_RATE, SITE_TREND, SITE_NFAM };

static const char *const site_names[SITE_NFAM][2] = {
	{ "leakscope_site_live_bytes",
	  "Bytes live from one allocation site (the process's top sites, growing ones first)." },
	{ "leakscope_site_live_blocks", "Live allocations from one site." },
	{ "leakscope_site_growth_bytes_per_second",
	  "The site's growth rate over the agent's history ring (Theil-Sen slope; docs/TRENDS.md)." },
	{ "leakscope_site_trend",
	  "1 for the site's current trend label: constant, saturating, linear, exponential or unknown." },
};

static void write_site_family(FILE *out, const struct ls_metrics_proc *procs,
			      size_t n, int fam, int om)
{
	const char *l[18];
	char pid[16];
	size_t i, k;

	ls_metrics_family(out, site_names[fam][0], "gauge", site_names[fam][1], om);
	for (i = 0; i < n; i++) {
		for (k = 0; k < procs[i].nsites; k++) {
			const struct ls_metrics_site *m = &procs[i].sites[k];
			double v = fam == SITE_BYTES ? (double)m->live_bytes :
				   fam == SITE_BLOCKS ? (double)m->live_blocks :
				   fam == SITE_RATE ? m->bytes_per_second : 1;

			if (fam == SITE_RATE && !m->has_trend)
				continue;
			proc_labels(&procs[i], pid, l);
			l[6] = "site";
			l[7] = m->id;
			l[8] = "function";
			l[9] = m->function;
			l[10] = "location";
			l[11] = m->location;
			l[12] = "kind";
			l[13] = m->kind;
			l[14] = fam == SITE_TREND ? "trend" : NULL;
			l[15] = m->trend;
			l[16] = NULL;
			ls_metrics_value(out, site_names[fam][0], 0, l, v);
		}
	}
}

int ls_metrics_write(FILE *out, const struct ls_metrics_proc *procs,
		     size_t n, const struct ls_metrics_scrape *sc,
		     int openmetrics)
{
	static const char *const none[] = { NULL };
	int fam;

	write_proc_families(out, procs, n, openmetrics);
	for (fam = 0; fam < SITE_NFAM; fam++)
		write_site_family(out, procs, n, fam, openmetrics);
	ls_metrics_family(out, "leakscope_exporter_processes", "gauge",
			  "Traced processes this scrape reports on.", openmetrics);
	ls_metrics_value(out, "leakscope_exporter_processes", 0, none, (double)n);
	ls_metrics_family(out, "leakscope_exporter_unreachable_processes", "gauge",
			  "Agents found whose process did not answer this scrape.",
			  openmetrics);
	ls_metrics_value(out, "leakscope_exporter_unreachable_processes", 0, none,
			 sc ? (double)sc->unreachable : 0);
	ls_metrics_family(out, "leakscope_exporter_collect_seconds", "gauge",
			  "Seconds this scrape spent asking the agents and reducing their snapshots.",
			  openmetrics);
	ls_metrics_value(out, "leakscope_exporter_collect_seconds", 0, none,
			 sc ? sc->collect_s : 0);
	return ferror(out) ? -EIO : 0;
}

int ls_metrics_end(FILE *out, int openmetrics)
{
	if (openmetrics)
		fputs("# EOF\n", out);
	return fflush(out) || ferror(out) ? -EIO : 0;
}

int ls_metrics_wants_openmetrics(const char *accept)
{
	return accept && strstr(accept, "application/openmetrics-text") != NULL;
}

const char *ls_metrics_content_type(int openmetrics)
{
	return openmetrics ?
	       "application/openmetrics-text; version=1.0.0; charset=utf-8" :
	       "text/plain; version=0.0.4; charset=utf-8";
}
