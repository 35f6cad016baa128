/*
 * stack.c - a site's frames, symbolized and expanded to their inline
 * chains, as every renderer prints them.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "stack.h"
#include "util.h"

int ls_symframe_is_agent(const struct ls_symframe *f)
{
	/* Delivered as a memfd by attach: "/memfd:libleakscope.so". */
	return f->module &&
		(!strncmp(ls_sym_basename(f->module), "libleakscope", 12) ||
		 !strncmp(ls_sym_basename(f->module), "memfd:libleakscope", 18));
}

/* --- the memo: what a report formats once per distinct frame ---------- */

/* A function name (the symbolizer's string, by address) and its short
 * form, NULL when nothing is cut. */
struct memo_name {
	const char *name;
	char *short_name;
};

/* A frame, by the values ls_frame_format() reads, and its text. */
struct memo_line {
	char *text;
	struct ls_symframe key;
	size_t len;
};

/* A return address (at a module-map generation) and its symbolized
 * frames, as ls_symbolize_frame gave them. */
struct memo_pc {
	struct ls_symframe *f;
	struct ls_frame_src *src;	/* n, each frame's report lines */
	size_t n;
	uint64_t addr;
	uint32_t gen;
};

/* A frame's line as ls_stack_frame_line() made it, with its names cut
 * ([0]) and whole ([1]): a stack's lines are then copied, not looked up
 * (ls_stack_lines). */
struct ls_frame_src {
	const char *text[2];
	size_t len[2];
	const char *cut;	/* the function's name cut (shorten) */
};

struct ls_frame_memo {
	struct memo_name *names;	/* open addressing, a power of 2 */
	size_t nnames, names_cap;
	struct memo_line *lines;
	size_t nlines, lines_cap;
	struct memo_pc *pcs;
	size_t npcs, pcs_cap;
};

/* The product's high bits folded down: the tables index by the low
 * ones, which a multiply takes from the key's low bits only (a name's
 * address, 16-byte aligned, hit 4 slots of 64). */
static size_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h *= 0xff51afd7ed558ccdull;
	return (size_t)(h ^ h >> 32);
}

/* The fields that tell a report's frames apart (line_same compares all). */
static size_t line_hash(const struct ls_symframe *f)
{
	return mix(mix(f->addr, (uintptr_t)f->function),
		   (uint64_t)(unsigned)f->line << 1 | (f->inlined != 0));
}

static int line_same(const struct ls_symframe *a, const struct ls_symframe *b)
{
	return a->addr == b->addr && a->function == b->function &&
	       a->module == b->module && a->file == b->file &&
	       a->offset == b->offset && a->line == b->line &&
	       !a->inlined == !b->inlined;
}

static void memo_free(struct ls_frame_memo *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->names_cap; i++)
		free(m->names[i].short_name);
	for (i = 0; i < m->lines_cap; i++)
		free(m->lines[i].text);
	for (i = 0; i < m->pcs_cap; i++) {
		free(m->pcs[i].f);
		free(m->pcs[i].src);
	}
	free(m->names);
	free(m->lines);
	free(m->pcs);
	free(m);
}

/* Forget the memo when its strings may no longer be the frames' (another
 * symbolizer, or frames copied in from elsewhere). */
static void memo_reset(struct ls_stack *st, const struct ls_symbolizer *sym)
{
	if (st->memo && st->memo_sym == sym && sym)
		return;
	memo_free(st->memo);
	st->memo = NULL;
	st->memo_sym = sym;
}

static int memo_get(struct ls_stack *st)
{
	if (!st->memo && !(st->memo = calloc(1, sizeof(*st->memo))))
		return -ENOMEM;
	return 0;
}

static size_t name_hash(const void *e)
{
	return mix(0, (uintptr_t)((const struct memo_name *)e)->name);
}

static size_t pc_hash(const void *e)
{
	const struct memo_pc *p = e;

	return mix(p->gen, p->addr);
}

static size_t line_entry_hash(const void *e)
{
	return line_hash(&((const struct memo_line *)e)->key);
}

