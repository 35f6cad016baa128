/*
 * attach.h - the contract between `leakscope attach` (the injector,
 * lib/inject.c) and the agent loaded into a running process
 * (agent/attach.c).
 *
 * The injector calls LS_ATTACH_ENTRY in the target, on a thread it holds
 * at a safe point, with one argument: a settings string of "key=value"
 * lines (LS_ATTACH_KEY_*).  The agent starts tracking (but nothing reaches
 * it yet), starts its control thread and post-mortem file, and lists the
 * GOT slots that must point at its hooks; it returns the address of a
 * struct ls_attach_result in its own memory.  The injector reads it with
 * the target's other threads running, stops them, writes every slot
 * (the switch), and lets them go.  Fixed-width types only: the two sides
 * are different programs.
 */
#ifndef LEAKSCOPE_COMMON_ATTACH_H
#define LEAKSCOPE_COMMON_ATTACH_H

#include <stdint.h>

#define LS_ATTACH_ENTRY "leakscope_attach"
#define LS_ATTACH_VERSION 1

/* Settings keys; values are decimal unless said otherwise. */
#define LS_ATTACH_KEY_DEPTH "depth"
#define LS_ATTACH_KEY_SAMPLE_RATE "sample_rate"
#define LS_ATTACH_KEY_PERIOD_MS "period_ms"
#define LS_ATTACH_KEY_HISTORY "history"
#define LS_ATTACH_KEY_RUNTIME_DIR "runtime_dir"	/* a path */

/* One GOT slot: at addr the target holds orig; the switch writes hook. */
struct ls_attach_slot {
	uint64_t addr;
	uint64_t orig;
	uint64_t hook;
} __attribute__((packed));

enum ls_attach_status {
	LS_ATTACH_OK = 0,
	LS_ATTACH_PRELOADED = 1,	/* the agent came with LD_PRELOAD */
	LS_ATTACH_ACTIVE = 2,		/* already attached */
	LS_ATTACH_FAILED = 3,		/* reason says why */
};

#define LS_ATTACH_REASON 200

struct ls_attach_result {
	uint32_t version;	/* LS_ATTACH_VERSION */
	uint32_t status;	/* enum ls_attach_status */
	uint32_t control_tid;	/* the agent's control thread, 0 = none */
	uint32_t nslots;
	uint64_t slots;		/* address of nslots struct ls_attach_slot */
	uint64_t start_wall_ns;	/* CLOCK_REALTIME when tracking began */
	uint32_t switched;	/* written 1 by the injector after the
				   switch: only then may the agent patch
				   slots itself (dlopen hook, rescans) */
	uint32_t pad;
	char reason[LS_ATTACH_REASON];
} __attribute__((packed));

/* Defined by the agent, exported under LS_ATTACH_ENTRY; settings as
 * above.  Returns the agent's own result, never NULL. */
struct ls_attach_result *leakscope_attach(const char *settings);

#endif
