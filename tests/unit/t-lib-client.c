/*
 * t-lib-client.c - the control socket client against fake agents: one
 * that trickles its reply a byte at a time (each read comes in time, the
 * whole never does) must be cut off by the client's overall deadline.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "../../common/lsnap.h"
#include "../../lib/client.h"
#include "../../lib/util.h"
#include "tap.h"

static char dir[] = "/tmp/leakscope-t-client.XXXXXX";
static char sock_path[108];
static int listen_fd = -1;
static volatile int stop;

/* Accept one connection, read the request, then send a well-formed
 * start of a snapshot (file header, a HEADER record announcing its
 * payload) and that payload one byte every 20 ms until told to stop. */
static void *trickler(void *arg)
{
	struct lsnap_file_hdr fh = { .magic = LSNAP_MAGIC,
				     .version = LSNAP_VERSION };
	struct lsnap_rec_hdr rh = { .tag = LSNAP_HEADER,
				    .len = sizeof(struct lsnap_header) };
	struct timespec gap = { 0, 20 * 1000 * 1000 };
	int c = accept(listen_fd, NULL, NULL);
	char req[128];

	if (c < 0)
		return NULL;
	if (recv(c, req, sizeof(req), 0) < 0 ||
	    send(c, &fh, sizeof(fh), MSG_NOSIGNAL) != sizeof(fh) ||
	    send(c, &rh, sizeof(rh), MSG_NOSIGNAL) != sizeof(rh))
		goto out;
	while (!stop && send(c, "", 1, MSG_NOSIGNAL) == 1)
		nanosleep(&gap, NULL);
out:
	close(c);
	return NULL;
}

static int listen_at(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	snprintf(sock_path, sizeof(sock_path), "%s/%d.sock", dir, (int)getpid());
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock_path);
	listen_fd = socket(AF_UNIX, SOCK_STREAM, 0);
	return listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&a, sizeof(a)) ||
	       listen(listen_fd, 4);
}

int main(int argc, char **argv)
{
	struct ls_snapshot snap;
	char err[512];
	pthread_t th;
	uint64_t t0, took;
	int r;

	/* The client finds a pid's socket through the environment the pid
	 * started with (/proc/PID/environ): start again with the runtime
	 * dir in it. */
	if (!getenv("LEAKSCOPE_RUNTIME_DIR")) {
		if (!mkdtemp(dir) || setenv("LEAKSCOPE_RUNTIME_DIR", dir, 1))
			return printf("Bail out! no temporary dir\n"), 1;
		execv("/proc/self/exe", argv);
		return printf("Bail out! cannot re-execute\n"), 1;
	}
	snprintf(dir, sizeof(dir), "%s", getenv("LEAKSCOPE_RUNTIME_DIR"));
	if (listen_at()) {
		printf("Bail out! cannot set up a socket in %s\n", dir);
		return 1;
	}
	/* 200 ms per read: every trickled byte comes in time; the whole
	 * reply is due within 4 x 200 ms. */
	ls_client_set_timeout(200);
	pthread_create(&th, NULL, trickler, NULL);
	t0 = ls_mono_ns();
	r = ls_client_snapshot(getpid(), 0, &snap, err, sizeof(err));
	took = ls_mono_ns() - t0;
	stop = 1;
	shutdown(listen_fd, SHUT_RDWR);	/* an accept() still waiting ends */
	pthread_join(th, NULL);
	ok(r == -ETIMEDOUT, "a trickling agent: -ETIMEDOUT (got %d: %s)", r, err);
	ok(took >= 700 * 1000000ull && took < 10000 * 1000000ull,
	   "cut off at the overall deadline (800 ms), not per read: %.0f ms",
	   took / 1e6);
	ok(strstr(err, "timed out") != NULL, "the reason says it timed out: %s",
	   err);
	unlink(sock_path);
	rmdir(dir);
	return tap_done();
}
