/*
 * reachfork.c - the fork method and the check at exit: the child that
 * scans a copy-on-write image of the process (reach.c's scan), the
 * parent's preparation, and what the exit path notes and stops.
 */
#include <errno.h>
#include <fcntl.h>
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <pthread.h>
#include <poll.h>
#include <stdio.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <linux/userfaultfd.h>
#include "../common/contract.h"
#include "agent.h"
#include "state.h"
#include "exitstop.h"
#include "dllock.h"
#include "figures.h"
#include "glibcheap.h"
#include "heapmodel.h"
#include "live.h"
#include "mmaps.h"
#include "real.h"
#include "modules.h"
#include "reach.h"
#include "reachint.h"
#include "site.h"
#include "snapwrite.h"
#include "sys.h"
#include "thread.h"
#include "unwind.h"

static __attribute__((noinline, noreturn))
void child_main(int fd, const struct lsnap_check_thread *th, uint32_t nth,
		int with_blocks, enum lsnap_reason reason, uint32_t flags)
{
	static struct ls_reach_result res;
	struct sigaction sa = { .sa_handler = ls_scan_on_fault, .sa_flags = SA_NODEFER };
	volatile uint64_t here = 0;
	uint64_t self_sp, self_red;
	sigset_t faults;
	int r;

	/* Die with the caller; take the faults the scan may meet (a
	 * file mapping cut short, an entry caught mid-update). */
	/* A concurrent mark that fell back leaves its state: the image's
	 * copy of those mappings is simply not used. */
	memset(&ls_scan_child, 0, sizeof(ls_scan_child));
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sigemptyset(&faults);
	sigaddset(&faults, SIGSEGV);
	sigaddset(&faults, SIGBUS);
	sigprocmask(SIG_UNBLOCK, &faults, NULL);
	res.mallinfo = ls_scan_prep.mallinfo;
	res.pid = ls_scan_prep.pid;
	res.ppid = ls_scan_prep.ppid;
	/* At exit, this stack from where the program's live frames begin,
	 * else from the agent's exit path up (above us on the same stack,
	 * within its 8 MiB at most). */
	self_sp = (uint64_t)&here;
	self_red = RED_ZONE;
	if (reason == LSNAP_REASON_EXIT && ls_scan_exit.live > self_sp &&
	    ls_scan_exit.live - self_sp < (8ull << 20)) {
		self_sp = ls_scan_exit.live;
		self_red = 0;
	} else if (reason == LSNAP_REASON_EXIT && ls_scan_exit.frame > self_sp &&
		   ls_scan_exit.frame - self_sp < (8ull << 20))
		self_sp = ls_scan_exit.frame;
	if (reason != LSNAP_REASON_EXIT) {
		ls_scan_exit.nregs = 0;
		ls_scan_exit.intr_sp = ls_scan_exit.fp_lo = ls_scan_exit.fp_hi = 0;
		ls_scan_exit.co_sp = 0;
	}
	r = ls_scan_run_scan(&ls_scan_child, th, nth, self_sp, self_red, &res);
	if (!r) {
		res.totals.flags = flags | (res.torn ? LSNAP_REACH_TORN : 0) |
				   (ls_scan_child.partial ? LSNAP_REACH_PARTIAL : 0) |
				   (ls_dllock_missed() ? LSNAP_REACH_LOADER_HELD : 0);
		r = ls_snapwrite_reach(fd, reason, with_blocks, &res);
	}
	syscall(SYS_exit_group, r ? 1 : 0);
	__builtin_unreachable();
}

/*
 * The image holds a copy of every descriptor of the program: a peer
 * would not see a socket or pipe close while the scan runs.  Keep only
 * the output and the gate.
 */
static void keep_only(int a, int b)
{
	int lo = a < b ? a : b, hi = a < b ? b : a;

	if (lo > 0)
		syscall(SYS_close_range, 0u, (unsigned)lo - 1, 0u);
	if (hi > lo + 1)
		syscall(SYS_close_range, (unsigned)lo + 1, (unsigned)hi - 1, 0u);
	syscall(SYS_close_range, (unsigned)hi + 1, ~0u, 0u);
}

