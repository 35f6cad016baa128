/*
 * pmfile.h - the post-mortem file and the growth sampler (common/lspm.h).
 *
 * Once per period the control thread takes a sample: each site's live
 * bytes and blocks, its allocated totals, the totals, calls and mallinfo,
 * written in place into <runtime dir>/<pid>.pm, a file-backed shared
 * mapping.  The same samples, kept as a ring per site, are the history
 * from which the command-line tool labels each site's growth.  After a
 * SIGKILL or the OOM killer the file still holds the last sample.
 *
 * None of this runs in an allocation hook.  ls_pm_tick() and the
 * readers run under the snapshot lock (snapwrite.h).
 */
#ifndef LEAKSCOPE_AGENT_PMFILE_H
#define LEAKSCOPE_AGENT_PMFILE_H

#include <stdint.h>
#include <sys/types.h>
#include "../common/lspm.h"

/* Create and map the file; 0 or -errno (then there is no post-mortem
 * and no history, and everything else works). */
int ls_pm_open(const char *dir, uint32_t period_ms, uint32_t hist_len);
/* Take one sample. */
void ls_pm_tick(void);
/*
 * The last sample, at a normal exit, before ls_pm_close(1): a full one,
 * for the file kept.  A file that goes unread takes none: the exit
 * snapshot adds the last sample to the history it copies from the file
 * (snapwrite.c).  Under the snapshot lock.
 */
void ls_pm_tick_exit(void);
/* Whether ls_pm_tick_exit() took the file's last sample. */
int ls_pm_exit_sampled(void);
/*
 * After `reset`: forget every site's history, so that growth is judged
 * from the reset on (a leak whose bytes were just forgotten would
 * otherwise look constant against the samples from before).  Rows stay
 * assigned to their sites.  Under the snapshot lock.
 */
void ls_pm_restart(void);
/* At a normal exit: mark it, and remove the file unless keep. */
void ls_pm_close(int keep);
/* In a fork child: the mapping is the parent's; let go of it. */
void ls_pm_forget_child(void);
/* Move the file into the directory dfd (of uid's, checked by the
 * caller), owned by uid:gid (a process about to become that user, still
 * privileged); 0 or a negative errno: it stays, except on another file
 * system (-EXDEV), where it is removed. */
int ls_pm_move(int dfd, uid_t uid, gid_t gid);

/* The header, or NULL when there is no file. */
const struct lspm_header *ls_pm_header(void);
/* Site id's history: its ring of hist_len samples (slot k % hist_len),
 * or without one where its constant live bytes start (lspm_hist_sample()
 * reads either).  0 when it never held memory at a sample.  h is what
 * ls_pm_header() returned: its check of the owner (getpid(), a system
 * call) once for all the sites, not per site. */
struct ls_pm_hist {
	const int64_t *ring;
	uint64_t since;
	int64_t live;
};
int ls_pm_history(const struct lspm_header *h, uint32_t site,
		  struct ls_pm_hist *o);
/* Milliseconds between samples. */
uint32_t ls_pm_period_ms(void);
/* Bytes of the file's mapping, and of them in RAM (0 without a file). */
size_t ls_pm_mapped(void);
size_t ls_pm_resident(void);

#endif
