/*
 * scratch.h - a scratch dir for the unit tests that read files: made
 * once, filled by name, removed with all it holds at the end.
 *
 *   if (scratch_make("perfmap"))
 *           return 1;
 *   path = scratch_file("a.map", "text");
 *   scratch_remove();
 *
 * scratch_file returns its path in a static buffer that the next call
 * overwrites.  scratch_remove runs rm, so it forks: a test that must not
 * fork any more (its next child would be a new PID namespace's pid 1)
 * calls it before.
 */
#ifndef LEAKSCOPE_TESTS_SCRATCH_H
#define LEAKSCOPE_TESTS_SCRATCH_H

#include <stdio.h>
#include <stdlib.h>

static char scratch_dir[64];

/* 0, or -1 with the reason printed. */
static inline int scratch_make(const char *what)
{
	snprintf(scratch_dir, sizeof(scratch_dir), "/tmp/leakscope-%s-XXXXXX",
		 what);
	if (!mkdtemp(scratch_dir)) {
		perror("mkdtemp");
		return -1;
	}
	return 0;
}

static inline const char *scratch_file(const char *name, const char *text)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", scratch_dir, name);
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	return path;
}

static inline void scratch_remove(void)
{
	char cmd[sizeof(scratch_dir) + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch_dir);
	if (system(cmd))
		fprintf(stderr, "# cannot remove %s\n", scratch_dir);
}

#endif
