/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The page a command rendered, to the file --html names. */
#ifndef MEMTRACE_HTML_FILE_H
#define MEMTRACE_HTML_FILE_H

#include <stddef.h>
#include <stdio.h>

/* DATA (LEN bytes) to a new file PATH: never over an existing file or
 * through a symlink, 0600; removed if not written in full. 0 or -errno
 * after printing why. */
int html_file_save(const char *path, const char *data, size_t len);

/* What WRITE(F, CTX) writes, rendered in memory first, so that a failure
 * leaves no half file: malloc'ed into *DATA, *LEN. 0, or -errno after
 * printing "memtrace: failed to render WHAT: why; free some memory". */
int render_in_memory(const char *what, int (*write)(FILE *f, void *ctx), void *ctx, char **data,
		     size_t *len);

#endif /* MEMTRACE_HTML_FILE_H */
