// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "preload.h"
#include "elf_util.h"
#include <linux/types.h>
#include "memtrace_abi.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

_Static_assert(sizeof(struct mt_preload_header) == 128, "ABI: preload header");
_Static_assert(sizeof(struct mt_preload_slot) == 192 + 8 * MT_PRELOAD_SEEN + 32 * MT_PRELOAD_ROW_CACHE, "ABI: preload slot");
_Static_assert(MT_PRELOAD_SLACK_WORDS * 8 == MT_PRELOAD_SLACK, "a record fits the copy");

#define LIB_NAME "libmemtrace_preload.so"

int preload_find_library(char *buf, size_t cap)
{
	static const char *const where[] = { "", "../lib/memtrace/" };
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0)
		return -ENOENT;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	slash[1] = 0;
	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		struct stat st;

		if ((size_t)snprintf(buf, cap, "%s%s%s", exe, where[i], LIB_NAME) < cap && !stat(buf, &st) &&
		    S_ISREG(st.st_mode))
			return 0;
	}
	return -ENOENT;
}

/* Whether PATH is an ELF program without a dynamic linker. A script (its
 * interpreter decides) or an unreadable file: false. */
static bool is_static_elf(const char *path)
{
	Elf64_Ehdr eh;
	bool interp = false;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 256) {
		close(fd);
		return false;
	}
	for (unsigned i = 0; i < eh.e_phnum && !interp; i++) {
		Elf64_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), eh.e_phoff + i * sizeof(ph)) != sizeof(ph))
			break;
		interp = ph.p_type == PT_INTERP;
	}
	close(fd);
	return !interp;
}

bool preload_unsupported(const char *path, char *why, size_t cap)
{
	static const char *const own[] = { "malloc", "free", "calloc", "realloc" };
	struct elf_function fn;
	struct stat st;

	if (stat(path, &st))
		return false; /* the exec says what is wrong */
	if (((st.st_mode & S_ISUID) && st.st_uid != geteuid()) || ((st.st_mode & S_ISGID) && st.st_gid != getegid())) {
		snprintf(why, cap, "it is set-user-ID or set-group-ID, and the dynamic linker drops LD_PRELOAD for such a program");
		return true;
	}
	if (getxattr(path, "security.capability", NULL, 0) > 0) {
		snprintf(why, cap, "it has file capabilities, and the dynamic linker drops LD_PRELOAD for such a program");
		return true;
	}
	if (is_static_elf(path)) {
		snprintf(why, cap, "it is statically linked: no dynamic linker loads a preloaded library");
		return true;
	}
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		if (!elf_find_function(path, own[i], &fn) && fn.size) {
			snprintf(why, cap, "it defines %s itself, which comes before any preloaded library's", own[i]);
			return true;
		}
	}
	return false;
}

static uint64_t tsc_now(void)
{
	uint32_t lo, hi;

	__asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi) : : "memory");
	return (uint64_t)hi << 32 | lo;
}

/* A TSC reading and CLOCK_MONOTONIC's at the same moment (the midpoint of
 * the narrowest of a few tries: one preempted in between is no pair). */
static void clock_pair(uint64_t *tsc, uint64_t *mono)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 4; i++) {
		struct timespec ts;
		uint64_t a = tsc_now(), b;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		b = tsc_now();
		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*mono = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
		}
	}
}

/* Whether the kernel keeps time by the TSC: then it found it synchronized
 * across CPUs and steady, and a record's TSC is as good as its ns. */
static bool kernel_uses_tsc(void)
{
	char buf[32] = "";
	const char *force = getenv("MEMTRACE_PRELOAD_CLOCK");
	FILE *f;

	if (force && !strcmp(force, "monotonic"))
		return false;
	f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return !strcmp(buf, "tsc\n");
}

/* A first rate, from a millisecond, until the recording's own. */
static void first_rate(struct preload *p)
{
	uint64_t t1, m1;

	clock_pair(&p->tsc0, &p->mono0);
	usleep(1000);
	clock_pair(&t1, &m1);
	p->ns_per_tick = t1 > p->tsc0 && m1 > p->mono0 ? (double)(m1 - p->mono0) / (double)(t1 - p->tsc0) : 1;
}

