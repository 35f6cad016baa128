/*
 * inlined.c - a leak whose stack passes through two inlined functions.
 *
 *   site_inlined   777 bytes, 1 block
 *
 * inline_caller() calls inl_outer(), which calls inl_inner(), which calls
 * site_inlined(); both inl_* are always_inline, so the return addresses on
 * the stack are in site_inlined's caller inline_caller only.  The report
 * must expand them back, innermost first, each with the line of its call:
 *
 *   site_inlined          @site_inlined   (the malloc)
 *   inl_inner   inlined   @inl_inner      (its call of site_inlined)
 *   inl_outer   inlined   @inl_outer      (its call of inl_inner)
 *   inline_caller         @inline_caller  (its call of inl_outer)
 *   main                  @main
 */
#include <stdlib.h>
#include "wl.h"

WL_SITE static void site_inlined(void)
{
	wl_sink = malloc(777); /* @site_inlined */
}

static inline __attribute__((always_inline)) void inl_inner(int salt)
{
	wl_sink = (void *)(long)salt;
	site_inlined(); /* @inl_inner */
	WL_BARRIER();
}

static inline __attribute__((always_inline)) void inl_outer(int salt)
{
	inl_inner(salt + 1); /* @inl_outer */
	WL_BARRIER();
}

WL_HELPER static void inline_caller(void)
{
	inl_outer(wl_n(5)); /* @inline_caller */
	WL_BARRIER();
}

int main(void)
{
	inline_caller(); /* @main */
	WL_BARRIER();
	return 0;
}
