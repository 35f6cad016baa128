/*
 * drop-priv.c - a daemon that drops privileges at start, as root under
 * the agent: `drop-priv UID GID` calls setgid(GID) and setuid(UID) at
 * once (the agent moves its control socket and post-mortem file into
 * UID's runtime dir just before), leaks one block of 100 bytes in
 * site_dropped, writes "dropped UID" to stdout and exits 0.  Exits 2
 * when a call fails, or when the successful setuid() left errno other
 * than it found it.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include "wl.h"

WL_SITE static void site_dropped(void)
{
	wl_sink = malloc(100); /* @site_dropped */
	WL_BARRIER();
}

int main(int argc, char **argv)
{
	uid_t uid;
	gid_t gid;

	WL_CHECK(argc == 3, "usage: drop-priv UID GID");
	uid = (uid_t)atol(argv[1]);
	gid = (gid_t)atol(argv[2]);
	WL_CHECK(!setgid(gid), "setgid");
	errno = EDOM;
	WL_CHECK(!setuid(uid), "setuid");
	WL_CHECK(errno == EDOM, "errno after a successful setuid: %d", errno);
	WL_CHECK(getuid() == uid && geteuid() == uid, "uid after setuid");
	site_dropped();
	wl_say(1, "dropped %u\n", (unsigned)getuid());
	return 0;
}
