/*
 * interpose.h - selectors for the columns of common/interpose.def: a
 * user pastes a row's column onto one of these prefixes, and the row
 * yields its arguments when the column has that value, nothing when it
 * has another.  For instance LS_IP_COUNTED_##kind(LS_FN_##NAME,) gives
 * the agent's counters.
 */
#ifndef LEAKSCOPE_COMMON_INTERPOSE_H
#define LEAKSCOPE_COMMON_INTERPOSE_H

/* kind: counted by the agent, probed by the tracer (any but NONE) */
#define LS_IP_COUNTED_ALLOC(...) __VA_ARGS__
#define LS_IP_COUNTED_FREE(...) __VA_ARGS__
#define LS_IP_COUNTED_MAP(...) __VA_ARGS__
#define LS_IP_COUNTED_NONE(...)
#define LS_IP_COUNTED_NEW(...)
#define LS_IP_COUNTED_ANEW(...)
#define LS_IP_COUNTED_DELETE(...)
/* kind: an allocation */
#define LS_IP_ALLOC_ALLOC(...) __VA_ARGS__
#define LS_IP_ALLOC_FREE(...)
#define LS_IP_ALLOC_MAP(...)
#define LS_IP_ALLOC_NONE(...)
#define LS_IP_ALLOC_NEW(...)
#define LS_IP_ALLOC_ANEW(...)
#define LS_IP_ALLOC_DELETE(...)
/* kind: C++'s operator new (either kind), operator delete */
#define LS_IP_NEW_ALLOC(...)
#define LS_IP_NEW_FREE(...)
#define LS_IP_NEW_MAP(...)
#define LS_IP_NEW_NONE(...)
#define LS_IP_NEW_NEW(...) __VA_ARGS__
#define LS_IP_NEW_ANEW(...) __VA_ARGS__
#define LS_IP_NEW_DELETE(...)
#define LS_IP_DELETE_ALLOC(...)
#define LS_IP_DELETE_FREE(...)
#define LS_IP_DELETE_MAP(...)
#define LS_IP_DELETE_NONE(...)
#define LS_IP_DELETE_NEW(...)
#define LS_IP_DELETE_ANEW(...)
#define LS_IP_DELETE_DELETE(...) __VA_ARGS__
/* kind: an alignment in the second parameter (1) or not (0) */
#define LS_IP_ALIGNED_NEW 0
#define LS_IP_ALIGNED_ANEW 1

/* real: has a pointer in struct ls_real */
#define LS_IP_REAL_REQUIRED(...) __VA_ARGS__
#define LS_IP_REAL_OPTIONAL(...) __VA_ARGS__
#define LS_IP_REAL_LAST(...) __VA_ARGS__
#define LS_IP_REAL_NONE(...)
/* real: resolved before the last one */
#define LS_IP_EARLY_REQUIRED(...) __VA_ARGS__
#define LS_IP_EARLY_OPTIONAL(...) __VA_ARGS__
#define LS_IP_EARLY_LAST(...)
#define LS_IP_EARLY_NONE(...)
/* real: required before resolution counts as complete */
#define LS_IP_REQUIRED_REQUIRED(...) __VA_ARGS__
#define LS_IP_REQUIRED_OPTIONAL(...)
#define LS_IP_REQUIRED_LAST(...)
#define LS_IP_REQUIRED_NONE(...)
/* real: the last one resolved */
#define LS_IP_LAST_REQUIRED(...)
#define LS_IP_LAST_OPTIONAL(...)
#define LS_IP_LAST_LAST(...) __VA_ARGS__
#define LS_IP_LAST_NONE(...)

/* attr: the real pointer's attribute */
#define LS_IP_ATTR_PLAIN
#define LS_IP_ATTR_NORETURN __attribute__((noreturn))

/* got: redirected by attach */
#define LS_IP_GOT_GOT(...) __VA_ARGS__
#define LS_IP_GOT_NOGOT(...)

/* export: in the agent's export map */
#define LS_IP_EXPORT_EXPORT(...) __VA_ARGS__
#define LS_IP_EXPORT_LOCAL(...)

#endif
