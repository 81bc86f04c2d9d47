/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_UTIL_H
#define MEMTRACE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* Print "memtrace: <message>" on stderr; returns -1 so commands can return it. */
int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Decimal, whole string. 0 or -EINVAL. */
int parse_u64(const char *s, uint64_t *out);
/* A size with an optional K, M or G suffix (powers of 1024). 0 or -EINVAL. */
int parse_size(const char *s, uint64_t *out);

/* The value of a --top N option; prints one line and returns -EINVAL unless
 * it is a positive number. */
int parse_top(const char *s, unsigned int *top);
/* -p PID and -d SEC, with the line the user reads when they are wrong. */
int parse_pid(const char *s, int *pid);
int parse_seconds(const char *s, double *seconds);

uint64_t now_ns(clockid_t clock);

/* "1.5 MiB"-style, into BUF. */
void format_bytes(uint64_t bytes, char *buf, size_t cap);

/* A process's name (its comm, which it sets to any bytes) made fit to be
 * part of a file name in place: '/', spaces and control characters become
 * '_', so that a name such as "/../x" names no other directory. */
void comm_file_safe(char *comm);
/* /proc/PID/NAME's first line into BUF ("?" if unreadable). */
void read_proc_string(int pid, const char *name, char *buf, size_t cap);
/* /proc/PID/NAME whole into BUF (NUL-terminated, at most CAP - 1 bytes): its length, or -1. */
ssize_t read_proc_file(int pid, const char *name, char *buf, size_t cap);
/* The same for file NAME in the directory DIR (a descriptor, or AT_FDCWD). */
ssize_t read_file_at(int dir, const char *name, char *buf, size_t cap);
/* A /proc/PID/stat line TEXT past the command name (which may hold spaces
 * and parentheses): the state letter in *STATE (unless NULL), then fields 4
 * to 3 + N (ppid on; proc(5) numbers them from 1) in FIELDS. 0, or -EINVAL. */
int proc_stat_parse(const char *text, char *state, uint64_t *fields, size_t n);
/* The start time in such a line (field 22, clock ticks after boot: with
 * the PID, what tells a process from a later one given its PID), its state
 * in *STATE (unless NULL); 0 if TEXT is no such line. */
uint64_t proc_stat_start(const char *text, char *state);
/* Whether such a line is of a process that has ended (dead, or a zombie
 * not reaped yet): state X, or Z with no thread but its main one. One
 * whose main thread called pthread_exit shows Z too, its other threads
 * running and counted (field 20); so does an unreadable TEXT: true. */
bool proc_stat_ended(const char *text);
/* /proc/PID/NAME whole, however long, NUL-terminated in a buffer the caller
 * frees, its length in *LEN; NULL with errno set (ESRCH: PID is gone). */
char *read_proc_alloc(int pid, const char *name, size_t *len);
/* /proc/PID/cmdline with spaces between arguments; malloc'ed, never NULL
 * unless out of memory. */
char *read_proc_cmdline(int pid);
/* The value of VAR in /proc/PID/environ into BUF, or "" if unset/unreadable. */
void read_proc_environ(int pid, const char *var, char *buf, size_t cap);
/* ARGV joined by spaces; malloc'ed. */
char *join_args(char *const *argv);
/* PATH under /proc/PID/root, malloc'ed: for stat() only; a target's file is
 * opened with target_file.h, never by this path. */
char *root_path(int pid, const char *path);
void free_strings(char **v, size_t n);
/* Whether S is among the N strings of V. */
bool strings_has(char *const *v, size_t n, const char *s);
/* A copy of S added to the list *V of *N strings (freed by free_strings).
 * 0 or -ENOMEM (the list unchanged). */
int strings_push(char ***v, size_t *n, const char *s);

/* The one growable array: make room for NEED elements of ELEM bytes in *P,
 * whose capacity *CAP doubles as needed. 0 or -ENOMEM (*P untouched). */
int array_reserve(void **p, size_t *cap, size_t need, size_t elem);

/* N gaps of an exponential distribution with mean MEAN (each at least 1)
 * into GAPS, one from each 1/N of it, drawn with SEED (erand48): what the
 * probes' sampling picks among at random, so their mean is the recording's
 * rate. N independent draws would set it 1/sqrt(N) off (3% for 1024), a bias
 * no length of recording averages out; one per stratum puts it within
 * about 1/N. */
void exponential_gaps(int64_t *gaps, int n, uint64_t mean, unsigned short seed[3]);

/* strcmp where NULL sorts before every string. */
int strcmp_null(const char *x, const char *y);

#endif /* MEMTRACE_UTIL_H */
