/*
 * attach.h - the agent in a process it was attached to (agent/attach.c,
 * common/attach.h for the injector's side).
 *
 * None of these runs in an allocation hook; all take the loader's lock
 * (dl_iterate_phdr) and then the agent's slot lock, in that order.
 */
#ifndef LEAKSCOPE_AGENT_ATTACH_H
#define LEAKSCOPE_AGENT_ATTACH_H

#include <stddef.h>
#include "../common/attach.h"

/*
 * Whether the agent came with LD_PRELOAD (under `leakscope run` or by
 * hand) rather than by `leakscope attach`: its malloc is the one the
 * global scope gives, or the environment says so.  Decided once, by the
 * constructor; a preloaded agent refuses to be attached.
 */
int ls_attach_preloaded(void);
/*
 * The attach entry (session.c's leakscope_attach) in steps: resolve the
 * hooks and the program's own functions and remember changed() (called
 * after a dlopen through the agent), 0 or a negative errno; list the
 * slots to switch into the result the injector reads; the result itself;
 * the settings string, each "key=value" line handed to set().
 */
int ls_attach_prepare(void (*changed)(void));
void ls_attach_list(void);
struct ls_attach_result *ls_attach_result(void);
void ls_attach_parse(const char *s,
		     void (*set)(const char *key, size_t klen, const char *value));
/* Point every GOT slot of the loaded objects (but the agent, ld.so, the
 * vDSO) that names an interposed function at its hook.  Idempotent. */
void ls_attach_rescan(void);
/* Put back every slot that points at a hook (detach). */
void ls_attach_restore(void);
/* Fork child: the slot lock may have been held by a thread that is gone. */
void ls_attach_reset_child(void);

#endif
