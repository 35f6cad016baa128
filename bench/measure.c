/*
 * measure.c - run one command and say what it and each of its descendants
 * cost: wall time, CPU time and peak RSS per process.
 *
 *   measure [-o FILE] [-t TIMEOUT_SECONDS] [-m LIMIT_MIB] -- CMD [ARGS...]
 *
 * Writes one JSON object (to FILE, or stdout) once CMD has exited:
 *   {"wall_s": 1.23, "exit_code": 0, "signal": 0, "timed_out": false,
 *    "mem_limit_hit": false, "tree_rss_seen_kb": 1234,
 *    "tree_maxrss_kb": 1234, "taskstats": true, "taskstats_error": "",
 *    "lost_records": 0,
 *    "procs": [{"pid": 1, "ppid": 0, "comm": "x", "etime_us": 1,
 *               "utime_us": 1, "stime_us": 1, "hiwater_rss_kb": 1,
 *               "threads": 1}, ...]}
 *
 * Why: the benchmark runs programs under trackers (leakscope run, heaptrack)
 * that put processes of their own around the target.  wait4() only tells
 * the maximum RSS over the whole waited-for tree, which then includes, for
 * example, heaptrack_interpret.  The kernel's taskstats interface sends an
 * accounting record for every task at its exit, taken before the task
 * drops its memory, with the peak RSS of its address space (hiwater_rss)
 * and its elapsed time since fork.  We listen to those records while CMD
 * runs and keep the ones of CMD's descendants, so the caller can pick the
 * traced program's own figures.  Listening needs CAP_NET_ADMIN (root);
 * without it "taskstats" is false and only tree_maxrss_kb is known.
 *
 * CMD runs in a process group of its own; on timeout, or when the resident
 * memory of CMD and its descendants (sampled from /proc once a second)
 * passes LIMIT_MIB, the whole group gets SIGKILL: the machine is shared
 * and a tracker that runs away must not take it down.  CMD's stdin, stdout and stderr are ours.  Records of processes
 * that outlive CMD, or that were orphaned before they exited, are missed.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS 4096
#define MAX_SCAN 65536		/* processes looked at in one /proc scan */
#define NL_BUF (64 * 1024)

struct proc {
	uint32_t pid;		/* thread group id */
	uint32_t ppid;
	char comm[TS_COMM_LEN];
	uint64_t etime_us;	/* of the thread-group leader */
	uint64_t utime_us;	/* summed over its threads */
	uint64_t stime_us;
	uint64_t hiwater_rss_kb;
	unsigned threads;
};

struct measure {
	int nl;			/* taskstats socket, -1 if none */
	uint16_t family;
	char nl_error[128];
	struct proc procs[MAX_PROCS];
	unsigned nprocs;
	unsigned lost;
	long limit_kb;		/* 0 = no memory limit */
	long rss_seen_kb;	/* largest tree RSS a scan saw */
};

struct scan_entry {
	pid_t pid, ppid;
	long rss_kb;
	int mine;
};

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Append one netlink attribute; returns the new message length. */
static size_t nla_put(char *msg, size_t len, uint16_t type, const void *data,
		      size_t size)
{
	struct nlattr *a = (struct nlattr *)(msg + NLMSG_ALIGN(len));

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + size;
	memcpy((char *)a + NLA_HDRLEN, data, size);
	return NLMSG_ALIGN(len) + NLA_ALIGN(a->nla_len);
}

static int genl_send(int fd, uint16_t family, uint8_t cmd, uint16_t attr,
		     const void *data, size_t size)
{
	char msg[256] = { 0 };
	struct nlmsghdr *nh = (struct nlmsghdr *)msg;
	struct genlmsghdr *gh = NLMSG_DATA(nh);
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	size_t len = NLMSG_LENGTH(GENL_HDRLEN);

	if (size > sizeof(msg) - NLMSG_ALIGN(len) - NLA_HDRLEN)
		return -EMSGSIZE;
	gh->cmd = cmd;
	gh->version = 1;
	len = nla_put(msg, len, attr, data, size);
	nh->nlmsg_len = len;
	nh->nlmsg_type = family;
	nh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	if (sendto(fd, msg, len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	return 0;
}

/* Loop a over the attributes in [p, p + len), stopping at a malformed one. */
#define NLA_FOR_EACH(a, p, len)						\
	for (a = (struct nlattr *)(p);					\
	     (char *)a + NLA_HDRLEN <= (char *)(p) + (len) &&		\
	     a->nla_len >= NLA_HDRLEN &&				\
	     (char *)a + a->nla_len <= (char *)(p) + (len);		\
	     a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len)))

