/*
 * procinfo.h - what /proc says about a target process: its owner and the
 * runtime dir its agent chose (from the environment it started with, so
 * that root finds the socket of another user's process).
 *
 * Thread-safe: no static buffers (the web server asks from many threads).
 */
#ifndef LEAKSCOPE_PROCINFO_H
#define LEAKSCOPE_PROCINFO_H

#include <stddef.h>
#include <sys/types.h>

/* Owner of pid; 0 or -ESRCH. */
int ls_proc_uid(pid_t pid, uid_t *uid);

/*
 * The runtime dir pid's agent uses: computed from pid's initial
 * environment and owner when /proc lets us read them, else our own.
 */
int ls_proc_runtime_dir(pid_t pid, char *buf, size_t cap);

/* Is the leakscope agent mapped into pid (/proc/PID/maps)? */
int ls_proc_has_agent(pid_t pid);

/*
 * Open the runtime dir that holds pid's "<pid><suffix>" (".sock", ".pm")
 * after the checks of common/runtime.h: pid's dir when it is safe for
 * pid's owner (*uid; ours when pid is gone) and has that entry, else a
 * safe fallback "<dir>.XXXXXX" of the owner's that has it.  Returns the
 * dir's fd (O_CLOEXEC, the caller closes it) with the entry's path in
 * path; -ENOENT when no safe dir has it, -EPERM when, besides, pid's dir
 * is squatted (path: the entry's path in pid's dir, for messages);
 * -ENAMETOOLONG.
 */
int ls_proc_runtime_open(pid_t pid, const char *suffix, uid_t *uid,
			 char *path, size_t cap);

/*
 * The same for "<inner><suffix>" in the runtime dir pid's agent would use
 * (its environment, its user, its root): a process that ran beside pid,
 * in its container, as pid <inner> there (inner 0: pid itself).
 */
int ls_proc_runtime_open_in(pid_t pid, pid_t inner, const char *suffix,
			    uid_t *uid, char *path, size_t cap);

/*
 * The runtime dir pid's agent uses, opened when it is safe for pid's
 * owner (*uid), through pid's root for a process in a container; its
 * path (through /proc/PID/root) in path.  The fd, -ESRCH, -ENOENT,
 * -EPERM (squatted: its fallbacks are not looked at), -EACCES.
 */
int ls_proc_runtime_dir_open(pid_t pid, uid_t *uid, char *path, size_t cap);

/* The same, the path only: 0 when found or absent (buf: where it would
 * be), -EPERM when pid's dir is squatted and no fallback has it. */
int ls_proc_runtime_file(pid_t pid, const char *suffix, char *buf, size_t cap);

/* Whether pid holds the socket that listens on path (its network
 * namespace's /proc/PID/net/unix, its /proc/PID/fd). */
int ls_proc_listens_on(pid_t pid, const char *path);

/*
 * The number after "key:" in /proc/PID/status ("Tgid", "TracerPid",
 * "Uid" gives the real uid), or -1 when pid or the key is not there.
 */
long ls_proc_status_long(pid_t pid, const char *key);

/* The state letter of thread tid of pid in /proc ('R', 'S', 'T' stopped
 * by job control, 't' traced, 'Z' ...), 0 when it is gone. */
char ls_proc_state(pid_t pid, pid_t tid);
/* Whether thread tid of pid has exited or is a zombie (a leader that
 * ended with pthread_exit while other threads run on is one). */
int ls_proc_thread_gone(pid_t pid, pid_t tid);
/* Whether pid has no live thread left: exited, killed, or only zombies. */
int ls_proc_gone(pid_t pid);

/* Whether pid started with the agent in LD_PRELOAD (its initial
 * environment, which the agent's own clean-up does not change). */
int ls_proc_preloaded(pid_t pid);

#endif
