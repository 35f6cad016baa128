/*
 * switch.c - following the process through user and namespace switches.
 *
 * A pre-fork worker (nginx, apache) that setuid()s to an unprivileged
 * user long after its control socket was made (in root's runtime dir)
 * would be out of everyone's reach: the CLI looks for a process's socket
 * in its owner's runtime dir (common/runtime.h), and the new user can
 * neither write into root's 0700 dirs nor remove what it left there.  So
 * just before the switch, while still privileged, the socket and the
 * post-mortem file move into the new user's runtime dir, owned by that
 * user, and the exit snapshot's file is created in the out dir.  If the
 * switch fails they move back.  That dir is the new user's to change at
 * any moment: nothing there is done by root through a name (the socket is
 * bound by this thread as that user, the file moved and chowned through
 * descriptors; docs/SECURITY.md).
 *
 * unshare(CLONE_NEWUSER) and setns() need a single-threaded process: the
 * agent's own threads (control, a fork child's waker) are ended around
 * the call and started again after it.
 *
 * These are no allocation hooks: rare calls, full work allowed, guarded
 * so that what the agent allocates here is not tracked.
 *
 * NEEDSWORK: `leakscope attach` (agent/attach.c) does not redirect these
 * calls; seteuid() alone (a temporary drop, euid only) is not followed.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "../common/runtime.h"
#include "agent.h"
#include "control.h"
#include "guard.h"
#include "pmfile.h"
#include "real.h"
#include "rundir.h"
#include "state.h"

#define LS_EXPORT __attribute__((visibility("default")))

/* Flags that unshare() refuses (EINVAL) in a multi-threaded process. */
#define SINGLE_THREAD_FLAGS (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | \
			     CLONE_VM)

static int active(void)
{
	return ls_agent_on() && !ls_guard_held() && ls_agent.pid == getpid();
}

/* The real function, or the raw system call while the real functions
 * are being resolved (only glibc's setuid() changes every thread's
 * credentials, but nothing runs a second thread that early). */
#define REAL(fn, sys, ...)						\
	(ls_real_init(), ls_real.fn ? ls_real.fn(__VA_ARGS__) :	\
	 (int)syscall(sys, __VA_ARGS__))

/*
 * dir, made if missing, a private dir owned by uid:gid: its fd, or
 * -errno.  Only its own name is looked up (in /dev/shm or /tmp, not a
 * directory of uid's), without following a link; what is changed is
 * changed through the fd.
 */
static int user_dir(const char *dir, uid_t uid, gid_t gid)
{
	struct stat st;
	int fd, r = -EPERM;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		r = -errno;
		goto fail;
	}
	if (st.st_uid == uid && !(st.st_mode & 022))
		return fd;
	if (st.st_uid != geteuid())	/* made by someone else */
		goto fail;
	if (fchown(fd, uid, gid) || fchmod(fd, 0700)) {
		r = -errno;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return r;
}

/*
 * Socket and post-mortem file into dir (cap bytes) for uid:gid; 0 or
 * -errno.  When dir is squatted (another user's, a link, not a dir), into
 * uid's private fallback beside it instead, the one the CLI finds by the
 * same rule (agent/rundir.c, lib/procinfo.c), and dir names it.
 */
static int move_to(char *dir, size_t cap, uid_t uid, gid_t gid)
{
	char was[sizeof(ls_agent.runtime_dir)];
	int fd = user_dir(dir, uid, gid), r;

	if (fd == -EPERM || fd == -ENOTDIR || fd == -ELOOP) {
		snprintf(was, sizeof(was), "%s", dir);
		fd = ls_rundir_fallback_for(dir, cap, uid, gid);
		if (fd >= 0)
			ls_state_note("runtime dir '%s' of uid %u is not a "
				      "directory of that user's that only it "
				      "can write (squatted?): using '%s'",
				      was, (unsigned)uid, dir);
	}
	if (fd < 0)
		return fd;
	r = ls_control_move(fd, dir, uid, gid);
	/* NEEDSWORK: on another file system (EXDEV) the post-mortem file
	 * is removed rather than copied: none after the switch. */
	if (!r) {
		ls_pm_move(fd, uid, gid);
		snprintf(ls_agent.runtime_dir, sizeof(ls_agent.runtime_dir),
			 "%s", dir);
	}
	close(fd);
	return r;
}