/* The latest pair, and the rate over the recording so far. */
static void calibrate(struct preload *p)
{
	clock_pair(&p->tsc_at, &p->mono_at);
	if (p->tsc_at > p->tsc0 + 1000000 && p->mono_at > p->mono0)
		p->ns_per_tick = (double)(p->mono_at - p->mono0) / (double)(p->tsc_at - p->tsc0);
}

static uint64_t tsc_to_ns(const struct preload *p, uint64_t tsc)
{
	return p->mono_at + (int64_t)((double)(int64_t)(tsc - p->tsc_at) * p->ns_per_tick);
}

static uint64_t page_up(uint64_t n)
{
	return (n + 4095) & ~4095ULL;
}

/* The unwind area's bytes (inproc/preload/preload.c says the same). */
static uint64_t unwind_bytes(const struct mt_preload_header *h)
{
	return h->unwind_rows ? page_up(sizeof(struct mt_preload_unwind) +
					(uint64_t)h->unwind_rows * sizeof(struct mt_unwind_row))
			      : 0;
}

static struct mt_preload_unwind *unwind_area(const struct preload *p)
{
	return p->geom.unwind_rows ? (void *)((char *)p->hdr + p->geom.header_bytes +
					      (uint64_t)p->geom.nr_slots * p->geom.slot_bytes)
				   : NULL;
}

