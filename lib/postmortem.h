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

#endif
