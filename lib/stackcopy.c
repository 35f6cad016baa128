/*
 * stackcopy.c - unwind copied stacks of another process (see stackcopy.h).
 *
 * A module's file is mapped read-only the way the loader maps it: one
 * readable anonymous reservation spanning its PT_LOAD segments (so gaps
 * read as zeros, never fault), each segment's file pages mapped over it at
 * its virtual address.  common/cfi.c then reads .eh_frame_hdr and .eh_frame
 * exactly as it does inside a traced process, bounded to that image.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "stackcopy.h"
#include "../common/cfi.h"

#define SC_RULES 16384		/* direct-mapped rule cache, per address */
#define SC_PAGE 4096ULL
#define SC_SEGS 16

struct sc_img {
	uint8_t id[LSNAP_BUILD_ID_MAX];
	unsigned idlen;
	char *path;		/* the file mapped (to share without id) */
	uint8_t *base;		/* image of virtual address vmin */
	size_t span;
	uint64_t vmin, vmax;	/* page-rounded PT_LOAD extent */
	const void *hdr;	/* .eh_frame_hdr in the image, or NULL */
	struct { uint64_t off, vaddr, filesz; } seg[SC_SEGS];
	size_t nseg;		/* PT_LOAD segments, to place mappings */
};

struct sc_mod {
	uint64_t lo, hi, bias;
	uint32_t gen_from, gen_to;
	char *path;
	char *file;		/* /proc/PID/map_files/LO-HI of its mapping */
	struct sc_img *img;
};

struct sc_rule {
	uint64_t key;		/* pc << 1 | exact; 0 = empty */
	uint64_t rule;
	uint32_t gen;
};

struct ls_stackcopy {
	int pid;
	uint32_t gen;
	struct sc_mod *mods;
	size_t nmods, capmods;
	struct sc_img **imgs;
	size_t nimgs;
	struct sc_rule *rules;
	uint64_t walks, misses;
};

/* ------------------------------------------------------------------ */
/* Files.                                                              */

static int elf_build_id(Elf *e, uint8_t *id, unsigned *len)
{
	size_t n, i;

	*len = 0;
	if (elf_getphdrnum(e, &n))
		return -1;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(e, (int64_t)ph.p_offset, ph.p_filesz,
					 ELF_T_NHDR);
		while (d && (off = gelf_getnote(d, off, &nh, &noff, &doff))) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)d->d_buf + noff, "GNU", 4) &&
			    nh.n_descsz <= LSNAP_BUILD_ID_MAX) {
				memcpy(id, (char *)d->d_buf + doff, nh.n_descsz);
				*len = nh.n_descsz;
				return 0;
			}
		}
	}
	return 0;
}

/* Map the file's PT_LOAD segments at base + (vaddr - vmin). */
static int img_map(struct sc_img *im, int fd, Elf *e)
{
	size_t n, i;
	GElf_Phdr ph;
	uint64_t lo = UINT64_MAX, hi = 0, eh = 0;

	if (elf_getphdrnum(e, &n))
		return -1;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(e, (int)i, &ph))
			return -1;
		if (ph.p_type == PT_GNU_EH_FRAME)
			eh = ph.p_vaddr;
		if (ph.p_type != PT_LOAD)
			continue;
		if (im->nseg < SC_SEGS) {
			im->seg[im->nseg].off = ph.p_offset;
			im->seg[im->nseg].vaddr = ph.p_vaddr;
			im->seg[im->nseg++].filesz = ph.p_filesz;
		}
		if (ph.p_vaddr < lo)
			lo = ph.p_vaddr;
		if (ph.p_vaddr + ph.p_memsz > hi)
			hi = ph.p_vaddr + ph.p_memsz;
	}
	if (hi <= lo)
		return -1;
	im->vmin = lo & ~(SC_PAGE - 1);
	im->vmax = (hi + SC_PAGE - 1) & ~(SC_PAGE - 1);
	im->span = im->vmax - im->vmin;
	im->base = mmap(NULL, im->span, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0);
	if (im->base == MAP_FAILED) {
		im->base = NULL;
		return -1;
	}
	for (i = 0; i < n; i++) {
		uint64_t skew;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !ph.p_filesz)
			continue;
		skew = ph.p_vaddr & (SC_PAGE - 1);
		if (mmap(im->base + (ph.p_vaddr - skew - im->vmin),
			 ph.p_filesz + skew, PROT_READ, MAP_PRIVATE | MAP_FIXED,
			 fd, (off_t)(ph.p_offset - skew)) == MAP_FAILED)
			return -1;
	}
	if (eh >= im->vmin && eh < im->vmax)
		im->hdr = im->base + (eh - im->vmin);
	return 0;
}

