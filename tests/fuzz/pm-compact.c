/*
 * pm-compact.c - make a small post-mortem file out of one the agent
 * wrote, for the fuzzers' seed corpus (tests/fuzz/corpus/postmortem/).
 *
 * The agent's file is sparse and sized for growth (a 64 KiB header,
 * regions with room for thousands of sites).  This copies the header and
 * the used part of each region, packed one after another, and shrinks
 * each capacity to what is used, so the seed is a few KB of valid file
 * that lib/postmortem.c reads to the same snapshot.
 *
 *   pm-compact IN.pm OUT.pm
 *
 * Exit status: 0, 1 on a read or write error, 2 on a file this does not
 * understand (not version 2, 3 or 4).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../../common/lspm.h"

/* Append len bytes of in at from to out, 8-aligned as the reader wants:
 * their offset in out, or -1. */
static long copy_region(int in, FILE *out, uint64_t from, uint64_t len)
{
	char *buf = malloc(len ? len : 1);
	long to = ftell(out);
	int ok;

	while (to >= 0 && to % 8 && fputc(0, out) != EOF)
		to++;
	ok = buf && to >= 0 && pread(in, buf, len, (off_t)from) == (ssize_t)len &&
	     fwrite(buf, 1, len, out) == len;

	free(buf);
	return ok ? to : -1;
}

/* Each region of h, packed after the header, its new offset into o. */
static int copy_regions(int in, FILE *out, const struct lspm_header *h,
			struct lspm_header *o)
{
	long m = copy_region(in, out, h->modules_off, (uint64_t)h->nmodules *
			     sizeof(struct lspm_module));
	long s = copy_region(in, out, h->sites_off, (uint64_t)h->nsites *
			     sizeof(struct lspm_site));
	long f = copy_region(in, out, h->frames_off, h->frames_used * 8);
	long r = copy_region(in, out, h->rows_off, (uint64_t)h->nsites * 4);
	long hi = copy_region(in, out, h->hist_off, (uint64_t)h->rows_used *
			      h->hist_len * 8);
	long st = h->version < 3 ? 0 :
		copy_region(in, out, h->stats_off, (uint64_t)h->nsites *
			    (h->version == 3 ? sizeof(struct lspm_site_stats) :
			     sizeof(struct lspm_site_brief)));
	long w = h->version < 4 ? 0 :
		copy_region(in, out, h->wide_off, (uint64_t)h->wide_used *
			    sizeof(struct lspm_site_stats));
	long t = h->version < 4 ? 0 :
		copy_region(in, out, h->tails_off, (uint64_t)h->nsites *
			    sizeof(struct lspm_tail));

	if (m < 0 || s < 0 || f < 0 || r < 0 || hi < 0 || st < 0 || w < 0 ||
	    t < 0)
		return -1;
	o->wide_off = (uint64_t)w;
	o->tails_off = (uint64_t)t;
	o->modules_off = (uint64_t)m;
	o->sites_off = (uint64_t)s;
	o->frames_off = (uint64_t)f;
	o->rows_off = (uint64_t)r;
	o->hist_off = (uint64_t)hi;
	o->stats_off = (uint64_t)st;
	return 0;
}

int main(int argc, char **argv)
{
	struct lspm_header h, o;
	FILE *out;
	int in, bad;

	if (argc != 3) {
		fprintf(stderr, "usage: pm-compact IN.pm OUT.pm\n");
		return 2;
	}
	in = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (in < 0 || pread(in, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		fprintf(stderr, "pm-compact: cannot read '%s'\n", argv[1]);
		return 1;
	}
	if (memcmp(h.magic, LSPM_MAGIC, sizeof(LSPM_MAGIC)) || h.version < 2 ||
	    h.version > LSPM_VERSION) {
		fprintf(stderr, "pm-compact: '%s' is not a version 2, 3 or 4 "
			"post-mortem file\n", argv[1]);
		return 2;
	}
	out = fopen(argv[2], "wbx");
	if (!out) {
		fprintf(stderr, "pm-compact: cannot create '%s': %s\n", argv[2],
			strerror(errno));
		return 1;
	}
	o = h;
	o.header_size = sizeof(o);
	o.modules_cap = h.nmodules;
	o.sites_cap = h.nsites;
	o.frames_cap = h.frames_used;
	o.rows_cap = h.rows_used;
	o.wide_cap = h.wide_used;
	bad = fwrite(&o, sizeof(o), 1, out) != 1 ||
	      copy_regions(in, out, &h, &o) ||
	      fseek(out, 0, SEEK_SET) || fwrite(&o, sizeof(o), 1, out) != 1;
	if (fclose(out) || bad) {
		fprintf(stderr, "pm-compact: cannot write '%s'\n", argv[2]);
		return 1;
	}
	return 0;
}
