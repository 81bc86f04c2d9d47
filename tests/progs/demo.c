// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * demo: the program `make demo` records for the README. A toy key-value
 * "service" that for about half a second parses requests into heap strings,
 * keeps responses in a small cache, and renders replies into scratch
 * buffers. It has the bugs worth finding with memtrace:
 *   - cache_evict frees an entry's value but forgets its key: a slow leak
 *     that grows with traffic (site: cache_insert, the copy of the key);
 *   - render_reply allocates a 4 KiB scratch buffer per request and frees it
 *     at once: temporary allocations, the allocation storm;
 *   - load_config keeps its table for the whole run: the peak, not a leak.
 * Deterministic: same requests, same order, every run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define CACHE_SLOTS 64
#define BATCHES 50
#define PER_BATCH 200

struct request {
	char *method;
	char *path;
	char *body;
};

struct cache_entry {
	char *key;
	char *value;
	size_t len;
};

static struct cache_entry cache[CACHE_SLOTS];
static char **config;
static size_t config_len;
static unsigned long served, hits;

/* every site calls malloc itself, so the report names the function that
 * wanted the memory, not a wrapper */
static void *must(void *p)
{
	if (!p) {
		fputs("demo: out of memory\n", stderr);
		exit(1);
	}
	return p;
}

NOINLINE void load_config(void)
{
	size_t i;

	config_len = 512;
	config = calloc(config_len, sizeof(*config));
	for (i = 0; i < config_len; i++) {
		config[i] = must(malloc(256));
		snprintf(config[i], 256, "option_%zu = %zu", i, i * 7);
	}
}

NOINLINE void free_config(void)
{
	size_t i;

	for (i = 0; i < config_len; i++)
		free(config[i]);
	free(config);
}

/* "GET /items/42 body" -> three heap strings */
NOINLINE struct request *parse_request(const char *line)
{
	struct request *req = must(malloc(sizeof(*req)));
	const char *sp1 = strchr(line, ' ');
	const char *sp2 = strchr(sp1 + 1, ' ');
	size_t mlen = (size_t)(sp1 - line), plen = (size_t)(sp2 - sp1 - 1);
	size_t blen = strlen(sp2 + 1);

	req->method = must(malloc(mlen + 1));
	memcpy(req->method, line, mlen);
	req->method[mlen] = '\0';
	req->path = must(malloc(plen + 1));
	memcpy(req->path, sp1 + 1, plen);
	req->path[plen] = '\0';
	req->body = must(malloc(blen + 1));
	memcpy(req->body, sp2 + 1, blen + 1);
	return req;
}

NOINLINE void free_request(struct request *req)
{
	free(req->method);
	free(req->path);
	free(req->body);
	free(req);
}

static unsigned hash(const char *s)
{
	unsigned h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

NOINLINE void cache_evict(struct cache_entry *e)
{
	free(e->value); /* bug: e->key is never freed */
	e->key = NULL;
	e->value = NULL;
}

NOINLINE void cache_insert(const char *key, const char *value, size_t len)
{
	struct cache_entry *e = &cache[hash(key) % CACHE_SLOTS];

	if (e->key)
		cache_evict(e);
	e->key = must(malloc(strlen(key) + 1));
	strcpy(e->key, key);
	e->value = must(malloc(len));
	memcpy(e->value, value, len);
	e->len = len;
}

NOINLINE const struct cache_entry *cache_lookup(const char *key)
{
	const struct cache_entry *e = &cache[hash(key) % CACHE_SLOTS];

	return e->key && strcmp(e->key, key) == 0 ? e : NULL;
}

NOINLINE size_t render_reply(const struct request *req, char *out, size_t cap)
{
	char *scratch = must(malloc(4096)); /* freed at once: a temporary */
	int n = snprintf(scratch, 4096, "200 OK %s %s (%zu bytes)", req->method,
			 req->path, strlen(req->body));
	size_t len = (size_t)n < cap ? (size_t)n : cap - 1;

	memcpy(out, scratch, len);
	out[len] = '\0';
	free(scratch);
	return len;
}

NOINLINE void handle_request(const char *line)
{
	struct request *req = parse_request(line);
	const struct cache_entry *hit = cache_lookup(req->path);
	char reply[256];
	size_t len;

	if (hit) {
		hits++;
	} else {
		len = render_reply(req, reply, sizeof(reply));
		cache_insert(req->path, reply, len + 1);
	}
	served++;
	free_request(req);
}

NOINLINE void serve_batch(unsigned batch)
{
	char line[128];
	unsigned i;

	for (i = 0; i < PER_BATCH; i++) {
		unsigned item = (batch * 7919u + i * 104729u) % 1000u;

		snprintf(line, sizeof(line), "%s /items/%u payload-%u",
			 i % 4 ? "GET" : "PUT", item, batch * PER_BATCH + i);
		handle_request(line);
	}
}

int main(void)
{
	const struct timespec tick = { 0, 10 * 1000 * 1000 }; /* 10 ms */
	unsigned b;

	load_config();
	for (b = 0; b < BATCHES; b++) {
		serve_batch(b);
		nanosleep(&tick, NULL);
	}
	free_config();
	printf("demo: served %lu requests, %lu cache hits\n", served, hits);
	return 0;
}
