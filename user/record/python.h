/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Python frames in allocation stacks, read from outside (docs/python.md).
 * The rules:
 *   - The interpreter is the executable or libpython of the target that
 *     exports _PyRuntime; its version is the target file's Py_Version.
 *     Known: CPython 3.11, 3.12 (offsets from their headers) and 3.13
 *     (from the _Py_DebugOffsets the interpreter carries). Anything else
 *     records native frames only, and says why once.
 *   - A Python frame's name is its code object's co_qualname, co_filename
 *     and the line of its instruction (the code's location table), read
 *     from the target's memory once per code object and tag; a code object
 *     freed and made again at the same address has another tag, so it is
 *     read again, never named from the old one.
 *   - In a stack, each native frame of the evaluation loop
 *     (_PyEval_EvalFrameDefault) stands for the Python frames its C call
 *     ran, innermost first; they take its place (python_compose). Python
 *     frames left when no evaluation frame is left go where the last one
 *     was; a walk cut at MT_PY_MAX_FRAMES ends the stack as truncated.
 *   - A Python frame is an address in the trace like any other, in a range
 *     no native address has (PYTHON_ADDR_BASE): its SYMBOL record carries
 *     the name, file and line, and language "python".
 */
#ifndef MEMTRACE_PYTHON_H
#define MEMTRACE_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "memtrace_abi.h"
#include "trace.h"

struct procmaps;
struct python;

/* Python frames' addresses: above any user or kernel address a stack holds. */
#define PYTHON_ADDR_BASE 0xfe00000000000000ULL
#define PYTHON_ADDR_MASK 0xff00000000000000ULL

static inline bool python_is_addr(uint64_t addr)
{
	return (addr & PYTHON_ADDR_MASK) == PYTHON_ADDR_BASE;
}

/* The interpreter in PID's mappings PM, its files read through what
 * procmaps holds for FILES_PID (PID, or the process it was forked from).
 * NULL with errno: ESRCH when it runs none, EPROTONOSUPPORT when its
 * version is not known (WHY says which, in words for one line), ENOMEM. */
struct python *python__find(int files_pid, int pid, const struct procmaps *pm, char *why, size_t cap);

/* Whether the program PATH (the user's command) may run CPython: an ELF
 * exporting _PyRuntime or linked against libpython, or a script whose "#!"
 * names one. Decides, before the BPF load, whether the walk is loaded at
 * all (a third of the object's verification). DEPTH: 0. */
bool python_file_may_run(const char *path, int depth);

/* What the BPF walk needs for this interpreter. */
const struct mt_py_layout *python__layout(const struct python *py);

/* The file (as memtrace reads it) and file offset where the interpreter
 * frees code objects (code_dealloc), for a probe that keeps the walk's
 * cached tags honest; NULL if not found. */
const char *python__code_free(const struct python *py, uint64_t *offset);

/* "3.11.2", for messages. */
const char *python__version(const struct python *py);

/* FRAMES (NR, native, innermost first) with the Python frames of EV in
 * place of the evaluation loop's, into OUT (CAP entries at least NR +
 * ev->nr + 1). Returns the frames written. */
uint32_t python__compose(struct python *py, const uint64_t *frames, uint32_t nr, const struct mt_pystack_event *ev,
			 uint64_t *out, uint32_t cap);

/* A code object's names and line table as the walk sent them (the first
 * time a CPU saw it): its frames are named from these, not from memory
 * read later. 0 or -ENOMEM. */
int python__learn(struct python *py, const struct mt_pycode_event *ev);

/* ADDR (python_is_addr) as a symbol: function, file, line. OUT's strings are
 * PY's. 0, or -ENOENT for an address PY never handed out. */
int python__resolve(struct python *py, uint64_t addr, struct trace_symbol *out);

/* Code objects read from the target, and reads that failed (record -v). */
void python__counts(const struct python *py, uint64_t *read, uint64_t *failed);

void python__free(struct python *py);

#endif /* MEMTRACE_PYTHON_H */
