/*
 * loaderlock.h - one of glibc's loader locks as it lies in memory.
 *
 * The locks in ld.so's _rtld_global (_dl_load_lock,
 * _dl_load_write_lock, ...) are recursive pthread mutexes, found by what
 * they hold, read two ways: by the injector in a copy of another
 * process's _rtld_global, for a thread other than its own that holds one
 * (lib/inject.c), and by the agent in its own process, for the one its
 * dl_iterate_phdr callback holds (agent/dllock.c).  Both ask who holds a
 * mutex here; which holder each looks for differs on purpose.
 */
#ifndef LEAKSCOPE_COMMON_LOADERLOCK_H
#define LEAKSCOPE_COMMON_LOADERLOCK_H

#include <pthread.h>
#include <sys/types.h>

/* The thread holding m when m is a held recursive mutex (locked,
 * counted, of the recursive kind, owned by a thread), else 0.  Reads *m
 * only: safe in an allocation hook and in a dl_iterate_phdr callback. */
static inline pid_t ls_loader_lock_owner(const pthread_mutex_t *m)
{
	if (m->__data.__lock && m->__data.__count >= 1 &&
	    m->__data.__kind == PTHREAD_MUTEX_RECURSIVE_NP &&
	    m->__data.__owner > 0)
		return m->__data.__owner;
	return 0;
}

#endif
