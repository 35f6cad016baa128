/*
 * clean-stdio.c - a C program that frees everything it allocates, but
 * prints through stdio and sets a locale: the C library keeps stdout's
 * buffer and locale data to the end, as it does in every program.
 *
 * Ground truth: no site of this program holds memory at exit; the only
 * outstanding blocks are the C library's own (stdio buffer, locale
 * files), which the default suppressions cover.  `run --leak-check
 * --fail-on-leak` and `run --fail-on-leak` must both exit 0.
 */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include "wl.h"

WL_HELPER static void tmp_work(void)
{
	char *p = malloc(100);

	WL_CHECK(p != NULL, "malloc");
	snprintf(p, 100, "clean %d", 42);
	wl_sink = p;
	free(p);
	wl_sink = NULL;
}

int main(void)
{
	setlocale(LC_ALL, "");
	tmp_work();
	printf("hello from a clean C program\n");
	return 0;
}
