/*
 * api.c - the JSON API's routes (docs/WEB-API.md): what each path means,
 * which source it reads (a live process, a saved snapshot, a post-mortem
 * file) and which view of it it answers with (views.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../common/contract.h"
#include "../lib/client.h"
#include "../lib/json.h"
#include "internal.h"
#include "agents.h"
#include "api.h"
#include "store.h"
#include "reply.h"
#include "views.h"

static int method_is(struct ls_web_req *r, const char *m,
		     struct ls_web_reply *rep)
{
	if (!strcmp(r->method, m) ||
	    (!strcmp(m, "GET") && !strcmp(r->method, "HEAD")))
		return 1;
	ls_web_error(rep, 405, "this endpoint needs %s", m);
	return 0;
}

/* ------------------------------------------------------------ sources */

static int source_postmortem(struct ls_web_req *r, struct ls_web_src *src,
			     struct ls_web_reply *rep)
{
	char *colon = strchr(r->segs[1], ':');
	pid_t pid, beside = 0;

	memset(src, 0, sizeof(*src));
	/* "BESIDE:PID": the file of pid PID in the container of BESIDE. */
	if (colon) {
		*colon = 0;
		if (!ls_web_parse_pid(r->segs[1], &beside))
			return ls_web_error(rep, 400, "'%.32s' is not a pid",
					    r->segs[1]);
		if (ls_web_check_pid(beside, rep))
			return rep->status;
	}
	if (!ls_web_parse_pid(colon ? colon + 1 : r->segs[1], &pid))
		return ls_web_error(rep, 400, "'%.32s' is not a pid",
				    colon ? colon + 1 : r->segs[1]);
	if (beside ? ls_web_postmortem_load_in(beside, pid, &src->own, rep) :
	    ls_web_postmortem_load(pid, &src->own, rep))
		return rep->status;
	src->snap = &src->own;
	return 0;
}

/* Does view segs[2] need the block list?  Only to filter or list blocks:
 * the parameters decide, so a plain report costs the agent no more than
 * `leakscope report PID` does. */
static int view_needs_blocks(struct ls_web_req *r)
{
	static const char *const filters[] = { "min_age", "min_size",
					       "max_size", NULL };
	const char *v;
	size_t i;

	if (!strcmp(r->segs[2], "olds"))
		return 1;
	for (i = 0; filters[i]; i++)
		if (ls_web_param(r, filters[i]))
			return 1;
	v = ls_web_param(r, "show_allocs");
	return v && strcmp(v, "0") && strcmp(v, "false");
}

/* segs: KIND ID VIEW, for the three kinds of sources. */
static void source_view(struct ls_web_req *r, struct ls_web_reply *rep)
{
	struct ls_web_src src;
	const char *kind = r->segs[0];
	int live = !strcmp(kind, "processes");

	if (!ls_web_view_known(r->segs[2])) {
		ls_web_error(rep, 404, "no view '%.32s'", r->segs[2]);
		return;
	}
	if (!method_is(r, "GET", rep))
		return;
	if (live ? ls_web_src_live(r, r->segs[1], view_needs_blocks(r), &src,
				   rep) :
	    !strcmp(kind, "snapshots") ? ls_web_src_saved(r, r->segs[1], &src,
							  rep) :
	    source_postmortem(r, &src, rep))
		return;
	ls_web_view(r, &src, r->segs[2], rep);
	ls_web_src_release(r, &src);
}

/* ------------------------------------------------------------ actions */

static void action_reset(struct ls_web_req *r, pid_t pid,
			 struct ls_web_reply *rep)
{
	char reply[256], err[1024];
	struct ls_web_buf b;
	struct ls_json j;
	int e;

	e = ls_client_request(pid, LS_VERB_RESET, reply, sizeof(reply), err,
			      sizeof(err));
	ls_web_agents_forget(&r->w->agents, pid);
	if (e) {
		ls_web_error(rep, ls_web_status_of(e), "%s", err);
		return;
	}
	if (strcmp(reply, LS_REPLY_OK)) {
		ls_web_error(rep, 502, "pid %d: unexpected answer '%.64s'",
			     (int)pid, reply);
		return;
	}
	if (ls_web_json_begin(&b, &j, NULL, rep))
		return;
	ls_json_u64(&j, "pid", (uint64_t)pid);
	ls_json_bool(&j, "reset", 1);
	ls_web_json_end(&b, &j, 0, 200, rep);
}

static void action_snapshot(struct ls_web_req *r, pid_t pid,
			    struct ls_web_reply *rep)
{
	char name[160];
	struct ls_web_buf b;
	struct ls_json j;

