/*
 * server.h - the listening socket of the web view and the metrics exporter (server.c).  Not a public interface.
 */
#ifndef LEAKSCOPE_WEB_SERVER_H
#define LEAKSCOPE_WEB_SERVER_H

#include "internal.h"

/* Bind and listen on "ADDR:PORT" (NULL: 127.0.0.1, a free port); host
 * gets the numeric address, *loopback whether it is a loopback one, *ss
 * the address bound.
 * Errors as ls_web_start's, with err set. */
int ls_web_open_listener(const char *listen_at, int allow_remote, int *fd,
			 unsigned *port, int *loopback,
			 struct sockaddr_storage *ss, char *host,
			 size_t hostcap, char *err, size_t errlen);

#endif
