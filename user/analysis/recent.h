/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Sums by key over a trace's last minute, for what grew before a process
 * died: an observer adds signed bytes and counts by key (a stack index) as
 * the records stream in, not knowing yet when the trace ends, and asks for
 * the sums once it does. Pure: no file, no output.
 *
 * Rules (tests/unit/test_recent.c pins each one):
 * - Time is cut into whole seconds from the trace's start; an addition at
 *   T ns counts in second T / 1e9.
 * - The window that ends at END is the seconds from the one holding
 *   END - RECENT_SPAN_NS (0 if END is earlier) to the one holding END: the
 *   last minute, 60 to 61 s of it.
 * - Only the last RECENT_SECONDS seconds seen are kept, so the memory is
 *   the keys added in them whatever the trace's length; an addition older
 *   than those (out of time order by more than a minute) is outside every
 *   window still to come and is dropped.
 */
#ifndef MEMTRACE_RECENT_H
#define MEMTRACE_RECENT_H

#include <stddef.h>
#include <stdint.h>

#define RECENT_SPAN_NS (60 * 1000000000ull)
#define RECENT_SECONDS 62 /* the window's 61 seconds and the one being filled past it */

/* The start of the window that ends at END_NS (the rule above), ns. */
static inline uint64_t recent_window_from(uint64_t end_ns)
{
	return end_ns > RECENT_SPAN_NS ? (end_ns - RECENT_SPAN_NS) / 1000000000ull * 1000000000ull : 0;
}

struct recent;

/* A new empty one; NULL with errno set. */
struct recent *recent__new(void);
void recent__free(struct recent *w);

/* BYTES and COUNT more (either may be negative) for KEY at T_NS after the
 * trace's start. 0 or -ENOMEM. */
int recent__add(struct recent *w, uint64_t t_ns, uint32_t key, int64_t bytes, int64_t count);

/* The window ending at END_NS: its start in *FROM_NS (a whole second), and
 * FN called once per key added in it with the key's sums, keys in no
 * particular order. 0, -ENOMEM, or what FN returned. */
int recent__sums(const struct recent *w, uint64_t end_ns, uint64_t *from_ns,
		 int (*fn)(void *ctx, uint32_t key, int64_t bytes, int64_t count), void *ctx);

#endif /* MEMTRACE_RECENT_H */