static void img_free(struct sc_img *im)
{
	if (!im)
		return;
	if (im->base)
		munmap(im->base, im->span);
	free(im->path);
	free(im);
}

/*
 * The image of the file at path, mapped by the process through file (its
 * /proc/PID/map_files link), shared by every module with the same build
 * id.  The mapped file itself first: in a container the path the maps
 * name may lead nowhere from here (a chroot's, seen from outside it, or
 * a root that is mounted only in its own namespace); then the process's
 * view of the path, then ours.
 */
static struct sc_img *img_get(struct ls_stackcopy *sc, const char *path,
			      const char *file)
{
	struct sc_img *im = calloc(1, sizeof(*im)), **grown;
	char buf[4200];
	Elf *e = NULL;
	size_t i;
	int fd;

	fd = open(file, O_RDONLY | O_CLOEXEC);
	snprintf(buf, sizeof(buf), "/proc/%d/root%s", sc->pid, path);
	if (fd < 0)
		fd = open(buf, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (!im || fd < 0)
		goto fail;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF)
		goto fail;
	elf_build_id(e, im->id, &im->idlen);
	for (i = 0; i < sc->nimgs; i++) {
		struct sc_img *o = sc->imgs[i];

		if (im->idlen ? o->idlen == im->idlen &&
				!memcmp(o->id, im->id, im->idlen) :
				!strcmp(o->path, path)) {
			elf_end(e);
			close(fd);
			free(im);
			return o;
		}
	}
	im->path = strdup(path);
	grown = realloc(sc->imgs, (sc->nimgs + 1) * sizeof(*grown));
	if (!im->path || !grown || img_map(im, fd, e) < 0) {
		if (grown)
			sc->imgs = grown;
		goto fail;
	}
	sc->imgs = grown;
	sc->imgs[sc->nimgs++] = im;
	elf_end(e);
	close(fd);
	return im;
fail:
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	img_free(im);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The module map.                                                     */

/* Place a module whose file offset off is mapped at lo: its bias. */
static int mod_place(struct sc_mod *m, const struct sc_img *im, uint64_t lo,
		     uint64_t off)
{
	size_t i;

	for (i = 0; i < im->nseg; i++) {
		if (off < (im->seg[i].off & ~(SC_PAGE - 1)) ||
		    off >= im->seg[i].off + im->seg[i].filesz)
			continue;
		m->bias = lo - off + im->seg[i].off - im->seg[i].vaddr;
		m->lo = m->bias + im->vmin;
		m->hi = m->bias + im->vmax;
		return 0;
	}
	return -1;
}

static struct sc_mod *mod_at(struct ls_stackcopy *sc, uint64_t pc)
{
	size_t i;

	for (i = 0; i < sc->nmods; i++)
		if (sc->mods[i].gen_to == LSNAP_GEN_LOADED &&
		    pc >= sc->mods[i].lo && pc < sc->mods[i].hi)
			return &sc->mods[i];
	return NULL;
}

static int mod_known(struct ls_stackcopy *sc, uint64_t lo, const char *path)
{
	struct sc_mod *m = mod_at(sc, lo);

	if (!m)
		return 0;
	if (!strcmp(m->path, path))
		return 1;
	/* Another object at its addresses: the old one was unloaded. */
	m->gen_to = ++sc->gen;
	return 0;
}

static void mod_add(struct ls_stackcopy *sc, uint64_t lo, uint64_t hi,
		    uint64_t off, const char *path)
{
	struct sc_img *im;
	struct sc_mod m = { .gen_from = sc->gen, .gen_to = LSNAP_GEN_LOADED };
	char file[96];

	if (mod_known(sc, lo, path))
		return;
	snprintf(file, sizeof(file), "/proc/%d/map_files/%llx-%llx", sc->pid,
		 (unsigned long long)lo, (unsigned long long)hi);
	im = img_get(sc, path, file);
	if (!im || mod_place(&m, im, lo, off) < 0)
		return;
	if (sc->nmods == sc->capmods) {
		size_t cap = sc->capmods ? 2 * sc->capmods : 32;
		struct sc_mod *g = realloc(sc->mods, cap * sizeof(*g));

		if (!g)
			return;
		sc->mods = g;
		sc->capmods = cap;
	}
	m.path = strdup(path);
	m.file = strdup(file);
	if (!m.path || !m.file) {
		free(m.path);
		free(m.file);
		return;
	}
	m.img = im;
	sc->mods[sc->nmods++] = m;
}

/* One module per file: its first mapping (lowest, usually offset 0) is
 * enough to place it. */
static int maps_read(struct ls_stackcopy *sc)
{
	char buf[4400], path[4200], last[4200] = "";
	unsigned long long lo, hi, off;
	FILE *f;

	snprintf(buf, sizeof(buf), "/proc/%d/maps", sc->pid);
	f = fopen(buf, "re");
	if (!f)
		return -errno;
	while (fgets(buf, sizeof(buf), f)) {
		path[0] = 0;
		if (sscanf(buf, "%llx-%llx %*s %llx %*s %*s %4199[^\n]", &lo,
			   &hi, &off, path) < 3 || path[0] != '/')
			continue;
		if (strstr(path, " (deleted)") || !strcmp(path, last))
			continue;
		snprintf(last, sizeof(last), "%s", path);
		mod_add(sc, lo, hi, off, path);
	}
	fclose(f);
	return 0;
}

int ls_stackcopy_new(int pid, struct ls_stackcopy **out, char *err,
		     size_t errlen)
{
	struct ls_stackcopy *sc = calloc(1, sizeof(*sc));
	int ret;

	*out = NULL;
	elf_version(EV_CURRENT);
	if (!sc || !(sc->rules = calloc(SC_RULES, sizeof(*sc->rules)))) {
		free(sc);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	sc->pid = pid;
	ret = maps_read(sc);
	if (ret < 0) {
		snprintf(err, errlen, "cannot read the memory map of pid %d: %s",
			 pid, ret == -ENOENT ? "no such process" : strerror(-ret));
		ls_stackcopy_free(sc);
		return ret == -ENOENT ? -ESRCH : ret;
	}
	*out = sc;
	return 0;
}

void ls_stackcopy_free(struct ls_stackcopy *sc)
{
	size_t i;

	if (!sc)
		return;
	for (i = 0; i < sc->nmods; i++) {
		free(sc->mods[i].path);
		free(sc->mods[i].file);
	}
	for (i = 0; i < sc->nimgs; i++)
		img_free(sc->imgs[i]);
	free(sc->mods);
	free(sc->imgs);
	free(sc->rules);
	free(sc);
}

void ls_stackcopy_refresh(struct ls_stackcopy *sc)
{
	maps_read(sc);
}

void ls_stackcopy_exec(struct ls_stackcopy *sc)
{
	size_t i;

	sc->gen++;
	for (i = 0; i < sc->nmods; i++)
		if (sc->mods[i].gen_to == LSNAP_GEN_LOADED)
			sc->mods[i].gen_to = sc->gen;
	maps_read(sc);
}

uint32_t ls_stackcopy_gen(const struct ls_stackcopy *sc)
{
	return sc->gen;
}

int ls_stackcopy_modules(const struct ls_stackcopy *sc,
			 struct ls_snapshot *snap)
{
	struct ls_module *g;
	size_t i;

	if (!sc->nmods)
		return 0;
	g = realloc(snap->modules, (snap->nmodules + sc->nmods) * sizeof(*g));
	if (!g)
		return -ENOMEM;
	snap->modules = g;
	for (i = 0; i < sc->nmods; i++) {
		const struct sc_mod *m = &sc->mods[i];
		struct ls_module *d = &g[snap->nmodules];

		memset(d, 0, sizeof(*d));
		d->bias = m->bias;
		d->lo = m->lo;
		d->hi = m->hi;
		d->gen_from = m->gen_from;
		d->gen_to = m->gen_to;
		d->build_id_len = m->img->idlen;
		memcpy(d->build_id, m->img->id, m->img->idlen);
		d->path = strdup(m->path);
		d->file = strdup(m->file);
		if (!d->path || !d->file) {
			free(d->path);
			free(d->file);
			return -ENOMEM;
		}
		snap->nmodules++;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The walk.                                                           */

struct sc_stack {
	uint64_t sp0;
	const uint8_t *buf;
	size_t len;
};

static int sc_load(const struct sc_stack *s, uint64_t at, uint64_t *v)
{
	if (at < s->sp0 || at - s->sp0 > s->len || s->len - (at - s->sp0) < 8)
		return -1;
	memcpy(v, s->buf + (at - s->sp0), 8);
	return 0;
}

static uint64_t sc_rule(struct ls_stackcopy *sc, uint64_t pc, int exact)
{
	uint64_t key = pc << 1 | (exact != 0), h;
	struct sc_rule *r;
	struct sc_mod *m = mod_at(sc, exact ? pc : pc - 1);
	union ls_cfi_rule none = { .word = 0 };

	h = (key * 0x9e3779b97f4a7c15ULL) >> 50;
	r = &sc->rules[h & (SC_RULES - 1)];
	if (r->key == key && r->gen == sc->gen)
		return r->rule;
	none.f.bits = LS_CFI_STOP;
	if (!m || !m->img->hdr)
		return none.word;
	sc->misses++;
	r->key = key;
	r->gen = sc->gen;
	r->rule = ls_cfi_rule_in((uint64_t)(uintptr_t)m->img->base,
				 (uint64_t)(uintptr_t)m->img->base + m->img->span,
				 m->img->hdr,
				 (uint64_t)(uintptr_t)m->img->base +
				 (pc - m->bias - m->img->vmin), exact);
	return r->rule;
}

struct sc_regs {
	uint64_t pc, sp, bp;
};

/* One step with a CFI rule, the agent's semantics (agent/unwind.c). */
static int sc_step_cfi(const struct sc_stack *s, union ls_cfi_rule r,
		       struct sc_regs *g)
{
	uint64_t cfa, at, nbp = g->bp, pc;
	unsigned how = (unsigned)(r.f.bits >> LS_CFI_RBP_SHIFT) & 3;

	cfa = (r.f.bits & LS_CFI_CFA_RBP ? g->bp : g->sp) +
	      (uint64_t)(int64_t)r.f.cfa_off;
	if ((r.f.bits & LS_CFI_CFA_DEREF) && sc_load(s, cfa, &cfa))
		return -1;
	if (cfa <= g->sp)
		return -1;	/* the CFA must rise */
	if (how != LS_CFI_RBP_SAME) {
		at = (how == LS_CFI_RBP_AT_CFA ? cfa : g->bp) +
		     (uint64_t)(int64_t)r.f.rbp_off;
		if (how == LS_CFI_RBP_UNDEF || sc_load(s, at, &nbp))
			nbp = 0;
	}
	if (sc_load(s, cfa + (uint64_t)(int64_t)r.f.ra_off, &pc))
		return -1;
	g->pc = pc;
	g->sp = cfa;
	g->bp = nbp;
	return 0;
}

/* No CFI: the frame-pointer chain, if %rbp points into the copy. */
static int sc_step_fp(const struct sc_stack *s, struct sc_regs *g)
{
	uint64_t nbp, pc;

	if (g->bp <= g->sp || sc_load(s, g->bp, &nbp) ||
	    sc_load(s, g->bp + 8, &pc))
		return -1;
	g->sp = g->bp + 16;
	g->bp = nbp;
	g->pc = pc;
	return 0;
}

/* Through a signal frame: the ucontext is at sp (x86_64 layout:
 * uc_mcontext.gregs at 40, REG_RBP 10, REG_RSP 15, REG_RIP 16). */
static int sc_step_signal(const struct sc_stack *s, struct sc_regs *g)
{
	uint64_t uc = g->sp, pc, sp, bp;

	if (sc_load(s, uc + 40 + 8 * 16, &pc) ||
	    sc_load(s, uc + 40 + 8 * 15, &sp) ||
	    sc_load(s, uc + 40 + 8 * 10, &bp) || sp <= g->sp)
		return -1;
	g->pc = pc;
	g->sp = sp;
	g->bp = bp;
	return 0;
}

int ls_stackcopy_unwind(struct ls_stackcopy *sc,
			const struct ls_stackregs *regs, const void *stack,
			size_t len, uint64_t *pcs, int max)
{
	struct sc_stack s = { regs->sp, stack, len };
	struct sc_regs g = { regs->pc, regs->sp, regs->bp };
	union ls_cfi_rule r;
	int n = 0, exact = regs->exact, ret;

	sc->walks++;
	while (n < max && g.pc) {
		pcs[n++] = g.pc;
		r.word = sc_rule(sc, g.pc, exact);
		switch (LS_CFI_KIND(r.f.bits)) {
		case LS_CFI_FRAME:
			ret = sc_step_cfi(&s, r, &g);
			break;
		case LS_CFI_SIGNAL:
			ret = sc_step_signal(&s, &g);
			break;
		case LS_CFI_OUTERMOST:
			return n;
		default:
			ret = sc_step_fp(&s, &g);
		}
		if (ret < 0)
			break;
		exact = LS_CFI_KIND(r.f.bits) == LS_CFI_SIGNAL;
	}
	return n;
}
