/*
 * t-web-server.c - the web server's input checks and start-up, without a
 * browser: snapshot names, pids, listen addresses (loopback only unless
 * allowed), the URL and token, the built-in assets.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../../web/internal.h"
#include "../../web/assets.h"
#include "../../web/store.h"
#include "../../web/reply.h"
#include "tap.h"

static void names(void)
{
	static const char *const good[] = {
		"4242-20261124T062926Z.lsnap", "a.lsnap", "x_y-z.1.lsnap",
	};
	static const char *const bad[] = {
		"", ".lsnap", "..lsnap", "../x.lsnap", "a/b.lsnap", ".hidden.lsnap",
		"x.lsnap.tmp", "x", "x..y.lsnap", "-x.lsnap", "a b.lsnap",
		"x.lsnap/", "\x01.lsnap",
	};
	char longname[200];
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(*good); i++)
		ok(ls_web_store_name_ok(good[i]), "name '%s' accepted", good[i]);
	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ok(!ls_web_store_name_ok(bad[i]), "name '%s' refused", bad[i]);
	memset(longname, 'a', sizeof(longname));
	strcpy(longname + 123, ".lsnap");	/* 129 bytes */
	ok(!ls_web_store_name_ok(longname), "a 129-byte name refused");
	longname[122] = 0;
	strcat(longname, ".lsnap");		/* 128 bytes */
	ok(ls_web_store_name_ok(longname), "a 128-byte name accepted");
}

static void pids(void)
{
	static const char *const bad[] = {
		"", "0", "-1", "+5", "012", "4194305", "99999999999999999999",
		"12a", " 12", "0x10",
	};
	pid_t pid = 0;
	size_t i;

	ok(ls_web_parse_pid("1", &pid) && pid == 1, "pid 1");
	ok(ls_web_parse_pid("4194304", &pid) && pid == 4194304, "pid_max");
	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ok(!ls_web_parse_pid(bad[i], &pid), "pid '%s' refused", bad[i]);
}

static int start(const char *listen_at, int remote, const char *dir,
		 struct ls_web **w, char *err, size_t errlen)
{
	struct ls_web_opts o = { .listen = listen_at, .allow_remote = remote,
				 .snapshot_dir = dir };

	return ls_web_start(&o, w, err, errlen);
}

static void listening(const char *dir)
{
	static const char *const malformed[] = {
		"localhost:80", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536",
		":80", "[::1]", "127.0.0.1:8o", "1.2.3.4.5:80",
	};
	struct ls_web *w = NULL;
	char err[512], want[128];
	size_t i;
	int r;

	for (i = 0; i < sizeof(malformed) / sizeof(*malformed); i++) {
		r = start(malformed[i], 0, dir, &w, err, sizeof(err));
		ok(r == -EINVAL && !w, "listen '%s' refused as malformed (%s)",
		   malformed[i], err);
	}
	r = start("0.0.0.0:0", 0, dir, &w, err, sizeof(err));
	ok(r == -EPERM && strstr(err, "--allow-remote"),
	   "0.0.0.0 refused without --allow-remote: %s", err);
	r = start("[::]:0", 0, dir, &w, err, sizeof(err));
	ok(r == -EPERM, "[::] refused without --allow-remote");
	r = start("[::ffff:10.0.0.1]:0", 0, dir, &w, err, sizeof(err));
	ok(r == -EPERM, "a v4-mapped non-loopback address refused");

	r = start(NULL, 0, dir, &w, err, sizeof(err));
	ok(r == 0 && w, "started on the default address (%s)", r ? err : "");
	if (!w)
		return;
	snprintf(want, sizeof(want), "http://127.0.0.1:%u/#token=", w->port);
	ok(!strncmp(ls_web_url(w), want, strlen(want)), "URL %s", ls_web_url(w));
	ok(strlen(w->token) == LS_WEB_TOKEN_HEX &&
	   strspn(w->token, "0123456789abcdef") == LS_WEB_TOKEN_HEX,
	   "token: 32 hex digits");
	ok(w->port > 0, "a port was chosen");
	ok(!strcmp(ls_web_snapshot_dir(w), dir), "snapshot dir kept");
	ls_web_stop(w);
}

static void assets(void)
{
	static const char *const paths[] = {
		"/", "/index.html", "/app.js", "/app.css", "/chart.js",
	};
	const struct ls_web_asset *a;
	size_t i;

	for (i = 0; i < sizeof(paths) / sizeof(*paths); i++) {
		a = ls_web_asset_find(paths[i]);
		ok(a && *a->len > 100, "asset %s built in", paths[i]);
	}
	a = ls_web_asset_find("/chart.js");
	ok(a && memmem(a->data, (size_t)*a->len, "Chart.js", 8),
	   "/chart.js is Chart.js");
	a = ls_web_asset_find("/");
	ok(a && memmem(a->data, (size_t)*a->len, "<title>leakscope</title>", 24),
	   "/ is the page");
	ok(!ls_web_asset_find("/../etc/passwd") && !ls_web_asset_find("/app.js/"),
	   "nothing else is served");
}

int main(void)
{
	char dir[] = "/tmp/t-web-server.XXXXXX", sub[64];

	names();
	pids();
	assets();
	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp");
		return tap_done();
	}
	snprintf(sub, sizeof(sub), "%s/a/b/snaps", dir);
	ok(ls_web_store_mkdir(sub) == 0, "snapshot dir created with parents");
	listening(sub);
	rmdir(sub);
	snprintf(sub, sizeof(sub), "%s/a/b", dir);
	rmdir(sub);
	snprintf(sub, sizeof(sub), "%s/a", dir);
	rmdir(sub);
	rmdir(dir);
	return tap_done();
}
