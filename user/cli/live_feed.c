// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "live_feed.h"
#include "debuginfod.h"
#include "procmaps.h"
#include "python.h"
#include "symbolizer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int live_feed__init(struct live_feed *f, pthread_mutex_t *lock)
{
	memset(f, 0, sizeof(*f));
	f->lock = lock;
	f->r = replay__new();
	f->live = f->r ? live_sites__new(f->r) : NULL;
	if (!f->live) {
		replay__free(f->r);
		f->r = NULL;
		return -ENOMEM;
	}
	return 0;
}

void live_feed__free(struct live_feed *f)
{
	live_sites__free(f->live);
	replay__free(f->r);
	symbolizer__free(f->sym);
	if (f->held)
		procmaps__release(f->pid);
	u64map__free(&f->named);
	debuginfod_tries__free(&f->tries);
	memset(f, 0, sizeof(*f));
}

static void lock(struct live_feed *f)
{
	if (f->lock)
		pthread_mutex_lock(f->lock);
}

static int unlock(struct live_feed *f, int err)
{
	if (f->lock)
		pthread_mutex_unlock(f->lock);
	return err;
}

static char *find_held(void *ctx, const char *path, const uint8_t *id, uint32_t len)
{
	return procmaps__held_file(((struct live_feed *)ctx)->pid, path, id, len);
}

static int feed_meta(void *ctx, const struct trace_meta *m)
{
	struct live_feed *f = ctx;
	char root[64];

	lock(f);
	f->pid = m->pid;
	/* The recording's files stay held while this feed may still name them. */
	procmaps__hold(f->pid);
	f->held = true;
	snprintf(root, sizeof(root), "/proc/%d/root", m->pid);
	f->sym = symbolizer__new_target(root);
	if (f->sym)
		symbolizer__set_finder(f->sym, find_held, f);
	return unlock(f, f->sym ? replay__set_meta(f->r, m) : -ENOMEM);
}

/* M, read through the file the recording holds for it (never its path). */
static int add_module(struct live_feed *f, const struct trace_module *m)
{
	char *file = procmaps__held_file(f->pid, m->path, m->build_id, m->build_id_len);
	int err = symbolizer__add_mapped_module(f->sym, m, file);

	free(file);
	return err;
}

static int feed_module(void *ctx, const struct trace_module *m)
{
	struct live_feed *f = ctx;
	int err;

	lock(f);
	err = add_module(f, m);
	return unlock(f, err ? err : replay__add_module(f->r, m));
}

/* A symbolizer over every module so far, for debug files fetched since. */
static int renew_symbolizer(struct live_feed *f)
{
	char root[64];
	struct trace_module m;

	symbolizer__free(f->sym);
	snprintf(root, sizeof(root), "/proc/%d/root", f->pid);
	f->sym = symbolizer__new_target(root);
	if (!f->sym)
		return -ENOMEM;
	symbolizer__set_finder(f->sym, find_held, f);
	for (size_t i = 0; !replay__module(f->r, i, &m); i++)
		add_module(f, &m);
	return 0;
}

/* ADDR's module in the trace (the newest mapping holding it), or -1. */
static int module_of(const struct live_feed *f, uint64_t addr, struct trace_module *m)
{
	for (size_t i = replay__nmodules(f->r); i-- > 0;) {
		if (!replay__module(f->r, i, m) && addr >= m->start && addr < m->end)
			return 0;
	}
	return -1;
}

/* ADDR named from what the host has, else (DEBUGINFOD_URLS set) from the
 * debug file a server has for its module, asked once per build-id as
 * report does. 0 with *SYM set, 1 if it stays unresolved, -errno. */
static int name_address(struct live_feed *f, uint64_t addr, struct trace_symbol *sym)
{
	struct trace_module m;
	int err;

	if (!symbolizer__resolve(f->sym, addr, sym) && sym->nframes && sym->frames[0].function)
		return 0;
	if (!debuginfod_enabled() || module_of(f, addr, &m) || !m.build_id_len)
		return symbolizer__resolve(f->sym, addr, sym) ? 1 : 0;
	err = debuginfod_try(&f->tries, &m);
	if (err > 0)
		err = renew_symbolizer(f);
	if (err)
		return err;
	return symbolizer__resolve(f->sym, addr, sym) ? 1 : 0;
}

/* A new stack's addresses are named at once: the live view shows it next.
 * Named outside the lock (a module's debug info can take seconds to load,
 * a debuginfod fetch longer) and added under it, one short hold a symbol:
 * the agent's requests wait on that lock. The symbolizer and the named set
 * are this feeding thread's alone. */
static int feed_stack(void *ctx, const struct trace_stack *s)
{
	struct live_feed *f = ctx;
	int err = 0;

	for (uint32_t i = 0; i < s->nr && !err; i++) {
		struct trace_symbol sym;
		bool existed;

		/* a Python frame's name came with it (the tap's symbol) */
		if (s->frames[i] < 4096 || python_is_addr(s->frames[i]) ||
		    !u64map__insert(&f->named, s->frames[i], &existed) || existed)
			continue;
		err = name_address(f, s->frames[i], &sym);
		if (err > 0)
			err = 0;
		else if (!err) {
			lock(f);
			err = unlock(f, replay__add_symbol(f->r, &sym));
		}
	}
	lock(f);
	return unlock(f, err ? err : replay__add_stack(f->r, s));
}

#define FEED(name, type, call)                                   \
	static int name(void *ctx, const type *x)                \
	{                                                        \
		struct live_feed *f = ctx;                       \
		lock(f);                                         \
		return unlock(f, call(f->r, x));                 \
	}
FEED(feed_event, struct trace_event, replay__add_event)
FEED(feed_string, struct trace_string, replay__add_string)
FEED(feed_thread, struct trace_thread, replay__add_thread)
FEED(feed_mark, struct trace_mark, replay__add_mark)
FEED(feed_rss, struct trace_rss, replay__add_rss)
FEED(feed_symbol, struct trace_symbol, replay__add_symbol)
#undef FEED

const struct trace_reader_ops live_feed_tap = {
	.meta = feed_meta,
	.module = feed_module,
	.stack = feed_stack,
	.event = feed_event,
	.string = feed_string,
	.mark = feed_mark,
	.thread = feed_thread,
	.rss = feed_rss,
	.symbol = feed_symbol,
};