pid_t ls_reach_spawn(int fd, const struct lsnap_check_thread *th, uint32_t n,
		     int with_blocks, enum lsnap_reason reason, uint32_t flags,
		     const int *gate)
{
	long pid;

	/* The caller's callee-saved registers into this frame, which the
	 * child scans (its stack pointer is below it). */
	__builtin_unwind_init();
	/* No exit signal: the program gets no SIGCHLD and its wait() calls
	 * do not see this child; ls_reach_wait() uses __WALL. */
	pid = syscall(SYS_clone, 0UL, 0UL, NULL, NULL, 0UL);
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		char c;

		keep_only(fd, gate ? gate[0] : fd);
		/* The parent's reply goes out first; then the pipe closes.
		 * A 'w' on it: the threads' stack pointers are stale, scan
		 * their stacks whole. */
		if (gate) {
			ssize_t k;

			while ((k = read(gate[0], &c, 1)) < 0 && errno == EINTR)
				;
			if (k == 1 && c == 'w' && reason == LSNAP_REASON_EXIT)
				n = 0;
			close(gate[0]);
		}
		child_main(fd, th, n, with_blocks, reason, flags);
	}
	return (pid_t)pid;
}

int ls_reach_wait(pid_t child)
{
	int st = 0;
	pid_t r;

	do
		r = waitpid(child, &st, __WALL);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return errno == ECHILD ? 0 : -errno;	/* SA_NOCLDWAIT reaped it */
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

/* --- the parent ------------------------------------------------------------ */

/* The PT_LOAD segment of info that holds address a, or NULL. */
static const ElfW(Phdr) *segment_of(const struct dl_phdr_info *info,
				    uint64_t a)
{
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t s = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && a >= s && a < s + ph->p_memsz)
			return ph;
	}
	return NULL;
}

static int own_segments(struct dl_phdr_info *info, size_t size, void *arg)
{
	int i;

	if (!segment_of(info, (uint64_t)(uintptr_t)&ls_reach_prepare))
		return 0;
	ls_scan_prep.nseg = 0;
	for (i = 0; i < info->dlpi_phnum && ls_scan_prep.nseg < 8; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t s = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
			continue;
		ls_scan_prep.seg_start[ls_scan_prep.nseg] = s & ~4095ull;
		ls_scan_prep.seg_end[ls_scan_prep.nseg++] = (s + ph->p_memsz + 4095) & ~4095ull;
	}
	return 1;
}

/* The C library's code: the segment holding a function only glibc
 * defines (ls_scan_red_zone() tells its system calls by it).  Not the
 * main program's (a program built without PIE that takes the
 * function's address has its own canonical entry for it): then none. */
static int libc_code(struct dl_phdr_info *info, size_t size, void *arg)
{
	const ElfW(Phdr) *ph = segment_of(info, (uint64_t)(uintptr_t)
					  &gnu_get_libc_version);

	if (!ph || !(ph->p_flags & PF_X) || !info->dlpi_name ||
	    !info->dlpi_name[0])
		return 0;
	ls_scan_prep.libc_lo = info->dlpi_addr + ph->p_vaddr;
	ls_scan_prep.libc_hi = ls_scan_prep.libc_lo + ph->p_memsz;
	return 1;
}

/* The agent's own writable segments and libc's code, which do not
 * change: walked until found (at start, before any thread can hold the
 * loader's lock). */
void ls_reach_learn_segments(void)
{
	if (!ls_scan_prep.nseg)
		ls_dl_iterate(own_segments, NULL);
	if (!ls_scan_prep.libc_hi)
		ls_dl_iterate(libc_code, NULL);
}

/*
 * glibc's thread descriptor, checked on the calling thread: the offset
 * of the tid in struct pthread (2.26 to 2.38 on x86-64; with another
 * glibc ended threads' stacks are scanned whole).
 */
static void learn_threads(void)
{
	const char *self = (const char *)pthread_self();
	int32_t tid;

	memcpy(&tid, self + 0x2d0, sizeof(tid));
	ls_scan_prep.tid_off = tid == ls_gettid() ? 0x2d0 : 0;
}

void ls_reach_set_method(int fork_method, uint64_t budget_ns)
{
	ls_scan_how.asked = !!fork_method;
	ls_scan_how.budget_ns = fork_method ? 0 : budget_ns;
}

