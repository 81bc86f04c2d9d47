// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "loader.h"
#include "memtrace.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct loader {
	struct memtrace_bpf *skel;
	struct loader_opts opts;
	struct ring_buffer *rb;
	int nr_cpus;
	int *ring_fds;
	struct bpf_link **links;
	size_t nr_links;
};

static int silent_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0; /* failures are reported once, by the command */
}

int loader__open(struct loader **out, const struct loader_opts *opts)
{
	struct loader *l = calloc(1, sizeof(*l));
	int err;

	if (!l)
		return -ENOMEM;
	libbpf_set_print(getenv("MEMTRACE_LIBBPF_DEBUG") ? NULL : silent_print);
	l->opts = *opts;
	l->nr_cpus = libbpf_num_possible_cpus();
	l->skel = memtrace_bpf__open();
	if (!l->skel || l->nr_cpus <= 0) {
		err = l->skel ? l->nr_cpus : -errno;
		free(l);
		return err ? err : -EINVAL;
	}
	l->skel->rodata->target_tgid = opts->pid;
	l->skel->rodata->stack_depth = opts->stack_depth;
	l->skel->rodata->wakeup_bytes = opts->ring_bytes / 4;
	bpf_map__set_max_entries(l->skel->maps.events, l->nr_cpus);
	*out = l;
	return 0;
}

static int ring_cb(void *ctx, void *data, size_t size)
{
	struct loader *l = ctx;

	return l->opts.on_record(l->opts.ctx, data, size);
}

/* One ring per CPU, created here at the size asked for, each put in its
 * slot of the outer map and in one epoll set. */
static int create_rings(struct loader *l)
{
	int outer = bpf_map__fd(l->skel->maps.events);

	l->ring_fds = calloc(l->nr_cpus, sizeof(int));
	if (!l->ring_fds)
		return -ENOMEM;
	for (int cpu = 0; cpu < l->nr_cpus; cpu++) {
		int fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "mt_ring", 0, 0, l->opts.ring_bytes, NULL);
		int err;

		if (fd < 0)
			return fd;
		l->ring_fds[cpu] = fd;
		if (bpf_map_update_elem(outer, &cpu, &fd, BPF_ANY))
			return -errno;
		err = l->rb ? ring_buffer__add(l->rb, fd, ring_cb, l) : 0;
		if (!l->rb) {
			l->rb = ring_buffer__new(fd, ring_cb, l, NULL);
			err = l->rb ? 0 : -errno;
		}
		if (err)
			return err;
	}
	return 0;
}

int loader__load(struct loader *l)
{
	int err = memtrace_bpf__load(l->skel);

	if (err)
		return err;
	return create_rings(l);
}

static struct bpf_program *entry_prog(struct memtrace_bpf *s, enum probe_prog p)
{
	switch (p) {
	case PROBE_MALLOC: return s->progs.malloc_enter;
	case PROBE_CALLOC: return s->progs.calloc_enter;
	case PROBE_REALLOC: return s->progs.realloc_enter;
	case PROBE_REALLOCARRAY: return s->progs.reallocarray_enter;
	case PROBE_MEMALIGN: return s->progs.memalign_enter;
	case PROBE_POSIX_MEMALIGN: return s->progs.posix_memalign_enter;
	case PROBE_FREE: return s->progs.free_enter;
	case PROBE_DELETE: return s->progs.delete_enter;
	default: return NULL;
	}
}

static int attach_one(struct loader *l, struct bpf_program *prog, const struct probe *p, bool ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .retprobe = ret);
	struct bpf_link *link;

	link = bpf_program__attach_uprobe_opts(prog, l->opts.pid, p->path, p->offset, &uo);
	if (!link)
		return -errno;
	l->links[l->nr_links++] = link;
	return 0;
}

int loader__attach(struct loader *l, const struct probe_set *ps, const struct probe **failed)
{
	int err = 0;

	l->links = calloc(ps->nr * 2, sizeof(*l->links));
	if (!l->links)
		return -ENOMEM;
	/* Return probes first: an entry without its return would leave a
	 * thread's depth open. */
	for (size_t i = 0; i < ps->nr && !err; i++) {
		if (ps->v[i].ret)
			err = attach_one(l, l->skel->progs.alloc_exit, &ps->v[i], true);
		if (err)
			*failed = &ps->v[i];
	}
	for (size_t i = 0; i < ps->nr && !err; i++) {
		err = attach_one(l, entry_prog(l->skel, ps->v[i].prog), &ps->v[i], false);
		if (err)
			*failed = &ps->v[i];
	}
	if (err)
		loader__detach(l);
	return err;
}

int loader__poll(struct loader *l, int timeout_ms)
{
	int n = ring_buffer__poll(l->rb, timeout_ms);

	if (n < 0 && n != -EINTR)
		return n;
	/* Probes only wake us when a ring fills up; drain all of them anyway. */
	n = ring_buffer__consume(l->rb);
	return n < 0 && n != -EINTR ? n : 0;
}

void loader__detach(struct loader *l)
{
	/* Entries first, so no return probe is left waiting on a missing entry. */
	for (size_t i = l->nr_links; i > 0; i--)
		bpf_link__destroy(l->links[i - 1]);
	l->nr_links = 0;
}

uint64_t loader__drops(struct loader *l, int cpu)
{
	uint64_t *vals = calloc(l->nr_cpus, sizeof(uint64_t));
	uint32_t zero = 0;
	uint64_t n = 0;

	if (!vals)
		return 0;
	if (!bpf_map_lookup_elem(bpf_map__fd(l->skel->maps.drops), &zero, vals) && cpu < l->nr_cpus)
		n = vals[cpu];
	free(vals);
	return n;
}

int loader__nr_cpus(const struct loader *l)
{
	return l->nr_cpus;
}

void loader__close(struct loader *l)
{
	if (!l)
		return;
	loader__detach(l);
	ring_buffer__free(l->rb);
	for (int cpu = 0; l->ring_fds && cpu < l->nr_cpus; cpu++) {
		if (l->ring_fds[cpu] > 0)
			close(l->ring_fds[cpu]);
	}
	free(l->ring_fds);
	free(l->links);
	memtrace_bpf__destroy(l->skel);
	free(l);
}
