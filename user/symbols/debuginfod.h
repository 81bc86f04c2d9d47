/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_DEBUGINFOD_H
#define MEMTRACE_DEBUGINFOD_H

/*
 * Debug info fetched by build-id from the debuginfod servers in
 * DEBUGINFOD_URLS, through elfutils' client program debuginfod-find
 * (Debian package debuginfod), which keeps the usual client cache
 * (~/.cache/debuginfod_client) and honours DEBUGINFOD_* settings.
 *
 * Why a program and not libdebuginfod: build/memtrace is linked statically,
 * and libdebuginfod exists only as a shared library (with libcurl behind
 * it); running the client keeps the static binary and needs nothing when
 * DEBUGINFOD_URLS is unset. Nothing here runs unless it is set.
 */
#include <stddef.h>
#include <stdint.h>

#define DEBUGINFOD_TIMEOUT_S 30 /* per file, unless DEBUGINFOD_TIMEOUT says otherwise */

/* Whether DEBUGINFOD_URLS names a server. */
int debuginfod_enabled(void);

/* The path of the debug file for build-id ID in BUF. 0; -ENOENT (no server
 * has it), -ENOEXEC (no debuginfod-find here), -ETIMEDOUT, or -errno. */
int debuginfod_fetch(const uint8_t *id, uint32_t len, char *buf, size_t cap);

#endif /* MEMTRACE_DEBUGINFOD_H */
