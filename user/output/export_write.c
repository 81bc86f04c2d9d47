// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* An export's bytes to its file, as they are or gzipped (pprof's .pb.gz). */
#include "export.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <unistd.h>
#include <zlib.h>

static int write_all(int fd, const uint8_t *p, size_t n)
{
	ssize_t w;

	while (n) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int write_gzip(int fd, const void *data, size_t n)
{
	uint8_t chunk[65536];
	z_stream z = { 0 };
	int err = 0, zr;

	if (n > UINT_MAX)
		return -EFBIG; /* one deflate call takes a uInt; no profile is that big */
	/* windowBits 15 + 16: a gzip header and trailer instead of zlib's */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)n;
	do {
		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		zr = deflate(&z, Z_FINISH);
		if (zr == Z_STREAM_ERROR) {
			err = -EIO;
			break;
		}
		err = write_all(fd, chunk, sizeof(chunk) - z.avail_out);
	} while (!err && zr != Z_STREAM_END);
	deflateEnd(&z);
	return err;
}

int export_write(int fd, const void *data, size_t n, bool gzip)
{
	return gzip ? write_gzip(fd, data, n) : write_all(fd, data, n);
}
