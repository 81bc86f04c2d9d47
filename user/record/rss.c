// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "rss.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int rss_read_status(int pid, struct trace_rss *s)
{
	char path[64], line[256];
	unsigned long long kb;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (found < 3 && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "RssAnon: %llu kB", &kb) == 1)
			s->anon = kb << 10, found++;
		else if (sscanf(line, "RssFile: %llu kB", &kb) == 1)
			s->file = kb << 10, found++;
		else if (sscanf(line, "RssShmem: %llu kB", &kb) == 1)
			s->shmem = kb << 10, found++;
	}
	fclose(f);
	/* a zombie's status has no memory lines: it is gone as far as we care */
	return found == 3 ? 0 : -ESRCH;
}

int rss_read_rollup(int pid, struct rss_rollup *out)
{
	char path[64], line[256], name[64];
	unsigned long long kb;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	out->r.n = 0;
	while (out->r.n < TRACE_ROLLUP_MAX && fgets(line, sizeof(line), f)) {
		/* "Rss:  1234 kB"; the first line names the range, not a size */
		if (sscanf(line, "%63[^:]: %llu kB", name, &kb) != 2 || strlen(name) >= sizeof(out->names[0]))
			continue;
		memcpy(out->names[out->r.n], name, strlen(name) + 1);
		out->r.name[out->r.n] = out->names[out->r.n];
		out->r.bytes[out->r.n] = kb << 10;
		out->r.n++;
	}
	fclose(f);
	return out->r.n ? 0 : -ESRCH;
}
