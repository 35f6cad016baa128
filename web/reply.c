/*
 * reply.c - what every handler of `leakscope serve` answers with: error
 * and JSON replies, the reply buffer, the query parameters (reply.h).
 */
#include <errno.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "../lib/json.h"
#include "../lib/util.h"
#include "reply.h"

int ls_web_error(struct ls_web_reply *rep, int status, const char *fmt, ...)
{
	struct ls_web_buf b;
	struct ls_json j;
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!rep->persistent)
		free(rep->body);
	memset(rep, 0, sizeof(*rep));
	rep->status = status;
	rep->type = "application/json";
	if (ls_web_buf_open(&b))
		return status;
	ls_json_init(&j, b.fp);
	ls_json_object(&j, NULL);
	ls_json_str(&j, "error", msg);
	ls_json_u64(&j, "status", (uint64_t)status);
	ls_json_end(&j);
	fputc('\n', b.fp);
	ls_json_finish(&j);
	if (!fclose(b.fp)) {
		rep->body = b.data;
		rep->len = b.len;
	} else {
		free(b.data);
	}
	return status;
}

int ls_web_buf_open(struct ls_web_buf *b)
{
	memset(b, 0, sizeof(*b));
	b->fp = open_memstream(&b->data, &b->len);
	return b->fp ? 0 : -ENOMEM;
}

int ls_web_buf_reply(struct ls_web_buf *b, struct ls_web_reply *rep,
		     const char *type)
{
	int bad = ferror(b->fp);

	if (fclose(b->fp) || bad) {
		free(b->data);
		return ls_web_error(rep, 500, "cannot build the reply");
	}
	if (!rep->persistent)
		free(rep->body);
	rep->persistent = 0;
	rep->status = 200;
	rep->type = type;
	rep->body = b->data;
	rep->len = b->len;
	return 200;
}

int ls_web_json_begin(struct ls_web_buf *b, struct ls_json *j,
		      const char *format, struct ls_web_reply *rep)
{
	if (ls_web_buf_open(b))
		return ls_web_error(rep, 500, "out of memory");
	ls_json_init(j, b->fp);
	ls_json_object(j, NULL);
	if (format) {
		ls_json_str(j, "format", format);
		ls_json_u64(j, "version", LS_WEB_API_VERSION);
	}
	return 0;
}

int ls_web_json_end(struct ls_web_buf *b, struct ls_json *j, int err,
		    int status, struct ls_web_reply *rep)
{
	ls_json_end(j);
	fputc('\n', b->fp);
	if (ls_json_finish(j) || err) {
		fclose(b->fp);
		free(b->data);
		return ls_web_error(rep, 500, "cannot build the reply%s%s",
				    err ? ": " : "", err ? strerror(-err) : "");
	}
	ls_web_buf_reply(b, rep, "application/json");
	rep->status = status;
	return status;
}

/* --------------------------------------------------------- parameters */

const char *ls_web_param(struct ls_web_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

struct allowed_ctx {
	const char *const *allowed;
	const char *bad;
};

static enum MHD_Result check_arg(void *cls, enum MHD_ValueKind kind,
				 const char *key, const char *value)
{
	struct allowed_ctx *c = cls;
	size_t i;

	if (!strcmp(key, "view"))
		return MHD_YES;
	for (i = 0; c->allowed && c->allowed[i]; i++)
		if (!strcmp(key, c->allowed[i]))
			return MHD_YES;
	c->bad = key;
	return MHD_NO;
}

int ls_web_params_only(struct ls_web_req *r, const char *const *allowed,
		       struct ls_web_reply *rep)
{
	struct allowed_ctx c = { allowed, NULL };

	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, check_arg, &c);
	if (c.bad)
		return ls_web_error(rep, 400, "unknown parameter '%.64s'", c.bad);
	return 0;
}

int ls_web_param_count(struct ls_web_req *r, const char *name, uint64_t max,
		       uint64_t *out, struct ls_web_reply *rep)
{
	const char *v = ls_web_param(r, name);

	if (!v)
		return 0;
	if (ls_parse_count(v, out) || *out > max)
		return ls_web_error(rep, 400, "invalid value for '%s': expected "
				    "a number from 0 to %llu", name,
				    (unsigned long long)max);
	return 0;
}

int ls_web_parse_pid(const char *s, pid_t *pid)
{
	long v = 0;

	if (!*s || *s == '0')
		return 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > 4194304)
			return 0;
		v = v * 10 + (*s - '0');
	}
	if (v > 4194304)
		return 0;
	*pid = (pid_t)v;
	return 1;
}
