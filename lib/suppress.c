/*
 * suppress.c - LeakSanitizer-style suppressions (suppress.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "stack.h"
#include "suppress.h"

/*
 * The runtime's own one-time allocations.  Each names a function of
 * glibc, the dynamic loader or libstdc++ that allocates what lives as
 * long as the process: a program cannot free any of it.
 */
static const char *const default_list[] = {
	"^_IO_file_doallocate$",	/* stdio stream buffers */
	"^setlocale$",			/* the global locale's names */
	"^_nl_find_locale$",		/* locale files and names, cached */
	"^_nl_expand_alias$",		/* locale.alias, cached */
	"^_nl_load_domain$",		/* gettext catalogues */
	"^_dl_allocate_tls$",		/* a thread's TLS vector */
	"^_dl_resize_dtv$",
	"^_dl_update_slotinfo$",	/* dynamic TLS of dlopen()ed objects */
	"^__tls_get_addr$",
	"^_dl_new_object$",		/* the loader's record of an object */
	"^_dl_map_object$",
	"^_dl_check_map_versions$",
	"^_dl_map_object_deps$",	/* a loaded object's dependency lists */
	"^_dl_find_object_update$",	/* _dl_find_object()'s table */
	"^_dlerror_run$",		/* dlerror()'s message buffer */
	"eh_alloc.cc$",			/* libstdc++'s emergency EH pool */
	"^(anonymous namespace)::pool::pool",
	"^__cxa_get_globals",		/* libstdc++'s per-thread EH globals */
	"^__cxa_thread_atexit",
};

static int add(struct ls_supp *s, const char *pattern, size_t len,
	       const char *origin)
{
	struct ls_supp_entry *e;

	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 32;

		e = realloc(s->e, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		s->e = e;
		s->cap = cap;
	}
	e = &s->e[s->n];
	e->pattern = strndup(pattern, len);
	e->origin = strdup(origin);
	e->hits = 0;
	e->runtime_only = 0;
	if (!e->pattern || !e->origin) {
		free(e->pattern);
		free(e->origin);
		return -ENOMEM;
	}
	s->n++;
	return 0;
}

/* The modules of the C and C++ runtimes and the loader, by basename; and
 * the allocators that replace malloc and operator new, whose
 * constructors allocate through their own new (tcmalloc's
 * MallocExtension::Register drops a block its heap checker ignores). */
static const char *const runtime_modules[] = {
	"libc.so", "libstdc++.so", "libgcc_s.so", "libm.so", "ld-linux",
	"libpthread.so", "libdl.so", "libjemalloc.so", "libtcmalloc",
};

static int is_runtime(const char *module)
{
	const char *base = module ? strrchr(module, '/') : NULL;
	size_t i;

	base = base ? base + 1 : module;
	for (i = 0; base && i < sizeof(runtime_modules) / sizeof(*runtime_modules);
	     i++)
		if (!strncmp(base, runtime_modules[i], strlen(runtime_modules[i])))
			return 1;
	return 0;
}

int ls_supp_default(struct ls_supp *s)
{
	size_t i;
	int ret = 0;

	for (i = 0; i < sizeof(default_list) / sizeof(*default_list) && !ret; i++)
		ret = add(s, default_list[i], strlen(default_list[i]),
			  "default");
	/* What a runtime library's constructor allocated: libstdc++'s
	 * emergency exception pool has no symbol to name it by. */
	if (!ret && !(ret = add(s, "<runtime only>", 14, "default")))
		s->e[s->n - 1].runtime_only = 1;
	return ret;
}

/* One line: 0 (entry added or nothing to add), or -EINVAL with why. */
static int parse_line(struct ls_supp *s, char *line, const char *origin,
		      const char **why)
{
	char *end, *colon;
	int ret;

	while (isspace((unsigned char)*line))
		line++;
	end = line + strlen(line);
	while (end > line && isspace((unsigned char)end[-1]))
		*--end = 0;
	if (!*line || *line == '#')
		return 0;
	colon = strchr(line, ':');
	if (!colon) {
		*why = "expected TYPE:PATTERN";
		return -EINVAL;
	}
	if (colon - line != 4 || strncmp(line, "leak", 4)) {
		*why = "unknown suppression type (only 'leak:' is known)";
		return -EINVAL;
	}
	if (!colon[1]) {
		*why = "empty pattern";
		return -EINVAL;
	}
	ret = add(s, colon + 1, strlen(colon + 1), origin);
	if (ret == -ENOMEM)
		*why = "out of memory";
	return ret;
}

