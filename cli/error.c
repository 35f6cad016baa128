/*
 * error.c - the one way the command-line layer reports a failure.
 */
#include <stdarg.h>
#include <stdio.h>
#include "cli.h"

void ls_error(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("leakscope: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
