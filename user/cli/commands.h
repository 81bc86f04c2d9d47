/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_COMMANDS_H
#define MEMTRACE_COMMANDS_H

/* Each takes its own name as argv[0] and returns the process exit status. */
int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_top(int argc, char **argv);

#endif /* MEMTRACE_COMMANDS_H */
