/*
 * symaddr.c - drive lib/symbolize.c from a script, as git's test-tool
 * drives git's internals: symbolize addresses of one ELF file the way a
 * report symbolizes a stack, for tests/integration/t_symbols.py to compare
 * with llvm-symbolizer and addr2line.
 *
 *   symaddr FILE < addresses
 *
 * Each input line is a return address in FILE's own address space (a
 * p_vaddr, as a report's frame at load bias 0), in hexadecimal.  For each
 * one it prints the address, then one line per frame, innermost first:
 *
 *   0x1149
 *   F<TAB>function<TAB>symbol<TAB>file<TAB>line<TAB>inlined<TAB>offset
 *
 * (symbol: the name as mangled) with "??" for an unknown function or file and 0 for an unknown line,
 * then an empty line.  Exit status: 0, 1 for a file that cannot be opened
 * as ELF, 2 for a malformed address or a usage error.
 */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../lib/symbolize.h"

static char *debuginfo_path;

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

/* The module record a snapshot would hold for path loaded at bias 0:
 * its build id read from the file itself. */
static int describe(const char *path, struct ls_module *m)
{
	Dwfl *dwfl = dwfl_begin(&callbacks);
	Dwfl_Module *mod;
	const unsigned char *bits;
	GElf_Addr vaddr;
	int len;

	if (!dwfl)
		return -1;
	dwfl_report_begin(dwfl);
	mod = dwfl_report_elf(dwfl, "file", path, -1, 0, true);
	dwfl_report_end(dwfl, NULL, NULL);
	len = mod ? dwfl_module_build_id(mod, &bits, &vaddr) : -1;
	if (len > LSNAP_BUILD_ID_MAX)
		len = -1;
	if (len > 0) {
		memcpy(m->build_id, bits, (size_t)len);
		m->build_id_len = (unsigned)len;
	}
	dwfl_end(dwfl);
	if (!mod)
		return -1;
	m->bias = 0;
	m->lo = 0;
	m->hi = UINT64_MAX;
	m->gen_from = 1;
	m->gen_to = LSNAP_GEN_LOADED;
	m->path = (char *)path;
	return 0;
}

static void put_frame(const struct ls_symframe *f)
{
	printf("F\t%s\t%s\t%s\t%d\t%d\t0x%" PRIx64 "\n",
	       f->function ? f->function : "??", f->symbol ? f->symbol : "??",
	       f->file ? f->file : "??",
	       f->line, f->inlined, f->offset);
}

int main(int argc, char **argv)
{
	struct ls_symframe fr[LS_SYM_MAX_FRAMES];
	struct ls_snapshot snap;
	struct ls_module m;
	struct ls_symbolizer *s;
	char line[64];
	size_t n, i;

	if (argc != 2) {
		fputs("usage: symaddr FILE < addresses\n", stderr);
		return 2;
	}
	memset(&snap, 0, sizeof(snap));
	memset(&m, 0, sizeof(m));
	if (describe(argv[1], &m)) {
		fprintf(stderr, "symaddr: cannot open '%s' as ELF\n", argv[1]);
		return 1;
	}
	snap.modules = &m;
	snap.nmodules = 1;
	if (!(s = ls_symbolizer_new(&snap))) {
		perror("symaddr");
		return 1;
	}
	while (fgets(line, sizeof(line), stdin)) {
		char *end;
		uint64_t a = strtoull(line, &end, 16);

		if (end == line || (*end && *end != '\n')) {
			fprintf(stderr, "symaddr: bad address '%s'\n", line);
			return 2;
		}
		if (ls_symbolize_frame(s, 1, a, fr, LS_SYM_MAX_FRAMES, &n)) {
			fputs("symaddr: out of memory\n", stderr);
			return 1;
		}
		printf("0x%" PRIx64 "\n", a);
		for (i = 0; i < n; i++)
			put_frame(&fr[i]);
		putchar('\n');
	}
	ls_symbolizer_free(s);
	return 0;
}
