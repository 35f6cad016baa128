/*
 * guard.c - the per-thread recursion guard's depth (guard.h).
 */
#include "guard.h"

__thread int ls_guard_depth;
