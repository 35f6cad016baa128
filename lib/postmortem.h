/*
 * postmortem.h - reading a post-mortem file (common/lspm.h) into the
 * snapshot model, so that a process killed by SIGKILL or the OOM killer
 * can still be reported with the same renderers.
 */
#ifndef LEAKSCOPE_POSTMORTEM_H
#define LEAKSCOPE_POSTMORTEM_H

#include <sys/types.h>
#include "snapshot.h"

/* The post-mortem file of pid, in the runtime dir. */
int ls_postmortem_path(pid_t pid, char *buf, size_t cap);

/*
 * Load a post-mortem file.  Returns 0, or a negative errno with a
 * one-line reason in err (-ENOENT no such file, -EINVAL not a post-mortem
 * file or inconsistent).  Sets snap->postmortem; snap->torn when the
 * process died in the middle of an update (figures may mix two samples).
 * No block list: the file holds per-site figures only.
 */
int ls_postmortem_load(const char *path, struct ls_snapshot *snap, char *err,
		       size_t errlen);

/*
 * Caps on one load (all -EFBIG), so that a file another user controls
 * costs memory in proportion to what it stores, not to its apparent size
 * (the file is sparse: holes read as zeros for free):
 * - it reads at most READ_MAX bytes, and no more than the file stores
 *   (st_blocks) plus SPARSE_SLACK;
 * - the snapshot it builds (a history of up to LS_HISTORY_MAX samples per
 *   site, even for sites with no history row in the file) takes at most
 *   BUILD_MAX, and at most BUILD_RATIO times what the file stores plus
 *   SPARSE_SLACK.  A real file stores about 600 bytes per site (version
 *   3), and a site with a full 4096-sample history builds 33 KB: 55 times.
 */
#define LS_POSTMORTEM_READ_MAX (512u << 20)
#define LS_POSTMORTEM_BUILD_MAX (1024ull << 20)
#define LS_POSTMORTEM_BUILD_RATIO 64
#define LS_POSTMORTEM_SPARSE_SLACK (1u << 20)

/*
 * Load the post-mortem file name in the open dir dirfd (path: its name
 * for messages): opened without following a symlink and without waiting
 * on a FIFO, and only when it is a regular file of uid (-EPERM).
 */
int ls_postmortem_load_at(int dirfd, const char *name, uid_t uid,
			  const char *path, struct ls_snapshot *snap, char *err,
			  size_t errlen);

/*
 * Load pid's post-mortem file from its checked runtime dir (or a safe
 * fallback, lib/procinfo.h), as ls_postmortem_load_at() with pid's owner
 * (ours when pid is gone).  -ENOENT none there, -EPERM the dir is
 * squatted and no fallback has one.
 */
int ls_postmortem_load_pid(pid_t pid, struct ls_snapshot *snap, char *err,
			   size_t errlen);

/*
 * The same for the process that was pid <inner> in the container of the
 * live process beside (lib/procinfo.h, ls_proc_runtime_open_in()): the
 * snapshot records that container (has_container, container.nspid =
 * inner) and keeps inner as its pid.  inner 0: beside's own file.
 * -EACCES: beside's namespaces cannot be read.
 */
int ls_postmortem_load_in(pid_t beside, pid_t inner, struct ls_snapshot *snap,
			  char *err, size_t errlen);

#endif
