/*
 * api.h - the JSON endpoints under /api/v1/ (api.c).  Not a public interface.
 */
#ifndef LEAKSCOPE_WEB_API_H
#define LEAKSCOPE_WEB_API_H

#include "internal.h"

/* Answer a request under /api/v1/; fills rep. */
void ls_web_api(struct ls_web_req *r, struct ls_web_reply *rep);

#endif