/* Double the table *tab (entries of size bytes, the first member of each
 * a pointer set when the entry is used), rehashing with hash.  Returns 0
 * or -ENOMEM. */
static int table_room(void *tab, size_t *cap, size_t n, size_t size,
		      size_t (*hash)(const void *e))
{
	char *old = *(char **)tab, *t;
	size_t ncap = *cap ? *cap * 2 : 64, i, j;

	if (!(t = calloc(ncap, size)))
		return -ENOMEM;
	for (j = 0; j < *cap; j++) {
		const char *e = old + j * size;

		if (!*(void *const *)e)
			continue;
		i = hash(e) & (ncap - 1);
		while (*(void **)(t + i * size))
			i = (i + 1) & (ncap - 1);
		memcpy(t + i * size, e, size);
	}
	free(old);
	*(char **)tab = t;
	*cap = ncap;
	return 0;
}

/* The slot of name in the names table. */
static struct memo_name *name_slot(struct ls_frame_memo *m, const char *name)
{
	size_t i;

	if (m->nnames * 2 >= m->names_cap &&
	    table_room(&m->names, &m->names_cap, m->nnames,
		       sizeof(*m->names), name_hash))
		return NULL;
	i = mix(0, (uintptr_t)name) & (m->names_cap - 1);
	while (m->names[i].name && m->names[i].name != name)
		i = (i + 1) & (m->names_cap - 1);
	return &m->names[i];
}

static struct memo_line *line_slot(struct ls_frame_memo *m,
				   const struct ls_symframe *f)
{
	size_t i;

	if (m->nlines * 2 >= m->lines_cap &&
	    table_room(&m->lines, &m->lines_cap, m->nlines,
		       sizeof(*m->lines), line_entry_hash))
		return NULL;
	i = line_hash(f) & (m->lines_cap - 1);
	while (m->lines[i].text && !line_same(&m->lines[i].key, f))
		i = (i + 1) & (m->lines_cap - 1);
	return &m->lines[i];
}

/* addr's frames at generation gen, symbolized on the first ask. */
static int pc_frames(struct ls_stack *st, struct ls_symbolizer *sym,
		     uint32_t gen, uint64_t addr, const struct memo_pc **out)
{
	struct ls_symframe fr[LS_SYM_MAX_FRAMES];
	struct ls_frame_memo *m;
	struct memo_pc key = { .addr = addr, .gen = gen }, *p;
	size_t i, j, n;
	int ret;

	if (memo_get(st))
		return -ENOMEM;
	m = st->memo;
	if (m->npcs * 2 >= m->pcs_cap &&
	    table_room(&m->pcs, &m->pcs_cap, m->npcs, sizeof(*m->pcs),
		       pc_hash))
		return -ENOMEM;
	i = pc_hash(&key) & (m->pcs_cap - 1);
	while (m->pcs[i].f && (m->pcs[i].addr != addr || m->pcs[i].gen != gen))
		i = (i + 1) & (m->pcs_cap - 1);
	p = &m->pcs[i];
	if (!p->f) {
		ret = ls_symbolize_frame(sym, gen, addr, fr, LS_SYM_MAX_FRAMES,
					 &n);
		if (ret)
			return ret;
		if (!(p->f = malloc((n ? n : 1) * sizeof(*fr))) ||
		    !(p->src = calloc(n ? n : 1, sizeof(*p->src)))) {
			free(p->f);
			p->f = NULL;
			return -ENOMEM;
		}
		/* The agent's own frames are left out here, once per
		 * address, not in every stack that has it. */
		for (p->n = j = 0; j < n; j++)
			if (!ls_symframe_is_agent(&fr[j]))
				p->f[p->n++] = fr[j];
		p->addr = addr;
		p->gen = gen;
		m->npcs++;
	}
	*out = p;
	return 0;
}

