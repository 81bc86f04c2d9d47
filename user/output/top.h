/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What `memtrace top` shows at each interval, and its three renderings:
 * a text block and a JSON line per interval (--batch, for scripts), and the
 * full-screen terminal view with its keys. Leaf code: the command decides
 * when to take a snapshot and what goes in it.
 */
#ifndef MEMTRACE_TOP_H
#define MEMTRACE_TOP_H

#include "analysis.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One site as shown: the snapshot's site and its rate over the interval. */
struct top_row {
	const struct analysis_site *site;
	uint64_t bytes_per_s;  /* allocated bytes per second, last interval */
	uint64_t allocs_per_s;
};

struct top_thread {
	uint32_t tid;
	const char *name; /* NULL if unnamed */
};

struct top_snapshot {
	int pid;
	const char *comm;
	const char *cmdline;
	uint64_t elapsed_ns;        /* since attach */
	uint64_t live_bytes;        /* all threads and zones */
	uint64_t live_allocations;
	int64_t live_change;        /* live bytes since the previous snapshot */
	uint64_t allocations;       /* since attach */
	uint64_t allocated_bytes;
	uint64_t allocs_per_s;      /* last interval */
	uint64_t bytes_per_s;
	uint64_t dropped;
	size_t probes;
	bool target_exited;
	/* --budget: its windows so far (figures a cycle late); NULL: exact */
	const struct analysis_budget *budget;
	/* --rss: the latest resident memory sample; NULL: none (yet) */
	const struct analysis_rss_point *rss;
	const struct top_row *rows; /* as shown: filtered, searched, sorted */
	size_t nrows;
	const uint64_t *history;    /* live bytes at each snapshot, oldest first */
	size_t nhistory;
	const struct top_thread *threads; /* for the thread filter */
	size_t nthreads;
	const char *const *zones;   /* for the zone filter */
	size_t nzones;
};

/* Batch output: at most TOP rows of S. 0 or -EIO. */
int top_batch__text(FILE *f, const struct top_snapshot *s, size_t top);
int top_batch__json(FILE *f, const struct top_snapshot *s, size_t top);

/* The columns the view sorts by. */
enum top_sort {
	TOP_SORT_LIVE_BYTES,
	TOP_SORT_LIVE_ALLOCS,
	TOP_SORT_ALLOCATED,
	TOP_SORT_ALLOCATIONS,
	TOP_SORT_RATE,
	TOP_SORT_COUNT,
};

/* What the person at the terminal chose. */
struct top_ui {
	enum top_sort sort;
	int thread;          /* index into the snapshot's threads; -1: all */
	int zone;            /* index into its zones; -1: all */
	char search[64];     /* substring of function, file or module; "" none */
	size_t selected;     /* row */
	bool detail;         /* the selected site's stacks */
	bool paused;
	bool quit;
};

/* Sort ROWS as UI says. */
void top_rows__sort(struct top_row *rows, size_t n, enum top_sort sort);
/* Whether ROW matches UI's search. */
bool top_row__matches(const struct top_row *row, const char *search);

struct top_screen;

/* Take over the terminal (curses); NULL with errno set when stdout is not
 * one. The terminal is given back by top_screen__close, at exit, and on a
 * fatal signal. */
struct top_screen *top_screen__open(void);
#define TOP_KEY_REDRAW 1   /* sort, search, selection or detail changed */
#define TOP_KEY_REFILTER 2 /* the thread or zone filter changed: a new snapshot */

/* Read the keys pressed since the last call into UI; TOP_KEY_* flags. */
int top_screen__keys(struct top_screen *t, struct top_ui *ui, const struct top_snapshot *s);
void top_screen__draw(struct top_screen *t, const struct top_snapshot *s, const struct top_ui *ui);
/* FOOTER (NULL: none) is shown until q (or STOP becomes non-zero). */
void top_screen__wait(struct top_screen *t, const struct top_snapshot *s, struct top_ui *ui,
		      const char *footer, volatile const int *stop);
void top_screen__close(struct top_screen *t);

#endif /* MEMTRACE_TOP_H */
