/*
 * reply.h - the replies and query parameters of the web server's
 * handlers (reply.c).  Not a public interface.
 */
#ifndef LEAKSCOPE_WEB_REPLY_H
#define LEAKSCOPE_WEB_REPLY_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "internal.h"

/* An error reply {"error": "...", "status": N}; returns status. */
int ls_web_error(struct ls_web_reply *rep, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A growing buffer for a reply body (open_memstream). */
struct ls_web_buf {
	FILE *fp;
	char *data;
	size_t len;
};
int ls_web_buf_open(struct ls_web_buf *b);
/* Close b and hand its bytes to rep with status 200 and type; on a write
 * error a 500 instead.  Returns rep->status. */
int ls_web_buf_reply(struct ls_web_buf *b, struct ls_web_reply *rep,
		     const char *type);

/*
 * A JSON object reply: ls_web_json_begin() opens the buffer and the top
 * object and writes "format" and "version"; the caller adds members;
 * ls_web_json_end() closes it and hands it to rep with status (a 500
 * instead when writing failed or err is nonzero).  Returns 0 / status.
 */
struct ls_json;
int ls_web_json_begin(struct ls_web_buf *b, struct ls_json *j,
		      const char *format, struct ls_web_reply *rep);
int ls_web_json_end(struct ls_web_buf *b, struct ls_json *j, int err,
		    int status, struct ls_web_reply *rep);

/* The query parameter name, or NULL. */
const char *ls_web_param(struct ls_web_req *r, const char *name);
/* 0 if every query parameter is in allowed (NULL-terminated; "view" is
 * always allowed), else a 400 reply and its status. */
int ls_web_params_only(struct ls_web_req *r, const char *const *allowed,
		       struct ls_web_reply *rep);

/* Parse helpers: 0, or a 400 reply naming the parameter. */
int ls_web_param_count(struct ls_web_req *r, const char *name, uint64_t max,
		       uint64_t *out, struct ls_web_reply *rep);
/* A decimal pid in 1..4194304; 1 if s is one. */
int ls_web_parse_pid(const char *s, pid_t *pid);

#endif