const char *ls_stack_frame_line(struct ls_stack *st, size_t i, size_t *len)
{
	const struct ls_symframe *f = &st->f[i];
	struct memo_line *l;
	char buf[512];
	size_t need;

	if (memo_get(st) || !(l = line_slot(st->memo, f)))
		return NULL;
	if (!l->text) {
		need = ls_frame_format(buf, sizeof(buf), f, LS_FRAME_ALL);
		if (!(l->text = malloc(need + 4)))
			return NULL;
		if (need < sizeof(buf))
			memcpy(l->text + 2, buf, need);
		else
			ls_frame_format(l->text + 2, need + 1, f,
					LS_FRAME_ALL);
		memcpy(l->text, "\t\t", 2);
		memcpy(l->text + 2 + need, "\n", 2);
		l->key = *f;
		l->len = need + 3;
		st->memo->nlines++;
	}
	*len = l->len;
	return l->text;
}

const char *ls_stack_lines(struct ls_stack *st, size_t *len)
{
	size_t i, k, n = 0;
	const char *t;
	int full = !!st->full_names;

	for (i = 0; i < st->n; i++) {
		struct ls_frame_src *src = st->memo_sym ? st->src[i] : NULL;

		if (src && src->text[full]) {
			t = src->text[full];
			k = src->len[full];
		} else if (!(t = ls_stack_frame_line(st, i, &k))) {
			return NULL;
		} else if (src) {
			src->text[full] = t;
			src->len[full] = k;
		}
		if (n + k > st->text_cap &&
		    LS_GROW(st->text, n + k, st->text_cap))
			return NULL;
		memcpy(st->text + n, t, k);
		n += k;
	}
	*len = n;
	return n ? st->text : "";
}

static void drop_names(struct ls_stack *st)
{
	size_t i;

	for (i = 0; i < st->nown; i++)
		free(st->own[i]);
	st->nown = 0;
}

int ls_stack_build(struct ls_symbolizer *sym, const struct ls_site *site,
		   struct ls_stack *st)
{
	const struct memo_pc *pc;
	size_t i, j;
	int ret;

	st->n = 0;
	st->full_names = 1;
	drop_names(st);
	memo_reset(st, sym);
	for (i = 0; i < site->nframes; i++) {
		/* Each distinct return address symbolized once while st
		 * builds with sym: the stacks of a report share most. */
		ret = pc_frames(st, sym, site->gen, site->frames[i], &pc);
		if (ret)
			return ret;
		if ((st->n + pc->n > st->cap &&
		     LS_GROW(st->f, st->n + pc->n, st->cap)) ||
		    (st->n + pc->n > st->src_cap &&
		     LS_GROW(st->src, st->n + pc->n, st->src_cap)))
			return -ENOMEM;
		memcpy(st->f + st->n, pc->f, pc->n * sizeof(*pc->f));
		for (j = 0; j < pc->n; j++)
			st->src[st->n + j] = &pc->src[j];
		st->n += pc->n;
	}
	return 0;
}

int ls_stack_set(struct ls_stack *st, const struct ls_symframe *f, size_t n)
{
	st->n = 0;
	drop_names(st);
	memo_reset(st, NULL);
	if (LS_GROW(st->f, n ? n : 1, st->cap))
		return -ENOMEM;
	memcpy(st->f, f, n * sizeof(*f));
	st->n = n;
	return 0;
}

void ls_stack_release(struct ls_stack *st)
{
	drop_names(st);
	memo_reset(st, NULL);
	free(st->own);
	free(st->f);
	free(st->src);
	free(st->text);
	memset(st, 0, sizeof(*st));
}

/* Append s to buf[*len..cap) with control characters as '?'; *len
 * counts what the whole text needs. */
static void put_safe(char *buf, size_t cap, size_t *len, const char *s)
{
	for (; *s; s++, (*len)++)
		if (*len + 1 < cap)
			buf[*len] = (unsigned char)*s < 0x20 || *s == 0x7f ?
				    '?' : *s;
}

static void put_fmt(char *buf, size_t cap, size_t *len, const char *fmt,
		    uint64_t v)
{
	char tmp[32];

	snprintf(tmp, sizeof(tmp), fmt, v);
	put_safe(buf, cap, len, tmp);
}