/* The family id in a CTRL_CMD_GETFAMILY answer, if it holds one. */
static void genl_family_id(struct nlmsghdr *nh, uint16_t *family)
{
	char *p = (char *)NLMSG_DATA(nh) + GENL_HDRLEN;
	struct nlattr *a;

	NLA_FOR_EACH(a, p, nh->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN))
		if (a->nla_type == CTRL_ATTR_FAMILY_ID)
			memcpy(family, (char *)a + NLA_HDRLEN, sizeof(*family));
}

/*
 * Read the answers to one request up to its ack, picking the family id
 * out if asked to.  Returns 0 or the negative errno the kernel answered.
 */
static int genl_reply(int fd, uint16_t *family)
{
	static char buf[NL_BUF];

	if (family)
		*family = 0;
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *nh;

		if (n < 0)
			return -errno;
		for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, n); nh = NLMSG_NEXT(nh, n)) {
			if (nh->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(nh);

				if (e->error)
					return e->error;
				return family && !*family ? -EPROTO : 0;
			}
			if (family && nh->nlmsg_type == GENL_ID_CTRL)
				genl_family_id(nh, family);
		}
	}
}

static int cpu_mask(char *buf, size_t size)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
	int ok;

	if (!f)
		return -errno;
	ok = fgets(buf, size, f) != NULL;
	fclose(f);
	if (!ok)
		return -EIO;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int taskstats_open(struct measure *m)
{
	struct sockaddr_nl self = { .nl_family = AF_NETLINK };
	int rcvbuf = 8 << 20;
	char mask[256];
	int err;

	m->nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (m->nl < 0 || bind(m->nl, (struct sockaddr *)&self, sizeof(self)) < 0) {
		err = -errno;
		goto out;
	}
	/* Exit records of unrelated processes share the buffer: make it big. */
	if (setsockopt(m->nl, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0)
		setsockopt(m->nl, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	err = genl_send(m->nl, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, CTRL_ATTR_FAMILY_NAME,
			TASKSTATS_GENL_NAME, sizeof(TASKSTATS_GENL_NAME));
	if (!err)
		err = genl_reply(m->nl, &m->family);
	if (!err)
		err = cpu_mask(mask, sizeof(mask));
	if (!err)
		err = genl_send(m->nl, m->family, TASKSTATS_CMD_GET,
				TASKSTATS_CMD_ATTR_REGISTER_CPUMASK, mask, strlen(mask) + 1);
	if (!err)
		err = genl_reply(m->nl, NULL);
out:
	if (err) {
		snprintf(m->nl_error, sizeof(m->nl_error), "cannot listen to taskstats: %s",
			 strerror(-err));
		if (m->nl >= 0)
			close(m->nl);
		m->nl = -1;
	}
	return err;
}

static struct proc *proc_get(struct measure *m, uint32_t tgid)
{
	unsigned i;

	for (i = 0; i < m->nprocs; i++)
		if (m->procs[i].pid == tgid)
			return &m->procs[i];
	if (m->nprocs == MAX_PROCS) {
		m->lost++;
		return NULL;
	}
	m->procs[m->nprocs].pid = tgid;
	return &m->procs[m->nprocs++];
}

/* Fold one thread's exit record into its process. */
static void proc_add(struct measure *m, const struct taskstats *ts)
{
	uint32_t tgid = ts->version >= 12 && ts->ac_tgid ? ts->ac_tgid : ts->ac_pid;
	struct proc *p = proc_get(m, tgid);

	if (!p)
		return;
	p->threads++;
	p->utime_us += ts->ac_utime;
	p->stime_us += ts->ac_stime;
	if (ts->hiwater_rss > p->hiwater_rss_kb)
		p->hiwater_rss_kb = ts->hiwater_rss;
	if (ts->ac_pid == tgid || !p->comm[0]) {
		p->ppid = ts->ac_ppid;
		p->etime_us = ts->ac_etime;
		memcpy(p->comm, ts->ac_comm, sizeof(p->comm));
		p->comm[sizeof(p->comm) - 1] = '\0';
	}
}

static void taskstats_msg(struct measure *m, struct nlmsghdr *nh)
{
	char *p = (char *)NLMSG_DATA(nh) + GENL_HDRLEN;
	struct nlattr *a, *b;

	if (nh->nlmsg_type != m->family)
		return;
	NLA_FOR_EACH(a, p, nh->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN)) {
		if (a->nla_type != TASKSTATS_TYPE_AGGR_PID)
			continue;
		NLA_FOR_EACH(b, (char *)a + NLA_HDRLEN, a->nla_len - NLA_HDRLEN) {
			struct taskstats ts = { 0 };
			size_t len = b->nla_len - NLA_HDRLEN;

			if (b->nla_type != TASKSTATS_TYPE_STATS)
				continue;
			/* A newer kernel's record is longer: its head is ours. */
			memcpy(&ts, (char *)b + NLA_HDRLEN, len < sizeof(ts) ? len : sizeof(ts));
			proc_add(m, &ts);
		}
	}
}

static void taskstats_drain(struct measure *m)
{
	static char buf[NL_BUF];
	ssize_t n;

	if (m->nl < 0)
		return;
	while ((n = recv(m->nl, buf, sizeof(buf), MSG_DONTWAIT)) > 0 || (n < 0 && errno == ENOBUFS)) {
		struct nlmsghdr *nh;

		if (n < 0) {
			m->lost++;	/* the socket overflowed */
			continue;
		}
		for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, n); nh = NLMSG_NEXT(nh, n))
			taskstats_msg(m, nh);
	}
}

