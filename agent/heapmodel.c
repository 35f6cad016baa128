/*
 * heapmodel.c - choosing the heap model (heapmodel.h).
 */
#include "glibcheap.h"
#include "heapmodel.h"
#include "real.h"

static struct ls_heapmodel model = {
	.id = LSNAP_ALLOC_GLIBC, .name = "glibc", .chunk_headers = 1,
};

void ls_heapmodel_learn(void)
{
	struct ls_heapmodel m = { .id = LSNAP_ALLOC_GLIBC, .name = "glibc",
				  .chunk_headers = 1 };

	if (ls_real_alloc_lo || ls_real_alloc_hi) {
		m.chunk_headers = 0;
		if (ls_jeheap_detect(m.version, sizeof(m.version))) {
			m.id = LSNAP_ALLOC_JEMALLOC;
			m.name = "jemalloc";
		} else {
			m.id = LSNAP_ALLOC_OTHER;
			m.name = "other";
		}
	}
	model = m;
	ls_glibcheap_learn();	/* does nothing unless malloc is libc's */
}

const struct ls_heapmodel *ls_heapmodel(void)
{
	return &model;
}