size_t ls_frame_format(char *buf, size_t cap, const struct ls_symframe *f,
		       unsigned parts)
{
	size_t len = 0;

	if (parts & LS_FRAME_NAME) {
		if (f->function) {
			put_safe(buf, cap, &len, f->function);
			if (!f->inlined && f->addr >= LSNAP_FRAME_STOP_END)
				put_fmt(buf, cap, &len, "+0x%" PRIx64,
					f->offset);
		} else {
			put_fmt(buf, cap, &len, "0x%" PRIx64, f->addr);
		}
		put_safe(buf, cap, &len, " [");
		put_safe(buf, cap, &len, f->module ?
			 ls_sym_basename(f->module) : "unknown");
		put_safe(buf, cap, &len, "]");
	}
	if ((parts & LS_FRAME_LINE) && f->file) {
		put_safe(buf, cap, &len, len ? " " : "");
		put_safe(buf, cap, &len, ls_sym_basename(f->file));
		if (f->line)
			put_fmt(buf, cap, &len, ":%" PRIu64,
				(uint64_t)f->line);
	}
	if ((parts & LS_FRAME_LINE) && f->inlined)
		put_safe(buf, cap, &len, " (inlined)");
	buf[len < cap ? len : cap - 1] = 0;
	return len;
}

const char *ls_frame_text(const struct ls_symframe *f, unsigned parts,
			  char *buf, size_t cap, char **own)
{
	size_t need = ls_frame_format(buf, cap, f, parts);

	*own = need < cap ? NULL : malloc(need + 1);
	if (!*own)
		return buf;
	ls_frame_format(*own, need + 1, f, parts);
	return *own;
}

void ls_stack_summary(const struct ls_stack *st, size_t n, char *buf,
		      size_t cap)
{
	size_t len = 0, i;

	buf[0] = 0;
	for (i = 0; i < st->n && i < n && len < cap; i++) {
		const struct ls_symframe *f = &st->f[i];
		const char *sep = i ? " < " : "";

		if (!f->function) {
			len += (size_t)snprintf(buf + len, cap - len, "%s",
						sep);
			if (len < cap)
				len += ls_frame_format(buf + len, cap - len,
						       f, LS_FRAME_NAME);
		} else if (!f->line)
			len += (size_t)snprintf(buf + len, cap - len, "%s%s",
						sep, f->function);
		else if (!i && f->file)	/* two sites of one function differ
					   by their line */
			len += (size_t)snprintf(buf + len, cap - len,
						"%s (%s:%d)", f->function,
						ls_sym_basename(f->file),
						f->line);
		else
			len += (size_t)snprintf(buf + len, cap - len,
						"%s%s:%d", sep, f->function,
						f->line);
	}
}

int ls_symframe_is_runtime(const struct ls_symframe *f)
{
	static const char *const prefix[] = {
		"libc.so", "libc-", "libstdc++", "libgcc_s", "ld-linux",
		"ld64.so", "libm.so", "libpthread", "libdl.so",
	};
	const char *base;
	size_t i;

	/* The C runtime's start-up code linked into the program (crt1.o). */
	if (f->function && !strcmp(f->function, "_start"))
		return 1;
	if (!f->module)
		return 0;
	base = ls_sym_basename(f->module);
	for (i = 0; i < sizeof(prefix) / sizeof(*prefix); i++)
		if (!strncmp(base, prefix[i], strlen(prefix[i])))
			return 1;
	return 0;
}

/* --- template arguments ------------------------------------------------ */

/* At s[i], the end of the word "operator"?  Then the length of the
 * operator's symbols that follow ("<<=", "->*", "<"), else 0. */
static size_t operator_symbols(const char *s, size_t i)
{
	static const char *const ops[] = {
		"<=>", "<<=", ">>=", "->*", "<<", ">>", "<=", ">=", "->",
		"<", ">",
	};
	size_t k;

	/* Every operator's symbols start with one of these: the rest of a
	 * name's bytes are done with in one compare. */
	if ((s[i] != '<' && s[i] != '>' && s[i] != '-') ||
	    i < 8 || strncmp(s + i - 8, "operator", 8) ||
	    (i > 8 && (isalnum((unsigned char)s[i - 9]) || s[i - 9] == '_')))
		return 0;
	for (k = 0; k < sizeof(ops) / sizeof(*ops); k++)
		if (!strncmp(s + i, ops[k], strlen(ops[k])))
			return strlen(ops[k]);
	return 0;
}