/* Is pid the root or below it?  Every record's parent is known or ends it. */
static int descends_from(const struct measure *m, uint32_t pid, uint32_t root)
{
	unsigned hops, i;

	for (hops = 0; hops < MAX_PROCS; hops++) {
		if (pid == root)
			return 1;
		for (i = 0; i < m->nprocs && m->procs[i].pid != pid; i++)
			;
		if (i == m->nprocs)
			return 0;
		pid = m->procs[i].ppid;
	}
	return 0;
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void report(FILE *f, const struct measure *m, pid_t child, double wall,
		   int status, int killed, const struct rusage *ru)
{
	const char *sep = "";
	unsigned i;

	fprintf(f, "{\"wall_s\": %.6f, \"exit_code\": %d, \"signal\": %d, \"timed_out\": %s,\n",
		wall, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
		WIFSIGNALED(status) ? WTERMSIG(status) : 0, killed == 1 ? "true" : "false");
	fprintf(f, " \"mem_limit_hit\": %s, \"tree_rss_seen_kb\": %ld,\n",
		killed == 2 ? "true" : "false", m->rss_seen_kb);
	fprintf(f, " \"tree_maxrss_kb\": %ld, \"taskstats\": %s, \"taskstats_error\": ",
		ru->ru_maxrss, m->nl >= 0 ? "true" : "false");
	json_string(f, m->nl_error);
	fprintf(f, ", \"lost_records\": %u,\n \"procs\": [", m->lost);
	for (i = 0; i < m->nprocs; i++) {
		const struct proc *p = &m->procs[i];

		if (!descends_from(m, p->pid, child))
			continue;
		fprintf(f, "%s\n  {\"pid\": %u, \"ppid\": %u, \"comm\": ", sep, p->pid, p->ppid);
		json_string(f, p->comm);
		fprintf(f, ", \"etime_us\": %llu, \"utime_us\": %llu, \"stime_us\": %llu, "
			"\"hiwater_rss_kb\": %llu, \"threads\": %u}",
			(unsigned long long)p->etime_us, (unsigned long long)p->utime_us,
			(unsigned long long)p->stime_us, (unsigned long long)p->hiwater_rss_kb,
			p->threads);
		sep = ",";
	}
	fprintf(f, "]}\n");
}

static int read_stat(pid_t pid, struct scan_entry *e)
{
	char path[64], buf[1024], *p;
	long pages;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	/* The command name may hold anything: fields restart after its ')'. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u "
			 "%*d %*d %*d %*d %*d %*d %*u %*u %ld", &e->ppid, &pages) != 2)
		return -EPROTO;
	e->pid = pid;
	e->rss_kb = pages * (sysconf(_SC_PAGESIZE) / 1024);
	e->mine = 0;
	return 0;
}

/* Resident memory of root and all its descendants now, in KiB. */
static long tree_rss_kb(pid_t root)
{
	static struct scan_entry e[MAX_SCAN];
	struct dirent *d;
	unsigned n = 0, i, changed = 1;
	long sum = 0;
	DIR *dir = opendir("/proc");

	if (!dir)
		return 0;
	while ((d = readdir(dir)) && n < MAX_SCAN) {
		if (!isdigit((unsigned char)d->d_name[0]) || read_stat(atoi(d->d_name), &e[n]))
			continue;
		e[n].mine = e[n].pid == root;
		n++;
	}
	closedir(dir);
	/* Mark children of marked processes until nothing changes: trees are shallow. */
	while (changed) {
		changed = 0;
		for (i = 0; i < n; i++) {
			unsigned j;

			for (j = 0; !e[i].mine && j < n; j++)
				if (e[j].mine && e[j].pid == e[i].ppid)
					e[i].mine = changed = 1;
		}
	}
	for (i = 0; i < n; i++)
		sum += e[i].mine ? e[i].rss_kb : 0;
	return sum;
}

/* Over the memory limit?  Checked at most once a second. */
static int over_limit(struct measure *m, pid_t child)
{
	static double next;
	long kb;

	if (!m->limit_kb || mono_now() < next)
		return 0;
	next = mono_now() + 1.0;
	kb = tree_rss_kb(child);
	if (kb > m->rss_seen_kb)
		m->rss_seen_kb = kb;
	return kb > m->limit_kb;
}

static pid_t spawn(char **argv)
{
	pid_t pid = fork();

	if (pid == 0) {
		setpgid(0, 0);
		execvp(argv[0], argv);
		fprintf(stderr, "measure: cannot run '%s': %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (pid > 0)
		setpgid(pid, pid);	/* both sides, so no race with the kill */
	return pid;
}

/*
 * Wait for child, reading exit records meanwhile; kill it at the deadline
 * or over the memory limit.  Returns 0, or what killed it: 1 = time,
 * 2 = memory.
 */
static int wait_child(struct measure *m, pid_t child, double deadline,
		      int *status, struct rusage *ru)
{
	int pidfd = syscall(SYS_pidfd_open, child, 0);
	int killed = 0;

	for (;;) {
		struct pollfd fds[2] = { { .fd = pidfd, .events = POLLIN },
					 { .fd = m->nl, .events = POLLIN } };
		double left = deadline - mono_now();

		if (!killed && (left <= 0 || over_limit(m, child))) {
			killed = left <= 0 ? 1 : 2;
			kill(-child, SIGKILL);
		}
		if (pidfd < 0 || poll(fds, 2, left > 0 && left < 1 ? (int)(left * 1000) + 1 : 1000) < 0)
			usleep(10000);	/* no pidfd: poll for the exit */
		taskstats_drain(m);
		if (wait4(child, status, WNOHANG, ru) == child)
			break;
	}
	if (pidfd >= 0)
		close(pidfd);
	return killed;
}

int main(int argc, char **argv)
{
	static struct measure m;
	const char *out = NULL;
	double timeout = 0, t0, wall;
	struct rusage ru = { 0 };
	int opt, status = 0, killed;
	FILE *f = stdout;
	pid_t child;

	while ((opt = getopt(argc, argv, "+o:t:m:")) != -1) {
		if (opt == 'o')
			out = optarg;
		else if (opt == 't')
			timeout = atof(optarg);
		else if (opt == 'm')
			m.limit_kb = atol(optarg) * 1024;
		else
			goto usage;
	}
	if (optind >= argc)
		goto usage;
	taskstats_open(&m);
	t0 = mono_now();
	child = spawn(argv + optind);
	if (child < 0) {
		fprintf(stderr, "measure: cannot fork: %s\n", strerror(errno));
		return 1;
	}
	killed = wait_child(&m, child, timeout > 0 ? t0 + timeout : 1e300, &status, &ru);
	wall = mono_now() - t0;
	taskstats_drain(&m);
	if (out && !(f = fopen(out, "w"))) {
		fprintf(stderr, "measure: cannot write '%s': %s\n", out, strerror(errno));
		return 1;
	}
	report(f, &m, child, wall, status, killed, &ru);
	return fclose(f) ? 1 : 0;
usage:
	fprintf(stderr, "usage: measure [-o FILE] [-t TIMEOUT_SECONDS] [-m LIMIT_MIB] -- CMD [ARGS...]\n");
	return 2;
}