struct moved {
	int done;
	char dir[sizeof(ls_agent.runtime_dir)];
	uid_t uid;
	gid_t gid;
};

/* Before the effective uid becomes to (-1: unchanged). */
static void before_switch(uid_t to, struct moved *m)
{
	char dir[sizeof(ls_agent.runtime_dir)];
	int e = errno;	/* a successful switch leaves the program's */

	m->done = 0;
	if (to == (uid_t)-1 || to == geteuid() || geteuid() != 0 || !active())
		return;
	ls_guard_enter();
	ls_agent_open_exit_report();
	memcpy(dir, ls_agent.runtime_dir, sizeof(dir));
	/* Whether the socket exists decides, not whether the control
	 * thread runs: the socket is bound before the thread starts, and a
	 * worker that switches in between (a loaded machine) would leave
	 * it in root's dir.  No socket yet (a fresh fork child): it is
	 * made in the right dir by itself (-ENOTCONN). */
	if (dir[0] &&
	    ls_runtime_dir_owned((unsigned)to, dir, sizeof(dir)) == 1) {
		int r;

		memcpy(m->dir, ls_agent.runtime_dir, sizeof(m->dir));
		m->uid = geteuid();
		m->gid = getegid();
		r = move_to(dir, sizeof(dir), to, getegid());
		if (!r)
			m->done = 1;
		else if (r != -ENOTCONN)
			ls_state_note("could not move the control socket to "
				      "'%s' for uid %u: only root can ask "
				      "this process now", dir, (unsigned)to);
	}
	ls_guard_leave();
	errno = e;
}

static int after_switch(int r, struct moved *m)
{
	int e = errno;

	if (r && m->done) {	/* still privileged: back where it was */
		ls_guard_enter();
		move_to(m->dir, sizeof(m->dir), m->uid, m->gid);
		ls_guard_leave();
	}
	errno = e;
	return r;
}

LS_EXPORT int setuid(uid_t uid)
{
	struct moved m;

	before_switch(uid, &m);
	return after_switch(REAL(setuid, SYS_setuid, uid), &m);
}

LS_EXPORT int setreuid(uid_t ruid, uid_t euid)
{
	struct moved m;

	before_switch(euid, &m);
	return after_switch(REAL(setreuid, SYS_setreuid, ruid, euid), &m);
}

LS_EXPORT int setresuid(uid_t ruid, uid_t euid, uid_t suid)
{
	struct moved m;

	before_switch(euid, &m);
	return after_switch(REAL(setresuid, SYS_setresuid, ruid, euid, suid),
			    &m);
}

/* fn(a, b) with the agent's threads ended around it. */
static int single_threaded(int (*fn)(int, int), int a, int b, int need)
{
	int paused = 0, r, e;

	if (!need || !active())
		return fn(a, b);
	ls_guard_enter();
	paused = ls_agent_threads_pause();
	ls_guard_leave();
	r = fn(a, b);
	e = errno;
	ls_guard_enter();
	ls_agent_threads_resume(paused);
	ls_guard_leave();
	errno = e;
	return r;
}

static int call_unshare(int flags, int unused)
{
	(void)unused;
	return REAL(unshare, SYS_unshare, flags);
}

static int call_setns(int fd, int nstype)
{
	return REAL(setns, SYS_setns, fd, nstype);
}

LS_EXPORT int unshare(int flags)
{
	return single_threaded(call_unshare, flags, 0,
			       flags & SINGLE_THREAD_FLAGS);
}

/* Joining a user namespace needs one thread, a mount namespace an
 * unshared fs (threads share it): whatever the type, a rare call. */
LS_EXPORT int setns(int fd, int nstype)
{
	return single_threaded(call_setns, fd, nstype, 1);
}
