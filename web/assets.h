/*
 * assets.h - the page's built-in files (assets.c).  Not a public interface.
 */
#ifndef LEAKSCOPE_WEB_ASSETS_H
#define LEAKSCOPE_WEB_ASSETS_H

#include "internal.h"

/* The built-in file at path ("/", "/app.js"...), or NULL. */
struct ls_web_asset {
	const char *path;
	const char *type;
	const unsigned char *data;
	const unsigned long long *len;	/* set by the assembler */
};
const struct ls_web_asset *ls_web_asset_find(const char *path);

#endif
