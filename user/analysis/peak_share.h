/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A group's bytes live at the global peak, kept in the same pass (the
 * report's stacks, the viewer's cells): the global peak moves forward in
 * epochs (replay__peak_epoch); a group remembers the epoch in which its live
 * bytes last changed, and just before changing them in a later epoch saves
 * them as its bytes at the current peak (they had not changed since).
 */
#ifndef MEMTRACE_PEAK_SHARE_H
#define MEMTRACE_PEAK_SHARE_H

#include <stdint.h>

struct peak_share {
	uint64_t live_bytes;
	uint64_t peak_bytes; /* live at the latest peak, once touched in its epoch */
	uint64_t epoch;      /* epoch of the last change of live_bytes */
};

/* Call before LIVE_BYTES changes, with the epoch of the event (and once at
 * the end with the final epoch, after which peak_bytes is the share). */
static inline void peak_share__touch(struct peak_share *p, uint64_t epoch)
{
	if (p->epoch != epoch) {
		p->peak_bytes = p->live_bytes;
		p->epoch = epoch;
	}
}

#endif /* MEMTRACE_PEAK_SHARE_H */
