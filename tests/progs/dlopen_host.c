// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * dlopen_host PLUGIN [DELAY_MS]: loads PLUGIN (a library that was not
 * mapped when tracing started), waits DELAY_MS (default 1500: longer than
 * the recorder's periodic look for new mappings; a short one needs the
 * dynamic linker hook), calls plugin_work 10 times (10 x malloc(77) at
 * plugin_work in plugin.c, all leaked, each inside zone "plugin_zone"), and
 * exits 0.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

// link: -ldl

int main(int argc, char **argv)
{
	void *h;
	void (*work)(int);

	if (argc < 2 || !(h = dlopen(argv[1], RTLD_NOW)))
		return 2;
	work = (void (*)(int))dlsym(h, "plugin_work");
	if (!work)
		return 3;
	usleep((argc > 2 ? atoi(argv[2]) : 1500) * 1000);
	for (int i = 0; i < 10; i++)
		work(i);
	return 0;
}
