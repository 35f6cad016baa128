/*
 * suppress.h - leak suppressions in LeakSanitizer's syntax.
 *
 * A file holds one entry a line, `leak:PATTERN`; blank lines and lines
 * starting with '#' are ignored, spaces around an entry too.  A pattern
 * matches a frame when it matches the frame's function name, its module's
 * path or its source file's path: `*` matches any run of characters, `^`
 * at the start and `$` at the end anchor it; otherwise it may match
 * anywhere inside (LeakSanitizer's rule).  A site is suppressed when one
 * pattern matches one of its frames (inlined frames included).
 *
 * ls_supp_default() adds the built-in list: the C and C++ runtimes'
 * one-time allocations (stdio buffers, locale data, the dynamic loader's
 * TLS and object records, libstdc++'s emergency exception pool), which no
 * program can free; among them, every stack made only of frames of the
 * C and C++ runtimes, the dynamic loader, jemalloc and tcmalloc (what a
 * runtime library's constructor allocated, no program code on the stack).
 *
 * Not thread-safe; no output, no exit (lib/ rules).
 */
#ifndef LEAKSCOPE_SUPPRESS_H
#define LEAKSCOPE_SUPPRESS_H

#include <stddef.h>
#include <stdio.h>
#include "snapshot.h"

struct ls_symbolizer;

struct ls_supp_entry {
	char *pattern;		/* owned, without "leak:" */
	int runtime_only;	/* built-in: matches a stack made only of
				   the runtimes' and the loader's frames */
	char *origin;		/* owned: "FILE:LINE" or "default" */
	uint64_t hits;		/* sites it suppressed in the last apply */
};

struct ls_supp {
	struct ls_supp_entry *e;
	size_t n, cap;
};

/*
 * Add the entries of file path.  Returns 0, or a negative errno with a
 * one-line reason naming the file (and line, for a bad entry: -EINVAL) in
 * err; on error nothing of the file is kept.
 */
int ls_supp_load(struct ls_supp *s, const char *path, char *err, size_t errlen);
/* Add the built-in list; 0 or -ENOMEM. */
int ls_supp_default(struct ls_supp *s);
void ls_supp_release(struct ls_supp *s);

/* Does the template match str (LeakSanitizer's rules above)? */
int ls_supp_template_match(const char *tmpl, const char *str);

/*
 * The entry suppressing site, or NULL: its frames symbolized through sym
 * (built for the site's snapshot).  Counts the hit.
 */
struct ls_supp_entry *ls_supp_match(struct ls_supp *s,
				    struct ls_symbolizer *sym,
				    const struct ls_site *site);

#endif
