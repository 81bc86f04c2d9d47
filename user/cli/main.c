// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The command table; record is the default command. */
#include "commands.h"

#include <stdio.h>
#include <string.h>

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

static const struct command commands[] = {
	{ "record", cmd_record, "record a process's heap to a trace file (default)" },
	{ "report", cmd_report, "summarize a trace: top sites, leaks, peak, temporaries" },
	{ "diff", cmd_diff, "compare two traces site by site; --fail-on-growth for CI" },
	{ "export", cmd_export, "write a trace for pprof, flame graphs (folded) or Perfetto (chrome)" },
	{ "top", cmd_top, "watch a process's heap live: sites by live bytes, rates, zones" },
	{ "agent", cmd_agent, "serve processes' heaps over HTTP: pprof, Prometheus metrics" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: memtrace [COMMAND] [OPTIONS]\n"
		   "       sudo memtrace -p PID            record a running process until Ctrl-C\n"
		   "       sudo memtrace -- CMD [ARGS...]  record a command from its start\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\nmemtrace help COMMAND (or memtrace COMMAND --help) shows a command's options;\n"
		   "memtrace --version the version, libbpf and what this kernel offers;\n"
		   "man memtrace the manual. Exit status: 0 success, 1 failure, 2 usage error.\n");
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	}
	return NULL;
}

/* memtrace help [COMMAND]: the command's own --help. */
static int help(int argc, char **argv)
{
	const struct command *c;
	char *args[] = { NULL, "--help", NULL };

	if (argc < 3) {
		usage(stdout);
		return MEMTRACE_EXIT_OK;
	}
	c = find_command(argv[2]);
	if (!c || argc > 3) {
		fprintf(stderr, "memtrace: unknown command '%s'; see memtrace --help\n", argv[2]);
		return MEMTRACE_EXIT_USAGE;
	}
	args[0] = argv[2];
	return c->fn(2, args);
}

int main(int argc, char **argv)
{
	const struct command *c;

	if (argc < 2) {
		usage(stderr);
		return MEMTRACE_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return MEMTRACE_EXIT_OK;
	}
	if (!strcmp(argv[1], "help"))
		return help(argc, argv);
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version"))
		return cmd_version(argc - 1, argv + 1);
	c = find_command(argv[1]);
	if (c)
		return c->fn(argc - 1, argv + 1);
	if (argv[1][0] == '-')
		return cmd_record(argc, argv); /* memtrace -p PID: record is the default */
	fprintf(stderr, "memtrace: unknown command '%s'; see memtrace --help\n", argv[1]);
	return MEMTRACE_EXIT_USAGE;
}
