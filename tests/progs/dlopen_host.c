// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * dlopen_host PLUGIN: loads PLUGIN (a library that was not mapped when
 * tracing started), waits 1.5 s (the recorder looks for new mappings and
 * their marks every second), calls plugin_work 10 times (10 x malloc(77) at
 * plugin_work in plugin.c, all leaked, each inside zone "plugin_zone"), and
 * exits 0.
 */
#include <dlfcn.h>
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
	usleep(1500 * 1000);
	for (int i = 0; i < 10; i++)
		work(i);
	return 0;
}