int ls_supp_load(struct ls_supp *s, const char *path, char *err, size_t errlen)
{
	size_t keep = s->n, cap = 0, lineno = 0;
	char *line = NULL, origin[4200];
	const char *why = NULL;
	FILE *f = fopen(path, "re");
	int ret = 0;

	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "cannot read suppressions '%s': %s", path,
			 strerror(errno));
		return ret;
	}
	while (!ret && getline(&line, &cap, f) >= 0) {
		lineno++;
		if (strlen(line) != strcspn(line, "\n") + (strchr(line, '\n') != NULL)) {
			why = "NUL byte in the line";
			ret = -EINVAL;
			break;
		}
		line[strcspn(line, "\n")] = 0;
		snprintf(origin, sizeof(origin), "%s:%zu", path, lineno);
		ret = parse_line(s, line, origin, &why);
	}
	if (!ret && ferror(f)) {
		ret = -EIO;
		snprintf(err, errlen, "cannot read suppressions '%s': %s", path,
			 strerror(EIO));
	} else if (ret) {
		snprintf(err, errlen, "%s:%zu: %s", path, lineno, why);
	}
	free(line);
	fclose(f);
	if (ret)
		while (s->n > keep) {
			s->n--;
			free(s->e[s->n].pattern);
			free(s->e[s->n].origin);
		}
	return ret;
}

void ls_supp_release(struct ls_supp *s)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		free(s->e[i].pattern);
		free(s->e[i].origin);
	}
	free(s->e);
	memset(s, 0, sizeof(*s));
}

/* Glob with '*' only, over the whole of str, or (open_end) over any
 * prefix of it. */
static int glob(const char *p, const char *pend, const char *str, int open_end)
{
	const char *star = NULL, *resume = NULL;

	while (*str) {
		if (open_end && p == pend)
			return 1;
		if (p < pend && *p == '*') {
			star = ++p;
			resume = str;
		} else if (p < pend && *p == *str) {
			p++;
			str++;
		} else if (star) {
			p = star;
			str = ++resume;
		} else {
			return 0;
		}
	}
	while (p < pend && *p == '*')
		p++;
	return p == pend;
}

int ls_supp_template_match(const char *tmpl, const char *str)
{
	size_t len = strlen(tmpl);
	int start = tmpl[0] == '^', end = len && tmpl[len - 1] == '$';
	const char *p = tmpl + start, *pend = tmpl + len - end;
	const char *s;

	if (!str)
		return 0;
	if (start)
		return glob(p, pend, str, !end);
	for (s = str;; s++) {	/* unanchored: a match may start anywhere */
		if (glob(p, pend, s, !end))
			return 1;
		if (!*s)
			return 0;
	}
}

static int frame_matches(const char *tmpl, const struct ls_symframe *f)
{
	return ls_supp_template_match(tmpl, f->function) ||
	       ls_supp_template_match(tmpl, f->module) ||
	       ls_supp_template_match(tmpl, f->file);
}

/*
 * glibc's start_thread allocates nothing itself: a stack whose first
 * frame is it is a thread's start routine that tail-called the allocator
 * (`return malloc(n);` at -O2), which left no frame of its own.  The
 * program's block, not the runtime's.
 */
static int tail_called(const struct ls_stack *st)
{
	return st->f[0].function && !strcmp(st->f[0].function, "start_thread");
}

struct ls_supp_entry *ls_supp_match(struct ls_supp *s,
				    struct ls_symbolizer *sym,
				    const struct ls_site *site)
{
	struct ls_stack st = { 0 };
	struct ls_supp_entry *hit = NULL;
	size_t i, k;

	if (!s || !s->n || ls_stack_build(sym, site, &st))
		goto out;
	for (i = 0; i < s->n && !hit; i++) {
		if (s->e[i].runtime_only) {
			for (k = 0; k < st.n && is_runtime(st.f[k].module); k++)
				;
			if (st.n && k == st.n && !tail_called(&st))
				hit = &s->e[i];
			continue;
		}
		for (k = 0; k < st.n && !hit; k++)
			if (frame_matches(s->e[i].pattern, &st.f[k]))
				hit = &s->e[i];
	}
	if (hit)
		hit->hits++;
out:
	ls_stack_release(&st);
	return hit;
}