#define ELLIPSIS "\xe2\x80\xa6"	/* U+2026, in UTF-8 */

char *ls_short_name(const char *name)
{
	size_t len = strlen(name), i, o = 0, op;
	/* "<>" (2 bytes) becomes "<…>" (5): never more than 2.5 times. */
	char *out = malloc(len * 3 + 8);
	int depth = 0, cut = 0;

	if (!out)
		return NULL;
	for (i = 0; i < len; i++) {
		if ((op = operator_symbols(name, i))) {
			if (!depth)
				memcpy(out + o, name + i, op), o += op;
			i += op - 1;
		} else if (name[i] == '<') {
			if (!depth++) {
				memcpy(out + o, "<" ELLIPSIS, sizeof("<" ELLIPSIS) - 1);
				o += sizeof("<" ELLIPSIS) - 1;
			}
			cut = 1;
		} else if (name[i] == '>' && depth) {
			if (!--depth)
				out[o++] = '>';
		} else if (!depth) {
			out[o++] = name[i];
		}
	}
	out[o] = 0;
	if (!cut || depth) {	/* nothing cut, or unbalanced: keep it */
		free(out);
		errno = 0;
		return NULL;
	}
	return out;
}

/* --- the view ------------------------------------------------------------ */

/* Names are cut once per distinct name: in the memo while st builds
 * with one symbolizer (whose strings stay put), else kept in st->own
 * until the next build. */
static int shorten_frame(struct ls_stack *st, size_t i)
{
	struct memo_name *slot = NULL;
	char *s;

	if (st->memo_sym) {
		if (memo_get(st) ||
		    !(slot = name_slot(st->memo, st->f[i].function)))
			return -ENOMEM;
		if (slot->name) {
			if (slot->short_name)
				st->f[i].function = slot->short_name;
			return 0;
		}
	}
	if (!strchr(st->f[i].function, '<')) {
		if (slot) {
			slot->name = st->f[i].function;
			st->memo->nnames++;
		}
		return 0;
	}
	s = ls_short_name(st->f[i].function);
	if (!s && errno == ENOMEM)
		return -ENOMEM;
	if (slot) {
		slot->name = st->f[i].function;
		slot->short_name = s;
		st->memo->nnames++;
	} else if (s && LS_GROW(st->own, st->nown + 1, st->own_cap)) {
		free(s);
		return -ENOMEM;
	} else if (s) {
		st->own[st->nown++] = s;
	}
	if (s)
		st->f[i].function = s;
	return 0;
}

/* A frame from the memo keeps its cut name there: looked up once per
 * distinct frame, not once per stack. */
static int shorten(struct ls_stack *st)
{
	size_t i;
	int ret;

	for (i = 0; i < st->n; i++) {
		struct ls_frame_src *src = st->memo_sym ? st->src[i] : NULL;

		if (!st->f[i].function)
			continue;
		if (src && src->cut) {
			st->f[i].function = src->cut;
			continue;
		}
		if ((ret = shorten_frame(st, i)))
			return ret;
		if (src)
			src->cut = st->f[i].function;
	}
	return 0;
}

/* Keep [first, last] of the program's own frames' span. */
static void hide_runtime(struct ls_stack *st)
{
	size_t first = st->n, last = 0, i;

	for (i = 0; i < st->n; i++)
		if (!ls_symframe_is_runtime(&st->f[i])) {
			if (first == st->n)
				first = i;
			last = i;
		}
	if (first == st->n)
		return;		/* nothing of the program's: keep it all */
	memmove(st->f, st->f + first, (last - first + 1) * sizeof(*st->f));
	if (st->memo_sym)
		memmove(st->src, st->src + first,
			(last - first + 1) * sizeof(*st->src));
	st->n = last - first + 1;
}

int ls_stack_view(struct ls_stack *st, unsigned depth, int full_names,
		  int hide)
{
	if (hide)
		hide_runtime(st);
	if (depth && st->n > depth)
		st->n = depth;
	st->full_names = full_names;
	return full_names ? 0 : shorten(st);
}
