/*
 * fuzz-reply.c - the command's side of the control protocol
 * (lib/client.c, docs/CONTROL-PROTOCOL.md): what it makes of an agent's
 * reply.
 *
 * A fake agent, a thread of the fuzzer, listens on this process's own
 * control socket (in a private runtime dir: the fuzzer re-executes itself
 * with LEAKSCOPE_RUNTIME_DIR set when it is not, since the command reads
 * the target's initial environment).  The input's first byte picks the
 * request (a snapshot with or without blocks, a one-line request, a raw
 * fetch, a check), the rest is the reply the agent sends before it
 * closes.  Snapshot replies get their END record fixed (fuzz.h).  The
 * client must answer 0 or a negative errno with one line, within its
 * deadline, and never read or write out of bounds.  A check stops at
 * ptrace, which refuses to stop the fuzzer itself: its READY line is
 * what gets parsed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "../../common/contract.h"
#include "../../lib/client.h"
#include "fuzz.h"

#define WAIT_MS 5000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static const uint8_t *reply;	/* what the next connection gets */
static size_t reply_len;
static unsigned long served;	/* connections answered and closed */

/* The request line, within a second; what it says does not matter. */
static void read_request(int fd)
{
	char buf[LS_CONTROL_MAX_REQUEST];
	size_t len = 0;

	while (len < sizeof(buf)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		int r = poll(&p, 1, 1000);

		if (r < 0 && errno == EINTR)	/* libFuzzer's alarm */
			continue;
		if (r <= 0)
			return;
		n = recv(fd, buf + len, sizeof(buf) - len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || memchr(buf + len, '\n', (size_t)n))
			return;
		len += (size_t)n;
	}
}

static void *fake_agent(void *arg)
{
	int lfd = *(int *)arg;

	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		const uint8_t *p;
		uint8_t *copy;
		size_t len;

		if (fd < 0)
			continue;
		read_request(fd);
		/* A copy: a connection served late (its client gave up
		 * waiting) must not read an input that is gone. */
		pthread_mutex_lock(&lock);
		len = reply_len;
		p = copy = malloc(len ? len : 1);
		if (copy && len)
			memcpy(copy, reply, len);
		pthread_mutex_unlock(&lock);
		if (!copy)
			fuzz_fail("out of memory");
		while (len) {	/* until done or the client closes */
			ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			p += n;
			len -= (size_t)n;
		}
		close(fd);
		free(copy);
		pthread_mutex_lock(&lock);
		served++;
		pthread_cond_broadcast(&cond);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static struct sockaddr_un addr = { .sun_family = AF_UNIX };
	static int lfd;
	pthread_t th;

	fuzz_private(*argv, 0);
	if (ls_client_socket_path(getpid(), addr.sun_path, sizeof(addr.sun_path)))
		fuzz_fail("socket path too long");
	unlink(addr.sun_path);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* As the agent makes it: 0600, in a 0700 dir of ours. */
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) ||
	    chmod(addr.sun_path, 0600) || listen(lfd, 8) ||
	    pthread_create(&th, NULL, fake_agent, &lfd))
		fuzz_fail("cannot serve '%s': %s", addr.sun_path, strerror(errno));
	pthread_detach(th);
	ls_client_set_timeout(1000);
	return 0;
}

/* The fake agent has closed the connection the client made. */
static void wait_served(unsigned long before)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += WAIT_MS / 1000;
	pthread_mutex_lock(&lock);
	while (served == before)
		if (pthread_cond_timedwait(&cond, &lock, &until) == ETIMEDOUT)
			fuzz_fail("the client never connected to the fake agent");
	pthread_mutex_unlock(&lock);
}

static void ask(unsigned mode, char *err, size_t errlen)
{
	struct ls_snapshot snap;
	char line[256];
	int r = 0, fd;

	switch (mode % 5) {
	case 0:
	case 1:
		r = ls_client_snapshot(getpid(), mode & 1, &snap, err, errlen);
		if (!r)
			ls_snapshot_release(&snap);
		break;
	case 2:
		r = ls_client_request(getpid(), LS_VERB_PING, line,
				      sizeof(line), err, errlen);
		if (!r && (strlen(line) >= sizeof(line) || strchr(line, '\n')))
			fuzz_fail("a reply line of %zu bytes with a newline",
				  strlen(line));
		break;
	case 3:
		fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		r = ls_client_fetch(getpid(), 1, fd, err, errlen);
		close(fd);
		break;
	case 4:
		r = ls_client_check(getpid(), 0, LS_CHECK_CONCURRENT,
				    LS_CHECK_BUDGET_US, &snap,
				    err, errlen);
		if (!r)
			fuzz_fail("a check of the fuzzer itself succeeded");
		break;
	}
	if (r)
		fuzz_check_error("agent reply", r, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *body = NULL;
	unsigned long before;
	char err[1024];
	unsigned mode;

	if (!size)
		return 0;
	mode = data[0];
	if (mode % 5 < 2 && size > 1)
		body = fuzz_fix_snapshot(data + 1, size - 1);
	pthread_mutex_lock(&lock);
	reply = body ? body : data + 1;
	reply_len = size - 1;
	before = served;
	pthread_mutex_unlock(&lock);
	err[0] = 0;
	ask(mode, err, sizeof(err));
	wait_served(before);
	pthread_mutex_lock(&lock);	/* the input goes: nothing copies it */
	reply = NULL;
	reply_len = 0;
	pthread_mutex_unlock(&lock);
	free(body);
	return 0;
}