int preload__open(struct preload *p, uint32_t nr_slots, uint64_t ring_bytes, uint32_t stack_depth, bool follow,
		  uint32_t unwind_rows)
{
	uint64_t header = page_up(sizeof(struct mt_preload_header));
	uint64_t slot = page_up(MT_PRELOAD_RING_AT + ring_bytes + MT_PRELOAD_SLACK);
	struct mt_preload_header *h, shape = { .unwind_rows = unwind_rows };
	int err;

	memset(p, 0, sizeof(*p));
	p->fd = -1;
	if (!nr_slots || ring_bytes < 4096 || (ring_bytes & (ring_bytes - 1)))
		return -EINVAL;
	p->slot_broken = calloc(nr_slots, 1);
	p->tails = calloc(nr_slots, sizeof(*p->tails));
	if (!p->slot_broken || !p->tails) {
		preload__close(p);
		return -ENOMEM;
	}
	p->map_bytes = header + nr_slots * slot + unwind_bytes(&shape);
	/* Sealed at its size: a target that could shrink it would fault our reads. */
	p->fd = memfd_create("memtrace-preload", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (p->fd < 0 || ftruncate(p->fd, (off_t)p->map_bytes) ||
	    fcntl(p->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))
		goto fail;
	h = mmap(NULL, p->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
	if (h == MAP_FAILED)
		goto fail;
	p->hdr = h;
	h->magic = MT_PRELOAD_MAGIC;
	h->version = MT_PRELOAD_VERSION;
	h->nr_slots = nr_slots;
	h->slot_bytes = slot;
	h->ring_bytes = ring_bytes;
	h->header_bytes = header;
	h->recorder_pid = (uint32_t)getpid();
	h->stack_depth = stack_depth;
	h->follow = follow;
	h->unwind_rows = unwind_rows;
	p->geom = *h;
	p->tsc = kernel_uses_tsc();
	if (p->tsc) {
		first_rate(p);
		h->clock = p->geom.clock = MT_PRELOAD_CLOCK_TSC;
	}
	return 0;
fail:
	err = -errno;
	preload__close(p);
	return err;
}

/* Whether H, as a target wrote it, is memory we can read: the geometry we
 * would have made, BYTES long. */
static bool sane(const struct mt_preload_header *h, uint64_t bytes)
{
	return h->magic == MT_PRELOAD_MAGIC && h->version == MT_PRELOAD_VERSION && h->nr_slots &&
	       h->nr_slots <= 65536 && h->ring_bytes >= 4096 && h->ring_bytes <= (1ULL << 30) &&
	       !(h->ring_bytes & (h->ring_bytes - 1)) &&
	       h->slot_bytes == page_up(MT_PRELOAD_RING_AT + h->ring_bytes + MT_PRELOAD_SLACK) &&
	       h->header_bytes == page_up(sizeof(*h)) && h->unwind_rows <= (1u << 27) &&
	       bytes == h->header_bytes + h->nr_slots * h->slot_bytes + unwind_bytes(h);
}

int preload__adopt(struct preload *p, int pidfd, int fd, int pid)
{
	int own = pidfd < 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	struct mt_preload_header h, *m;
	uint32_t no = 0;
	struct stat st;
	int seals, err = -EAGAIN;

	memset(p, 0, sizeof(*p));
	p->fd = -1;
	if (own < 0)
		return errno == ESRCH ? -ESRCH : -EAGAIN; /* gone, or not there yet */
	seals = fcntl(own, F_GET_SEALS);
	/* not ours, not this process's yet (its parent's, inherited), or one a
	 * recorder has (its last program's, before the new one made its own) */
	if (fstat(own, &st) || !S_ISREG(st.st_mode) || seals < 0 ||
	    (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW) ||
	    pread(own, &h, sizeof(h), 0) != sizeof(h) || !sane(&h, (uint64_t)st.st_size) || h.pid != (uint32_t)pid ||
	    h.adopted)
		goto out;
	m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, own, 0);
	if (m == MAP_FAILED)
		goto out;
	/* what we checked, read once more from the mapping (the target may
	 * have changed it since): kept in our own copy from here on */
	h = *m;
	if (!sane(&h, (uint64_t)st.st_size) || h.pid != (uint32_t)pid || !__atomic_compare_exchange_n(&m->adopted, &no, 1, false, __ATOMIC_ACQ_REL,
									  __ATOMIC_RELAXED)) {
		munmap(m, (size_t)st.st_size);
		goto out;
	}
	p->slot_broken = calloc(h.nr_slots, 1);
	p->tails = calloc(h.nr_slots, sizeof(*p->tails));
	if (!p->slot_broken || !p->tails) {
		munmap(m, (size_t)st.st_size);
		err = -ENOMEM;
		goto out;
	}
	m->recorder_pid = (uint32_t)getpid();
	p->hdr = m;
	p->geom = h;
	p->map_bytes = (size_t)st.st_size;
	p->fd = own;
	p->tsc = h.clock == MT_PRELOAD_CLOCK_TSC;
	if (p->tsc)
		first_rate(p);
	return 0;
out:
	free(p->slot_broken);
	free(p->tails);
	p->slot_broken = NULL;
	p->tails = NULL;
	close(own);
	return err;
}

void preload__set_pid(struct preload *p, int pid)
{
	__atomic_store_n(&p->hdr->pid, (uint32_t)pid, __ATOMIC_RELEASE);
}

char **preload__environ(const struct preload *p, const char *lib, char *const *envp)
{
	size_t n = 0, out = 0;
	const char *old = NULL;
	char **env;

	if (strpbrk(lib, " :\t\n")) {
		errno = EINVAL;
		return NULL;
	}
	while (envp[n])
		n++;
	env = calloc(n + 3, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(envp[i], "LD_PRELOAD=", 11))
			old = envp[i] + 11;
		else if (strncmp(envp[i], "MEMTRACE_PRELOAD_FD=", 20) && !(env[out++] = strdup(envp[i])))
			goto fail;
	}
	/* First: a program's calls come to us before any other preloaded
	 * allocator (jemalloc, a debugging interposer), which the interposer
	 * then passes them on to, so each is counted once at its site. */
	if (asprintf(&env[out++], "LD_PRELOAD=%s%s%s", lib, old && *old ? ":" : "", old ? old : "") < 0 ||
	    asprintf(&env[out++], "MEMTRACE_PRELOAD_FD=%d", p->fd) < 0) {
		env[--out] = NULL;
		goto fail;
	}
	return env;
fail:
	preload__environ_free(env);
	errno = ENOMEM;
	return NULL;
}

void preload__environ_free(char **env)
{
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}

static struct mt_preload_slot *slot_at(const struct preload *p, uint32_t i)
{
	return (void *)((char *)p->hdr + p->geom.header_bytes + (uint64_t)i * p->geom.slot_bytes);
}

