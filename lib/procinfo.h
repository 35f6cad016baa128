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

/* "<pid's runtime dir>/<pid><suffix>" into buf (".sock", ".pm"). */
int ls_proc_runtime_file(pid_t pid, const char *suffix, char *buf, size_t cap);

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
