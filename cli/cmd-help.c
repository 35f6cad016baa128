/*
 * cmd-help.c - `leakscope help [COMMAND]` and `leakscope help --man`: the
 * manual page leakscope(1), printed in roff from the same tables as every
 * command's --help (the command table, their option tables, the tables of
 * sources and renderers).  `make` writes it to build/leakscope.1 and
 * `make install` installs it.
 */
#include <stdio.h>
#include <string.h>
#include "../common/contract.h"
#include "../lib/source.h"
#include "cmds.h"

const struct ls_command *ls_help_commands;

#define A(field) LS_ARG(struct ls_help_args, field)

static const struct ls_option own[] = {
	{ .kind = LS_OPT_FLAG,
	  .long_name = "man",
	  .offset = A(man),
	  .help = "print the manual page leakscope(1) in roff" },
	{ .kind = LS_OPT_FLAG,
	  .long_name = "markdown",
	  .offset = A(markdown),
	  .help = "print the option reference docs/OPTIONS.md" },
	{ .kind = LS_OPT_END },
};

const struct ls_usage ls_help_usage = {
	"help", "[--man | --markdown] [COMMAND]",
	"describe a command, or print the manual page",
	"Print the help of COMMAND (as 'leakscope COMMAND --help'), or with\n"
	"--man the whole manual page, or with --markdown the option reference,\n"
	"generated from the same tables.",
	(const struct ls_option *const[]){ own, NULL },
	NULL,
	0,	/* no report options */
};

const char ls_exit_status_text[] =
"Exit status (every command):\n"
"  0    success\n"
"  1    a command on a process or snapshot could not do what it was asked\n"
"       (no such process, no agent, unreadable or corrupt file, output not\n"
"       writable)\n"
"  99   run --fail-on-leak: a traced process ended with more outstanding\n"
"       than the limit\n"
"  125  a usage error, in every command (unknown command or option, bad or\n"
"       missing value, wrong arguments); and every failure of run itself\n"
"       (agent missing, output not writable, a program LD_PRELOAD cannot\n"
"       reach)\n"
"  126  run: the command cannot be executed\n"
"  127  run: the command was not found\n"
"  2-5  beam: the node is unreachable (2), refused the handshake (3),\n"
"       timed out or was lost (4), runs an OTP release before 23 (5)\n"
"  run otherwise exits with its command's status, or dies of its signal.\n";

/* Text for roff: backslashes escaped, no line starting with a control
 * character, "-" as a minus where it is an option's. */
static void roff_text(FILE *out, const char *s)
{
	int bol = 1;

	for (; *s; s++) {
		if (bol && (*s == '.' || *s == '\''))
			fputs("\\&", out);
		if (*s == '\\')
			fputs("\\e", out);
		else if (*s == '-')
			fputs("\\-", out);
		else
			fputc(*s, out);
		bol = *s == '\n';
	}
}

static void man_option(FILE *out, const struct ls_usage *u,
		       const struct ls_option *o)
{
	char label[128], help[1024];

	ls_option_label(u, o, label, sizeof(label));
	ls_option_help(u, o, help, sizeof(help));
	fputs(".TP\n.B ", out);
	roff_text(out, label);
	fputc('\n', out);
	roff_text(out, help);
	fputc('\n', out);
}

static void man_command(FILE *out, const struct ls_command *c)
{
	const struct ls_option *const *t, *o;

	fputs(".SS \"leakscope ", out);
	roff_text(out, c->name);
	fputc(' ', out);
	roff_text(out, c->usage->synopsis);
	fputs("\"\n", out);
	roff_text(out, c->usage->description);
	fputc('\n', out);
	ls_usage_for_each(c->usage, t, o)
		if (!(o->flags & LS_OPTF_HIDDEN))
			man_option(out, c->usage, o);
	if (c->usage->notes) {
		fputs(".PP\n", out);
		roff_text(out, c->usage->notes);
		fputc('\n', out);
	}
}

static void man_tables(FILE *out)
{
	const struct ls_renderer *r;
	const struct ls_source *s;

	fputs(".SH TARGETS\nThe commands that read a process's state take a"
	      " target, tried in this order:\n", out);
	for (s = ls_sources; s->name; s++) {
		fputs(".TP\n", out);
		roff_text(out, s->help);
		fputc('\n', out);
	}
	fputs(".SH FORMATS\n", out);
	for (r = ls_renderers; r->name; r++) {
		fputs(".TP\n.B ", out);
		roff_text(out, r->name);
		fputc('\n', out);
		roff_text(out, r->help);
		fputc('\n', out);
	}
}

static const struct {
	const char *name, *text;
} environment[] = {
	{ LS_ENV_RUNTIME_DIR, "where agents keep their sockets and post-mortem "
	  "files (else $XDG_RUNTIME_DIR/leakscope, else /dev/shm/leakscope-UID)" },
	{ LS_ENV_AGENT, "the agent library run preloads" },
	{ LS_ENV_UNWIND, "libunwind or check: the unwinder the agent uses (run "
	  "passes it on)" },
	{ LS_ENV_DEPTH, "with the agent preloaded by hand: frames per stack" },
	{ LS_ENV_SAMPLE_RATE, "sampled mode, one sample per BYTES" },
	{ LS_ENV_PERIOD_MS, "growth sampling period in milliseconds" },
	{ LS_ENV_HISTORY, "growth samples kept per site" },
	{ LS_ENV_KEEP, "1: keep the post-mortem file after exit" },
	{ LS_ENV_CONTROL, "0: no control socket, no post-mortem file" },
	{ LS_ENV_OUT_DIR, "where the agent writes its exit snapshot" },
};

