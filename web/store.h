/*
 * store.h - saved snapshots and post-mortem files (store.c).  Not a public interface.
 */
#ifndef LEAKSCOPE_WEB_STORE_H
#define LEAKSCOPE_WEB_STORE_H

#include <sys/types.h>
#include "internal.h"

/* The default snapshot dir: $XDG_STATE_HOME/leakscope/snapshots, else
 * $HOME/.local/state/leakscope/snapshots.  malloc()ed, or NULL. */
char *ls_web_store_default_dir(void);
/* Create dir (and parents) with mode 0700 if missing. */
int ls_web_store_mkdir(const char *dir);

/* A saved snapshot's name is valid: [A-Za-z0-9][A-Za-z0-9._-]*.lsnap,
 * at most 128 bytes, no "..". */
int ls_web_store_name_ok(const char *name);

/*
 * Save a snapshot of pid (with blocks) into the snapshot dir under a new
 * name (written to a temporary file, validated, renamed).  Returns 0 and
 * the name in name[cap], or an error reply's status.
 */
int ls_web_store_save(struct ls_web *w, pid_t pid, char *name, size_t cap,
		      struct ls_web_reply *rep);
/* Load a saved snapshot by name; 0 or an error reply's status (404). */
int ls_web_store_load(struct ls_web *w, const char *name,
		      struct ls_snapshot *snap, struct ls_web_reply *rep);
/* Remove one; 0 or an error reply's status. */
int ls_web_store_remove(struct ls_web *w, const char *name,
			struct ls_web_reply *rep);
/* Write the saved snapshots as a JSON array member "snapshots". */
struct ls_json;
int ls_web_store_list(struct ls_web *w, struct ls_json *j);

/* Post-mortem files of dead processes: "postmortem" array member. */
int ls_web_postmortem_list(struct ls_json *j);
/* Load pid's post-mortem file; 0 or an error reply's status. */
int ls_web_postmortem_load(pid_t pid, struct ls_snapshot *snap,
			   struct ls_web_reply *rep);
/* The post-mortem file of the process that was pid in the container of
 * live process beside (docs/CONTAINERS.md): as ls_web_postmortem_load. */
int ls_web_postmortem_load_in(pid_t beside, pid_t pid,
			      struct ls_snapshot *snap, struct ls_web_reply *rep);

#endif