/* Read slot I from its tail to the first record not yet committed. */
static int poll_slot(struct preload *p, uint32_t i, int (*fn)(void *, const void *, size_t), void *ctx)
{
	struct mt_preload_slot *s = slot_at(p, i);
	uint64_t ring = p->geom.ring_bytes, tail = p->tails[i];
	char *data = (char *)s + MT_PRELOAD_RING_AT;
	uint64_t state = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
	int err = 0;

	if (state == MT_SLOT_FREE || p->slot_broken[i])
		return 0;
	for (;;) {
		struct mt_event_header *e = (void *)(data + (tail & (ring - 1)));
		uint16_t type = __atomic_load_n(&e->type, __ATOMIC_ACQUIRE);
		uint16_t size = e->size;

		if (!type)
			break;
		if (size < sizeof(*e) || size > MT_PRELOAD_SLACK || (size & 7)) {
			p->slot_broken[i] = 1;
			p->broken++;
			break;
		}
		/* a copy: the target may change what we read as we read it */
		memcpy(p->buf, e, size);
		if (p->tsc && type != MT_EVENT_STACK) {
			struct mt_event_header *copy = (void *)p->buf;

			copy->ts = tsc_to_ns(p, copy->ts);
		}
		err = fn(ctx, p->buf, size);
		p->records++;
		memset(e, 0, size);
		tail += size;
		p->tails[i] = tail;
		if (err)
			break;
	}
	/* once a batch: the writer reads this line only when its ring looks full */
	__atomic_store_n(&s->tail, tail, __ATOMIC_RELEASE);
	if (err)
		return err;
	/* Its thread gave it back before we looked (state read first), and all
	 * it wrote is read: anyone's again. */
	if (state == MT_SLOT_RETIRED && !p->slot_broken[i])
		__atomic_store_n(&s->state, MT_SLOT_FREE, __ATOMIC_RELEASE);
	return 0;
}

int preload__poll(struct preload *p, int (*fn)(void *ctx, const void *data, size_t size), void *ctx)
{
	if (p->tsc && p->hdr)
		calibrate(p);
	for (uint32_t i = 0; p->hdr && i < p->geom.nr_slots; i++) {
		int err = poll_slot(p, i, fn, ctx);

		if (err)
			return err;
	}
	return 0;
}

void preload__stop(struct preload *p)
{
	if (p->hdr)
		__atomic_store_n(&p->hdr->stopped, 1, __ATOMIC_RELEASE);
}

uint64_t preload__lost(const struct preload *p)
{
	return p->hdr ? __atomic_load_n(&p->hdr->lost, __ATOMIC_RELAXED) + p->broken : 0;
}

int preload__publish_unwind(struct preload *p, const struct mt_unwind_map *maps, uint32_t nr,
			    const struct mt_unwind_row *rows, size_t nr_rows)
{
	struct mt_preload_unwind *u = unwind_area(p);
	uint64_t need = 0;
	uint32_t half;

	if (!u || !p->hdr)
		return 0;
	if (nr > MT_UNWIND_MAPS)
		nr = MT_UNWIND_MAPS;
	for (uint32_t i = 0; i < nr; i++)
		if ((uint64_t)maps[i].first_row + maps[i].nr_rows > need)
			need = (uint64_t)maps[i].first_row + maps[i].nr_rows;
	if (need > nr_rows || need > p->geom.unwind_rows)
		return -ENOSPC;
	/* rows only ever added: those past the last copy (others' readers
	 * never look at a row before a map that names it is published) */
	if (need > p->rows_copied) {
		memcpy((struct mt_unwind_row *)(u + 1) + p->rows_copied, rows + p->rows_copied,
		       (need - p->rows_copied) * sizeof(*rows));
		p->rows_copied = need;
	}
	half = (p->unwind_gen + 1) & 1;
	memcpy(u->maps[half], maps, nr * sizeof(*maps));
	u->nr[half] = nr;
	__atomic_store_n(&u->gen, ++p->unwind_gen, __ATOMIC_RELEASE);
	return 0;
}

void preload__counts(const struct preload *p, uint64_t *threads, uint64_t *waits)
{
	*threads = p->hdr ? __atomic_load_n(&p->hdr->threads, __ATOMIC_RELAXED) : 0;
	*waits = p->hdr ? __atomic_load_n(&p->hdr->waits, __ATOMIC_RELAXED) : 0;
}

void preload__close(struct preload *p)
{
	if (p->hdr)
		munmap(p->hdr, p->map_bytes);
	if (p->fd >= 0)
		close(p->fd);
	free(p->slot_broken);
	free(p->tails);
	p->tails = NULL;
	p->hdr = NULL;
	p->fd = -1;
	p->slot_broken = NULL;
}
