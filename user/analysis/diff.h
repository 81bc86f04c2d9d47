/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `memtrace diff`: the sites of two traces matched up and ranked by growth.
 * Pure: it reads no file and prints nothing (diff_print.c renders it).
 *
 * Matching: a symbolized site (one with a function name) is the same site
 * in both traces when function, file, line and the module's basename agree,
 * so two runs of a rebuilt or relocated binary compare; addresses never
 * matter. An unsymbolized site matches by its name ("module+0xOFF", or
 * "[no stack]"). Sites of one trace that share a key are summed. A site
 * found in one trace only has zero figures on the other side.
 *
 * Order, "by growth": by the change of allocated bytes, largest growth
 * first and largest shrink last; ties by the change of leaked bytes, then
 * of peak bytes, allocations, leaked allocations, temporary allocations,
 * then by function (or name), file, line and module.
 */
#ifndef MEMTRACE_DIFF_H
#define MEMTRACE_DIFF_H

#include "analysis.h"
#include <stddef.h>
#include <stdint.h>

struct diff_site {
	const char *name;     /* the site's name (from NEW if in both) */
	const char *function; /* NULL if unsymbolized */
	const char *file;
	uint32_t line;
	const char *module;   /* full path as NEW (else BASE) has it */
	struct analysis_figures a; /* BASE */
	struct analysis_figures b; /* NEW */
};

/* --rss figures of one side (has: it was recorded with --rss). */
struct diff_rss {
	bool has;
	uint64_t peak_resident, last_resident, peak_anon, last_anon;
	/* the reconciliation at the last snapshot (reconciled: there was one;
	 * heap_known: the allocator's part split into live and free) */
	bool reconciled, heap_known;
	uint64_t allocator_resident, allocator_free_resident, outside_resident, thread_stacks, heap_live_not_resident;
	/* glibc's allocator probes (glibc: they were attached) */
	bool glibc;
	uint64_t arenas_new, heap_grown_bytes, sbrk_more_bytes, sbrk_less_bytes, retries;
};

struct diff {
	struct analysis_totals a, b;
	struct diff_rss rss_a, rss_b;
	struct diff_site *sites; /* by growth */
	size_t nsites;
};

/* B - A as a signed change (figures stay far below 2^63). */
static inline int64_t diff_delta(uint64_t a, uint64_t b)
{
	return (int64_t)(b - a);
}

/* Match the sites of BASE (SA, NA) and NEW (SB, NB) into D->sites, sorted
 * by growth. The strings are borrowed from the sites: they must outlive D.
 * 0 or -ENOMEM. */
int diff__sites(struct diff *d, const struct analysis_site *sa, size_t na,
		const struct analysis_site *sb, size_t nb);

/* diff__sites on two finished analyses, plus their totals. */
int diff__analyses(struct diff *d, const struct analysis *base, const struct analysis *new_);

/* >0 if S grew (by the order above), <0 if it shrank, 0 if no figure changed. */
int diff_site__growth(const struct diff_site *s);

void diff__free(struct diff *d);

#endif /* MEMTRACE_DIFF_H */
