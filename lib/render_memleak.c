/*
 * render_memleak.c - the report in the shape of bcc's memleak, which
 * `leakscope trace` prints by default so that memleak's users and scripts
 * find what they know:
 *
 *	[11:16:33] Top 2 stacks with outstanding allocations:
 *		addr = 948cd0 size = 16                 (with -a)
 *		80 bytes in 5 allocations from stack
 *			 main+0x6d [allocs]
 *
 * Frames are symbolized as the text renderer does (inline chains
 * expanded); sites of the tracer's growth kinds name what they count
 * ("brk calls", "page faults").
 */
#include <inttypes.h>
#include <time.h>
#include "render.h"

static const char *unit(uint32_t kind, int64_t n)
{
	static const char *const one[] = { "allocation", "mapping", "brk call",
					   "page fault", "allocation" };
	static const char *const many[] = { "allocations", "mappings",
					    "brk calls", "page faults",
					    "allocations" };

	if (kind > LSNAP_KIND_MAX)
		kind = LSNAP_KIND_HEAP;
	return n == 1 ? one[kind] : many[kind];
}

/* memleak's frame: "function+0xOFF [module]", no source line. */
static void put_frame(FILE *out, const struct ls_symframe *f)
{
	ls_text_frame_name(out, "\t\t ", f);
	fputs(f->inlined ? " (inlined)\n" : "\n", out);
}

static int put_site(const struct ls_render_ctx *c,
		    const struct ls_report_site *r, struct ls_stack *st)
{
	size_t i;
	int ret;

	for (i = 0; i < r->nblocks; i++)
		fprintf(c->out, "\taddr = %" PRIx64 " size = %" PRIu64 "\n",
			r->blocks[i]->addr, r->blocks[i]->size);
	fprintf(c->out, "\t%" PRId64 " bytes in %" PRId64 " %s from stack\n",
		r->live_bytes, r->live_blocks, unit(r->site->kind, r->live_blocks));
	ret = ls_render_stack(c, r->site, st);
	if (ret)
		return ret;
	for (i = 0; i < st->n; i++)
		put_frame(c->out, &st->f[i]);
	if (!st->n)
		fputs("\t\t [unknown]\n", c->out);
	return 0;
}

int ls_render_memleak(const struct ls_render_ctx *c)
{
	const struct ls_report *rep = c->rep;
	struct ls_stack st = { 0 };
	time_t now = (time_t)(rep->snap->hdr.wall_ns / 1000000000ULL);
	struct tm tm;
	size_t i;
	int ret = 0;

	localtime_r(&now, &tm);
	fprintf(c->out, "[%02d:%02d:%02d] Top %zu stacks with outstanding "
		"allocations:\n", tm.tm_hour, tm.tm_min, tm.tm_sec, rep->nsites);
	for (i = 0; i < rep->nsites && !ret; i++)
		ret = put_site(c, &rep->sites[i], &st);
	ls_stack_release(&st);
	return ret;
}
