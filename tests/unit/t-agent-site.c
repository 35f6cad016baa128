/*
 * t-agent-site.c - stack interning: same stack same site, ids dense,
 * lookups by id, kinds kept apart.
 */
#include <pthread.h>
#include "../../agent/site.h"
#include "../../agent/thread.h"
#include "tap.h"

static struct ls_site_rec *intern(const uint64_t *pcs, uint32_t n, uint32_t kind)
{
	return ls_site_intern(pcs, n, kind, ls_site_hash(pcs, n, kind));
}

static void *worker(void *arg)
{
	uint64_t pcs[8];
	int i, j;

	for (i = 0; i < 2000; i++) {
		for (j = 0; j < 8; j++)
			pcs[j] = 0x400000 + (uint64_t)((i % 1000) * 8 + j);
		if (!intern(pcs, 8, 0))
			return (void *)1;
	}
	return NULL;
}

int main(void)
{
	uint64_t a[3] = { 1, 2, 3 }, b[3] = { 1, 2, 4 };
	struct ls_site_rec *s1 = intern(a, 3, 0), *s2 = intern(b, 3, 0);
	pthread_t th[4];
	void *res;
	int i, bad = 0;

	ok(s1 && s2 && s1 != s2, "different stacks, different sites");
	ok(intern(a, 3, 0) == s1, "same stack, same site");
	ok(intern(a, 2, 0) != s1, "a prefix is another site");
	ok(intern(a, 3, 1) != s1, "same stack of another kind is another site");
	ok(ls_site_get(s1->id) == s1 && ls_site_get(s2->id) == s2, "lookup by id");
	ok(ls_site_get(100000) == NULL, "unknown id gives NULL");
	is_u64(ls_site_count(), 4, "four sites so far");
	for (i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], &res);
		bad |= res != NULL;
	}
	ok(!bad, "4 threads interning the same 1000 stacks");
	is_u64(ls_site_count(), 1004, "each of the 1000 stacks created exactly once");
	for (i = 0; i < (int)ls_site_count(); i++)
		if (!ls_site_get((uint32_t)i) || ls_site_get((uint32_t)i)->id != (uint32_t)i)
			bad = 1;
	ok(!bad, "ids are dense and match");
	bad = 0;
	for (i = 0; i < (1 << 20); i++)
		bad |= ls_hist_bucket_below63((uint64_t)i) !=
		       ls_hist_bucket((uint64_t)i);
	for (i = 1; i < 63; i++) {
		uint64_t v = 1ull << i;

		bad |= ls_hist_bucket_below63(v - 1) != ls_hist_bucket(v - 1) ||
		       ls_hist_bucket_below63(v) != ls_hist_bucket(v) ||
		       ls_hist_bucket_below63(v + 1) != ls_hist_bucket(v + 1);
	}
	bad |= ls_hist_bucket_below63(INT64_MAX) != ls_hist_bucket(INT64_MAX);
	ok(!bad, "the hooks' bucket is ls_hist_bucket below 2^63 (0, 1, 2^k +- 1)");
	is_u64(ls_hist_bucket_below63(0), 0, "bucket of 0");
	is_u64(ls_hist_bucket_below63(4096), 13, "bucket of 4096");
	return tap_done();
}
