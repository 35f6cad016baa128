/*
 * mmaps.c - tracked anonymous mappings.
 */
#include <errno.h>
#include <string.h>
#include "lockrank.h"
#include "mmaps.h"
#include "sys.h"

static ls_lock_t lock = LS_LOCK_INIT;
static struct ls_live_entry *regs;	/* sorted by addr, disjoint */
static size_t nregs, capregs;

static int reserve(size_t n)
{
	struct ls_live_entry *r;
	size_t cap = capregs ? capregs : 256;

	if (n <= capregs)
		return 0;
	while (cap < n)
		cap *= 2;
	r = ls_sys_map(cap * sizeof(*r));
	if (!r)
		return -ENOMEM;
	if (nregs)
		memcpy(r, regs, nregs * sizeof(*r));
	ls_sys_unmap(regs, capregs * sizeof(*r));
	regs = r;
	capregs = cap;
	return 0;
}

/* First range whose end is above addr. */
static size_t lower(uint64_t addr)
{
	size_t lo = 0, hi = nregs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (regs[mid].addr + regs[mid].size <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int ls_mmaps_add(const struct ls_live_entry *e)
{
	size_t i;
	int ret;

	ls_lock_ranked(&lock, LS_RANK_MMAPS);
	ret = reserve(nregs + 1);
	if (ret)
		goto out;
	i = lower(e->addr);
	memmove(&regs[i + 1], &regs[i], (nregs - i) * sizeof(*regs));
	regs[i] = *e;
	nregs++;
out:
	ls_unlock_ranked(&lock, LS_RANK_MMAPS);
	return ret;
}

static void drop(size_t i)
{
	memmove(&regs[i], &regs[i + 1], (nregs - i - 1) * sizeof(*regs));
	nregs--;
}

uint64_t ls_mmaps_remove(uint64_t start, uint64_t len, ls_mmaps_fn fn,
			 void *arg)
{
	uint64_t end = start + len, gone = 0;
	size_t i;

	ls_lock_ranked(&lock, LS_RANK_MMAPS);
	for (i = lower(start); i < nregs && regs[i].addr < end;) {
		struct ls_live_entry *r = &regs[i];
		uint64_t rend = r->addr + r->size;
		uint64_t lo = r->addr > start ? r->addr : start;
		uint64_t hi = rend < end ? rend : end;

		gone += hi - lo;
		if (lo == r->addr && hi == rend) {		/* whole */
			fn(r->site, -(int64_t)r->size, -1, arg);
			drop(i);
			continue;
		}
		fn(r->site, -(int64_t)(hi - lo), 0, arg);
		if (lo == r->addr) {				/* head */
			r->addr = hi;
			r->size = rend - hi;
		} else if (hi == rend) {			/* tail */
			r->size = lo - r->addr;
		} else if (!reserve(nregs + 1)) {		/* middle */
			r = &regs[i];
			memmove(&regs[i + 1], r, (nregs - i) * sizeof(*r));
			nregs++;
			r->size = lo - r->addr;
			regs[i + 1].addr = hi;
			regs[i + 1].size = rend - hi;
			fn(r->site, 0, 1, arg);
			i++;
		} else {
			/* No room to split: keep the head only. */
			fn(r->site, -(int64_t)(rend - hi), 0, arg);
			r->size = lo - r->addr;
		}
		i++;
	}
	ls_unlock_ranked(&lock, LS_RANK_MMAPS);
	return gone;
}

int ls_mmaps_take(uint64_t start, uint64_t len, int (*want)(uint32_t site),
		  ls_mmaps_fn fn, void *arg, uint64_t *lo, uint64_t *hi)
{
	uint64_t end = start + len;
	int found = 0;
	size_t i;

	ls_lock_ranked(&lock, LS_RANK_MMAPS);
	for (i = lower(start); i < nregs && regs[i].addr < end; i++) {
		if (!want(regs[i].site))
			continue;
		*lo = regs[i].addr > start ? regs[i].addr : start;
		*hi = regs[i].addr + regs[i].size < end ?
		      regs[i].addr + regs[i].size : end;
		found = 1;
		break;
	}
	ls_unlock_ranked(&lock, LS_RANK_MMAPS);
	if (found)
		ls_mmaps_remove(*lo, *hi - *lo, fn, arg);
	return found;
}

int ls_mmaps_site_at(uint64_t addr, uint32_t *site)
{
	size_t i;
	int found;

	ls_lock_ranked(&lock, LS_RANK_MMAPS);
	i = lower(addr);
	found = i < nregs && regs[i].addr <= addr;
	if (found)
		*site = regs[i].site;
	ls_unlock_ranked(&lock, LS_RANK_MMAPS);
	return found;
}

size_t ls_mmaps_copy(struct ls_live_entry *buf, size_t cap)
{
	size_t n;

	ls_lock_ranked(&lock, LS_RANK_MMAPS);
	n = nregs;
	if (n <= cap && n)
		memcpy(buf, regs, n * sizeof(*buf));
	ls_unlock_ranked(&lock, LS_RANK_MMAPS);
	return n;
}

size_t ls_mmaps_copy_frozen(struct ls_live_entry *buf, size_t cap, int *torn)
{
	unsigned char vec[1];
	size_t n = nregs;

	if (lock.v) {
		*torn = 1;
		/* reserve() may have unmapped regs before replacing it. */
		if (n && syscall(SYS_mincore, (uintptr_t)regs & ~(uintptr_t)4095,
				 1, vec) && errno == ENOMEM)
			return 0;
	}
	if (n <= cap && n)
		memcpy(buf, regs, n * sizeof(*buf));
	return n;
}

void ls_mmaps_clear(void (*fn)(const struct ls_live_entry *, void *), void *arg)
{
	size_t i;

	ls_lock_ranked(&lock, LS_RANK_MMAPS);
	for (i = 0; i < nregs; i++)
		fn(&regs[i], arg);
	nregs = 0;
	ls_unlock_ranked(&lock, LS_RANK_MMAPS);
}

void ls_mmaps_lock_all(void)
{
	ls_lock_ranked(&lock, LS_RANK_MMAPS);
}

void ls_mmaps_unlock_all(void)
{
	ls_unlock_ranked(&lock, LS_RANK_MMAPS);
}

void ls_mmaps_reset_child(void)
{
	ls_lock_reset(&lock);
}