int ls_reach_prepare(void)
{
	/* The fork method unless the caller says otherwise (at exit). */
	memset(&ls_scan_how, 0, sizeof(ls_scan_how));
	ls_scan_how.asked = 1;
	if (ls_agent.sample_rate)
		return -ENOTSUP;
	ls_dllock_clear();
	ls_modules_refresh();
	ls_scan_prep.pid = getpid();
	ls_scan_prep.ppid = getppid();
	ls_reach_learn_segments();
	ls_figures_mallinfo(&ls_scan_prep.mallinfo);
	ls_scan_prep.alloc_maps = ls_heapmodel_maps_known();
	learn_threads();
	return ls_scan_prep.nseg ? 0 : -ENOENT;
}


/* Threads of this process, from /proc/self/status; 0 if unknown. */
static unsigned count_threads(void)
{
	char buf[4096], *p;

	if (ls_scan_read_proc("/proc/self/status", buf, sizeof(buf)) <= 0)
		return 0;
	p = strstr(buf, "\nThreads:");
	return p ? (unsigned)strtoul(p + 9, NULL, 10) : 0;
}


void ls_reach_note_exit_call(uint64_t cfa, const uint64_t *regs)
{
	pid_t pid = getpid(), old = __atomic_load_n(&ls_scan_exit.call_claim,
						    __ATOMIC_ACQUIRE);

	if (old == pid || !__atomic_compare_exchange_n(&ls_scan_exit.call_claim,
			&old, pid, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	ls_scan_exit.call_nregs = regs ? LS_REACH_EXIT_REGS : 0;
	if (regs)
		memcpy(ls_scan_exit.call_regs, regs, sizeof(ls_scan_exit.call_regs));
	ls_scan_exit.call_cfa = cfa;
	ls_scan_exit.call_tid = ls_gettid();
	__atomic_store_n(&ls_scan_exit.call_pid, pid, __ATOMIC_RELEASE);
}

/* libc's exit(): [*lo, *hi], its end included (the return address of
 * its last call, which never returns, is one past its last byte). */
static int libc_exit_range(uint64_t *lo, uint64_t *hi)
{
	const ElfW(Sym) *sym = NULL;
	Dl_info info;

	*lo = (uint64_t)(uintptr_t)ls_real.libc_exit;
	if (!*lo)
		return -ENOENT;
	*hi = *lo + 64;
	if (dladdr1((void *)(uintptr_t)*lo, &info, (void **)&sym,
		    RTLD_DL_SYMENT) && sym && sym->st_size)
		*hi = *lo + sym->st_size;
	return 0;
}

/*
 * The stack pointer of the caller of the outermost libc exit() on this
 * stack, or 0: the return address into that caller, found by unwinding,
 * looked for in the stack from frame up (read through the kernel: a
 * miss ends at the top of the stack, never in a fault).
 */
static uint64_t exit_caller_sp(uint64_t frame)
{
	uint64_t pcs[128], lo, hi, ret, buf[512], a;
	int n = ls_unwind_capture_own(pcs, 128, 0), i, k = -1;
	/* Static: a struct scan is 270 KiB, more than the stack of the
	 * thread that may run the exit path (the control thread's is 256
	 * KiB, a program's thread may have less); only its pid is used. */
	static struct scan sc;
	size_t got, j;

	sc.self = getpid();

	if (libc_exit_range(&lo, &hi))
		return 0;
	for (i = 0; i < n; i++)
		if (pcs[i] >= lo && pcs[i] <= hi)
			k = i;
	if (k < 0 || k + 1 >= n)
		return 0;
	ret = pcs[k + 1];
	for (a = frame & ~7ull; a - frame < (8ull << 20); a += got) {
		got = ls_scan_read_safe(&sc, a, buf, sizeof(buf)) & ~7ul;
		if (!got)
			return 0;
		for (j = 0; j < got / 8; j++)
			if (buf[j] == ret)
				return a + j * 8 + 8;
	}
	return 0;
}

/*
 * exit() called on the alternate signal stack: the stack pointer of the
 * context the outermost signal frame on it interrupted, or 0.  The
 * kernel pushed that frame above the handler's (rt_sigframe: the
 * restorer's address, then a ucontext_t), and the ucontext records the
 * alternate stack itself (uc_stack): a ucontext is recognised by
 * uc_flags (a few bits), uc_link 0, and uc_stack naming this alternate
 * stack; the outermost is the highest whose saved rsp lies off it.
 * A stack installed with SS_AUTODISARM reads as disabled while its
 * handler runs (the kernel disarmed it when it pushed the frame): its
 * bounds are then the ones the frame's uc_stack names, with that flag,
 * for a frame above from that lies within them, from in them too (the
 * search goes up at most ALT_SEARCH bytes to find the first).
 * [*fp_lo, *fp_hi): where its fpregs points, the floating-point and
 * vector registers the kernel saved above the frame, to the stack's
 * top (0, 0 if it points elsewhere).  Read through the kernel from
 * from up: a miss ends at a fault.
 */
#define ALT_SEARCH (8ull << 20)
#define UC_AUTODISARM (1u << 31)	/* SS_AUTODISARM, linux/signal.h */
static uint64_t interrupted_sp(uint64_t from, uint64_t *fp_lo, uint64_t *fp_hi)
{
	enum { UC_WORDS = 5 + 23 };	/* flags, link, uc_stack, gregs */
	static struct scan sc;		/* as in exit_caller_sp() */
	uint64_t buf[512 + UC_WORDS + 1], a, lo = 0, hi, got, j, rsp, at,
		 size = 0, found = 0;
	stack_t ss;

	if (sigaltstack(NULL, &ss))
		return 0;
	if (ss.ss_flags & SS_ONSTACK) {
		lo = (uint64_t)(uintptr_t)ss.ss_sp;
		size = ss.ss_size;
		hi = lo + size;
		if (from < lo || from >= hi)
			from = lo;
	} else if (ss.ss_flags & SS_DISABLE) {
		hi = from + ALT_SEARCH;		/* disarmed: the frame says */
	} else {
		return 0;
	}
	sc.self = getpid();
	for (a = from & ~7ull; a < hi; a += 512 * 8) {
		got = ls_scan_read_safe(&sc, a, buf, sizeof(buf)) / 8;
		for (j = 0; j + UC_WORDS < got && j < 512; j++) {
			const uint64_t *u = buf + j;
			uint32_t fl = (uint32_t)u[3] & ~UC_AUTODISARM;

			at = a + j * 8;
			if (u[0] >= 16 || u[1] || fl > SS_DISABLE)
				continue;
			if (!size && (!((uint32_t)u[3] & UC_AUTODISARM) ||
				      u[2] > from || u[4] > ALT_SEARCH ||
				      at + UC_WORDS * 8 > u[2] + u[4]))
				continue;
			if (!size) {
				lo = u[2];
				size = u[4];
				hi = lo + size;
			}
			if (u[2] != lo || u[4] != size)
				continue;
			rsp = u[5 + REG_RSP];
			if (rsp < lo || rsp >= hi) {
				found = rsp;
				/* uc_mcontext.fpregs, after the gregs: the
				 * kernel put that state above the frame. */
				*fp_lo = u[UC_WORDS] > at && u[UC_WORDS] < hi ?
					 u[UC_WORDS] : 0;
				*fp_hi = *fp_lo ? hi : 0;
			}
		}
		if (got < 512 + UC_WORDS + 1)
			break;
	}
	return found;
}

/*
 * exit() called off the thread's own stack after the program switched
 * away from it with swapcontext() or setcontext(): the hooks' record of
 * the switch, for the scan to cut the own stack with the maps it reads
 * (ls_scan_switched_sp()).  The stack pointer swapcontext() saved in the
 * program's ucontext is read now; one that cannot be read leaves no
 * record, and the stack is scanned whole.
 */
static void note_switch(uint64_t live)
{
	static struct scan sc;		/* as in exit_caller_sp() */
	const struct ls_thread *t = ls_thread_tls;
	uint64_t rsp = 0;

	ls_scan_exit.co_sp = 0;
	if (!t || !t->co_sp || !live)
		return;
	if (t->co_ucp) {
		sc.self = getpid();
		if (ls_scan_read_safe(&sc, t->co_ucp + offsetof(ucontext_t,
			    uc_mcontext.gregs[REG_RSP]), &rsp, 8) != 8 || !rsp)
			return;
	}
	ls_scan_exit.co_sp = t->co_sp;
	ls_scan_exit.co_top = t->co_top;
	ls_scan_exit.co_rsp = rsp;
	ls_scan_exit.co_live = live;
}

void ls_reach_note_exit_frame(const void *frame)
{
	uint64_t f = (uint64_t)(uintptr_t)frame, b = exit_caller_sp(f);
	int call = __atomic_load_n(&ls_scan_exit.call_pid, __ATOMIC_ACQUIRE) ==
		   getpid() && ls_scan_exit.call_tid == ls_gettid() &&
		   ls_scan_exit.call_cfa > f && ls_scan_exit.call_cfa - f < (8ull << 20);

	ls_scan_exit.frame = f;
	ls_scan_exit.live = b;
	ls_scan_exit.nregs = 0;
	if (call && ls_scan_exit.call_cfa >= b) {
		ls_scan_exit.live = ls_scan_exit.call_cfa;
		memcpy(ls_scan_exit.regs, ls_scan_exit.call_regs, sizeof(ls_scan_exit.regs));
		ls_scan_exit.nregs = ls_scan_exit.call_nregs;
	}
	ls_scan_exit.fp_lo = ls_scan_exit.fp_hi = 0;
	ls_scan_exit.intr_sp = interrupted_sp(ls_scan_exit.live ? ls_scan_exit.live : f,
					      &ls_scan_exit.fp_lo, &ls_scan_exit.fp_hi);
	note_switch(ls_scan_exit.live ? ls_scan_exit.live : f);
}

/* The other threads waiting in a system call, with the registers /proc
 * shows (ls_scan_blocked_thread(): the call's number and arguments, the
 * stack pointer and the pc; the kernel shows no others) and a signature
 * of where each waits. */
static uint32_t exit_threads(void)
{
	pid_t tids[EXIT_THREADS];
	size_t nt = ls_scan_other_threads(tids, EXIT_THREADS), i;
	uint32_t n = 0;

	for (i = 0; i < nt; i++)
		if (!ls_scan_blocked_thread(tids[i], &ls_scan_exit.th[n],
					    &ls_scan_exit.sig[n]))
			n++;
	return n;
}

/* Did one of them leave its system call meanwhile? */
static int exit_threads_moved(uint32_t n)
{
	struct lsnap_check_thread t;
	uint64_t sig;
	uint32_t i;

	for (i = 0; i < n; i++)
		if (ls_scan_blocked_thread((pid_t)ls_scan_exit.th[i].tid, &t,
					   &sig) || sig != ls_scan_exit.sig[i])
			return 1;
	return 0;
}

int ls_reach_at_exit(int fd, int with_blocks, unsigned agent_threads)
{
	uint32_t flags = LSNAP_REACH_AT_EXIT, n = 0;
	struct ls_exitstop es;
	int gate[2] = { -1, -1 };
	pid_t child;
	int r = ls_reach_prepare();

	if (r)
		return r;
	/*
	 * The other threads are stopped by a tracer child (exitstop.h)
	 * while the image is taken: each stack is scanned from its real
	 * stack pointer, with every register.  When ptrace is refused
	 * (another tracer, Yama, a process that is not dumpable) they run
	 * on in the parent, and the image holds them as they were, without
	 * their registers: the stack of one waiting in a system call is
	 * scanned from its stack pointer (/proc's syscall file; less the
	 * red zone unless the call is the C library's, ls_scan_red_zone()),
	 * with the registers that file shows (the six arguments of its
	 * call, its stack pointer and pc), unless it left the call before
	 * the image was taken (the child is told through the gate, then
	 * scans every stack whole).
	 */
	if (count_threads() != 1 + agent_threads) {
		int k = ls_exitstop_stop(&es, ls_scan_exit.th, EXIT_THREADS);

		if (k >= 0) {
			child = ls_reach_spawn(fd, ls_scan_exit.th, (uint32_t)k,
					       with_blocks, LSNAP_REASON_EXIT,
					       flags, NULL);
			ls_exitstop_release(&es);
			return child < 0 ? child : ls_reach_wait(child);
		}
		flags |= LSNAP_REACH_NO_REGS;
		if (!pipe2(gate, O_CLOEXEC))
			n = exit_threads();
	}
	child = ls_reach_spawn(fd, ls_scan_exit.th, n, with_blocks,
			       LSNAP_REASON_EXIT, flags, n ? gate : NULL);
	if (gate[0] >= 0) {
		close(gate[0]);
		if (child > 0 && exit_threads_moved(n))
			(void)!write(gate[1], "w", 1);
		close(gate[1]);
	}
	if (child < 0)
		return child;
	return ls_reach_wait(child);
}

