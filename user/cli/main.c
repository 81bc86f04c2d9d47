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
};

static void usage(FILE *f)
{
	fprintf(f, "usage: memtrace [COMMAND] [OPTIONS]\n"
		   "       sudo memtrace -p PID            record a running process until Ctrl-C\n"
		   "       sudo memtrace -- CMD [ARGS...]  record a command from its start\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\nmemtrace COMMAND --help shows a command's options.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return MEMTRACE_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	}
	if (argv[1][0] == '-')
		return cmd_record(argc, argv); /* memtrace -p PID: record is the default */
	fprintf(stderr, "memtrace: unknown command '%s'; see memtrace --help\n", argv[1]);
	return MEMTRACE_EXIT_USAGE;
}