	if (ls_web_store_save(r->w, pid, name, sizeof(name), rep) ||
	    ls_web_json_begin(&b, &j, NULL, rep))
		return;
	ls_json_u64(&j, "pid", (uint64_t)pid);
	ls_json_str(&j, "name", name);
	ls_web_json_end(&b, &j, 0, 201, rep);
}

/* POST processes/PID/{reset,snapshot} */
static void process_action(struct ls_web_req *r, struct ls_web_reply *rep)
{
	int reset = !strcmp(r->segs[2], "reset");
	pid_t pid;

	if (!method_is(r, "POST", rep) || ls_web_params_only(r, NULL, rep))
		return;
	if (!ls_web_parse_pid(r->segs[1], &pid)) {
		ls_web_error(rep, 400, "'%.32s' is not a pid", r->segs[1]);
		return;
	}
	if (ls_web_check_pid(pid, rep))
		return;
	if (reset)
		action_reset(r, pid, rep);
	else
		action_snapshot(r, pid, rep);
}

static void snapshot_delete(struct ls_web_req *r, struct ls_web_reply *rep)
{
	struct ls_web_buf b;
	struct ls_json j;

	if (!method_is(r, "DELETE", rep) || ls_web_params_only(r, NULL, rep))
		return;
	if (!ls_web_store_name_ok(r->segs[1])) {
		ls_web_error(rep, 400, "'%.64s' is not a snapshot name",
			     r->segs[1]);
		return;
	}
	if (ls_web_store_remove(r->w, r->segs[1], rep) ||
	    ls_web_json_begin(&b, &j, NULL, rep))
		return;
	ls_json_str(&j, "name", r->segs[1]);
	ls_json_bool(&j, "deleted", 1);
	ls_web_json_end(&b, &j, 0, 200, rep);
}

/* ------------------------------------------------------------ listings */

static void version(struct ls_web_req *r, struct ls_web_reply *rep)
{
	struct ls_web_buf b;
	struct ls_json j;

	if (!method_is(r, "GET", rep) || ls_web_params_only(r, NULL, rep) ||
	    ls_web_json_begin(&b, &j, "leakscope-web", rep))
		return;
	ls_json_u64(&j, "server_pid", (uint64_t)getpid());
	ls_json_u64(&j, "uid", (uint64_t)getuid());
	ls_json_str(&j, "snapshot_dir", r->w->snapdir);
	ls_json_str(&j, "view_token", r->w->view);
	ls_json_bool(&j, "diff", ls_web_view_has_diff());
	ls_json_bool(&j, "flamegraph", ls_web_view_has_svg());
	ls_json_bool(&j, "diff_svg", ls_web_view_has_diff_svg());
	ls_web_json_end(&b, &j, 0, 200, rep);
}

static void listing(struct ls_web_req *r, struct ls_web_reply *rep)
{
	const char *kind = r->segs[0];
	struct ls_web_buf b;
	struct ls_json j;
	int e;

	if (!method_is(r, "GET", rep))
		return;
	if (!strcmp(kind, "processes")) {
		ls_web_view_processes(r, rep);
		return;
	}
	if (ls_web_params_only(r, NULL, rep) ||
	    ls_web_json_begin(&b, &j, !strcmp(kind, "snapshots") ?
			      "leakscope-snapshots" : "leakscope-postmortems",
			      rep))
		return;
	e = !strcmp(kind, "snapshots") ? ls_web_store_list(r->w, &j) :
	    ls_web_postmortem_list(&j);
	ls_web_json_end(&b, &j, e, 200, rep);
}

/* ------------------------------------------------------------ routing */

static int is_source(const char *s)
{
	return !strcmp(s, "processes") || !strcmp(s, "snapshots") ||
	       !strcmp(s, "postmortem");
}

void ls_web_api(struct ls_web_req *r, struct ls_web_reply *rep)
{
	size_t n = r->nsegs;
	const char *s0 = n ? r->segs[0] : "";

	if (n == 1 && !strcmp(s0, "version"))
		version(r, rep);
	else if (n == 1 && is_source(s0))
		listing(r, rep);
	else if (n == 1 && !strcmp(s0, "diff"))
		ls_web_view_diff(r, rep);
	else if (n == 3 && !strcmp(s0, "processes") &&
		 (!strcmp(r->segs[2], "reset") || !strcmp(r->segs[2], "snapshot")))
		process_action(r, rep);
	else if (n == 3 && is_source(s0))
		source_view(r, rep);
	else if (n == 2 && !strcmp(s0, "snapshots") &&
		 strcmp(r->method, "GET") && strcmp(r->method, "HEAD"))
		snapshot_delete(r, rep);
	else
		ls_web_error(rep, 404, "no such endpoint");
}
