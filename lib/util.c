/*
 * util.c - number parsing, the growable array and the string index.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <poll.h>
#include <time.h>
#include "../common/lsnap.h"
#include "util.h"

/* The decimal number s begins with (no sign, no blank first): 0 with
 * *end past its digits, or a negative errno. */
static int parse_digits(const char *s, unsigned long long *n, char **end)
{
	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	*n = strtoull(s, end, 10);
	if (errno)
		return -ERANGE;
	return *end == s ? -EINVAL : 0;
}

int ls_parse_count(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long n;
	int r = parse_digits(s, &n, &end);

	if (r)
		return r;
	if (*end)
		return -EINVAL;
	*out = n;
	return 0;
}

static const struct {
	const char *suffix;
	unsigned shift;
} size_suffixes[] = {
	{ "", 0 }, { "B", 0 },
	{ "K", 10 }, { "KB", 10 }, { "KiB", 10 },
	{ "M", 20 }, { "MB", 20 }, { "MiB", 20 },
	{ "G", 30 }, { "GB", 30 }, { "GiB", 30 },
	{ "T", 40 }, { "TB", 40 }, { "TiB", 40 },
};

int ls_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long n;
	size_t i;
	int r = parse_digits(s, &n, &end);

	if (r)
		return r;
	for (i = 0; i < sizeof(size_suffixes) / sizeof(size_suffixes[0]); i++) {
		unsigned sh = size_suffixes[i].shift;

		if (strcasecmp(end, size_suffixes[i].suffix))
			continue;
		if (sh && n > (UINT64_MAX >> sh))
			return -ERANGE;
		*out = (uint64_t)n << sh;
		return 0;
	}
	return -EINVAL;
}

int ls_parse_seconds(const char *s, uint64_t *ns)
{
	char *end;
	double d;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	d = strtod(s, &end);
	if (errno || *end || end == s || !(d > 0) || d > 1e9)
		return -EINVAL;
	*ns = (uint64_t)(d * 1e9);
	return *ns ? 0 : -EINVAL;
}

int ls_grow(void *arr, size_t *cap, size_t need, size_t el)
{
	void **a = arr;
	size_t ncap = *cap ? *cap : 16;
	void *p;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / el)
			return -ENOMEM;
		ncap *= 2;
	}
	p = realloc(*a, ncap * el);
	if (!p)
		return -ENOMEM;
	*a = p;
	*cap = ncap;
	return 0;
}

uint64_t ls_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int ls_wait_readable(int fd, uint64_t deadline_ns)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t now;
	int r;

	for (;;) {
		now = ls_mono_ns();
		if (now >= deadline_ns)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)((deadline_ns - now + 999999) / 1000000));
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

static size_t *strindex_find(size_t *slot, size_t cap, const char *s,
			     const char *(*str)(const void *, size_t),
			     const void *owner)
{
	size_t j = lsnap_fnv1a(LSNAP_FNV_INIT, s, strlen(s)) & (cap - 1);

	while (slot[j] && strcmp(str(owner, slot[j] - 1), s))
		j = (j + 1) & (cap - 1);
	return &slot[j];
}

size_t *ls_strindex_slot(struct ls_strindex *x, const char *s, size_t n,
			 const char *(*str)(const void *owner, size_t pos),
			 const void *owner)
{
	if (2 * (n + 1) > x->cap) {
		size_t ncap = x->cap ? 2 * x->cap : 256, i;
		size_t *slot = calloc(ncap, sizeof(*slot));

		if (!slot)
			return NULL;
		for (i = 0; i < n; i++)
			*strindex_find(slot, ncap, str(owner, i), str, owner) =
				i + 1;
		free(x->slot);
		x->slot = slot;
		x->cap = ncap;
	}
	return strindex_find(x->slot, x->cap, s, str, owner);
}

void ls_strindex_release(struct ls_strindex *x)
{
	free(x->slot);
	x->slot = NULL;
	x->cap = 0;
}