static void man_environment(FILE *out)
{
	size_t i;

	fputs(".SH ENVIRONMENT\n", out);
	for (i = 0; i < sizeof(environment) / sizeof(environment[0]); i++) {
		fputs(".TP\n.B ", out);
		roff_text(out, environment[i].name);
		fputc('\n', out);
		roff_text(out, environment[i].text);
		fputc('\n', out);
	}
}

static void man_page(FILE *out)
{
	const struct ls_command *c;

	fputs(".TH LEAKSCOPE 1 \"\" \"leakscope " LS_VERSION "\" \"User "
	      "Commands\"\n.SH NAME\nleakscope \\- find memory leaks and memory"
	      " growth in running Linux programs\n.SH SYNOPSIS\n.B leakscope\n"
	      ".I command\n[\\fIoptions\\fR] [\\fIargs\\fR]\n.SH DESCRIPTION\n",
	      out);
	roff_text(out, "An LD_PRELOAD agent records every allocation with its "
		  "call stack; the leakscope command turns what it saw into "
		  "reports: outstanding memory by call stack, symbolized.  "
		  "Options may come before or after a command's arguments "
		  "(run: before COMMAND).\n");
	fputs(".SH COMMANDS\n", out);
	for (c = ls_help_commands; c->name; c++)
		man_command(out, c);
	man_tables(out);
	man_environment(out);
	fputs(".SH \"EXIT STATUS\"\n.nf\n", out);
	roff_text(out, ls_exit_status_text);
	fputs(".fi\n.SH \"SEE ALSO\"\nheaptrack(1), valgrind(1).\n"
	      "The user guide, one page per task, is docs/guide/README.md in "
	      "leakscope's source tree.\n", out);
}

/* Markdown table cell text: '|' escaped, line breaks as spaces. */
static void md_text(FILE *out, const char *s)
{
	for (; *s; s++)
		if (*s == '|')
			fputs("\\|", out);
		else
			fputc(*s == '\n' ? ' ' : *s, out);
}

static void md_command(FILE *out, const struct ls_command *c)
{
	const struct ls_option *const *t, *o;
	char label[128], help[1024];

	fprintf(out, "\n## leakscope %s\n\n`leakscope %s ", c->name, c->name);
	md_text(out, c->usage->synopsis);
	fputs("`: ", out);
	md_text(out, c->usage->summary);
	fputs(".\n\n| Option | Meaning |\n|---|---|\n", out);
	ls_usage_for_each(c->usage, t, o) {
		if (o->flags & LS_OPTF_HIDDEN)
			continue;
		ls_option_label(c->usage, o, label, sizeof(label));
		ls_option_help(c->usage, o, help, sizeof(help));
		fputs("| `", out);
		md_text(out, label);
		fputs("` | ", out);
		md_text(out, help);
		fputs(" |\n", out);
	}
}

/* The report options: their spelling in each front-end, who takes them. */
static void md_report_options(FILE *out)
{
	const struct ls_ropt_user *u;
	char key[32];
	size_t i;

	fputs("\n## Report options in every front-end\n\nOne row of "
	      "`lib/ropt-table.h` each, read and checked by one setter for "
	      "the commands, the web API's query parameters and the NIF's "
	      "option map.\n\n| Command line | API, NIF | Value | Taken by |"
	      "\n|---|---|---|---|\n", out);
	for (i = 0; i < LS_ROPT_N; i++) {
		const struct ls_ropt *r = &ls_ropts[i];
		int first = 1;

		if (r->takes & LS_RO_COMMANDS)
			fprintf(out, "| `--%s` ", r->name);
		else
			fputs("| - ", out);
		fprintf(out, "| `%s` | %s | ", ls_ropt_key(r, key, sizeof(key)),
			r->argh ? r->argh : "flag");
		for (u = ls_ropt_users; u->name; u++)
			if (r->takes & u->bit) {
				fprintf(out, "%s%s", first ? "" : ", ", u->name);
				first = 0;
			}
		if (r->alias)
			fprintf(out, "; also `%s` in:", r->alias);
		for (u = ls_ropt_users; r->alias && u->name; u++)
			if (r->alias_takes & u->bit)
				fprintf(out, " %s", u->name);
		fputs(" |\n", out);
	}
}

static void markdown(FILE *out)
{
	const struct ls_renderer *r;
	const struct ls_command *c;

	fputs("# leakscope options\n\nGenerated by `leakscope help "
	      "--markdown` from the tables every command's `--help` is printed"
	      " from: the commands' (`cli/`), the report options' "
	      "(`lib/ropt-table.h`) and the renderers' (`lib/render.c`).  An "
	      "option name means one thing in every command.\n\n"
	      "## Formats\n\n| Format | Media type | What |\n|---|---|---|\n",
	      out);
	for (r = ls_renderers; r->name; r++) {
		fprintf(out, "| `%s` | `%s` | ", r->name, r->mime);
		md_text(out, r->help);
		fputs(" |\n", out);
	}
	md_report_options(out);
	for (c = ls_help_commands; c->name; c++)
		md_command(out, c);
}

int ls_cmd_help(struct ls_invocation *inv)
{
	const struct ls_help_args *a = inv->args;
	const struct ls_command *c;

	if (a->man || a->markdown) {
		(a->man ? man_page : markdown)(stdout);
		return fflush(stdout) ? LS_EXIT_ERROR : LS_EXIT_OK;
	}
	for (c = ls_help_commands; inv->argc == 1 && c->name; c++)
		if (!strcmp(c->name, inv->argv[0])) {
			ls_usage_print(stdout, c->usage);
			return LS_EXIT_OK;
		}
	ls_usage_error(&ls_help_usage, inv->argc ? "unknown command '%s'" :
		       "expected a command%s", inv->argc ? inv->argv[0] : "");
	return LS_EXIT_USAGE;
}
