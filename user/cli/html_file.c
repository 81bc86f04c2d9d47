// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Saving a rendered page for report --html and diff --html (html_file.h). */
#include "html_file.h"
#include "export.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* DATA to a new file PATH, created as record creates traces: never over an
 * existing file or through a symlink, 0600 like the trace it shows. A file
 * that could not be written in full is removed. 0 or -errno after printing
 * why. */
int html_file_save(const char *path, const char *data, size_t len)
{
	int fd, err;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
		fprintf(stderr, "memtrace: failed to create %s: %s; %s\n", path, strerror(-err),
			err == -EEXIST ? "remove it or pass another name to --html" :
					 "check the directory and its permissions");
		return err;
	}
	err = export_write(fd, data, len, false);
	if (close(fd) && !err)
		err = -errno;
	if (err) {
		fprintf(stderr, "memtrace: failed to write %s: %s; check the disk\n", path,
			strerror(-err));
		unlink(path);
		return err;
	}
	fprintf(stderr, "memtrace: wrote %s\n", path);
	return 0;
}

int render_in_memory(const char *what, int (*write)(FILE *f, void *ctx), void *ctx, char **data,
		     size_t *len)
{
	FILE *f;
	int err;

	*data = NULL;
	*len = 0;
	f = open_memstream(data, len);
	if (!f) {
		err = -ENOMEM;
	} else {
		err = write(f, ctx);
		if (fclose(f) && !err)
			err = -ENOMEM;
	}
	if (err) {
		fprintf(stderr, "memtrace: failed to render %s: %s; free some memory\n", what, strerror(-err));
		free(*data);
		*data = NULL;
	}
	return err;
}
