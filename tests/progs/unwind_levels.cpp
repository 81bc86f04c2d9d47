// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// link: -Lbuild/progs -lunwindlib '-Wl,-rpath,$ORIGIN'
/*
 * unwind_levels: allocations at known depths, built twice (the Makefile's
 * unwind_levels and unwind_levels_nofp, the second with -O2
 * -fomit-frame-pointer, linked to a library built the same way). Every
 * allocation's function sequence, from its site to main, must be the same
 * in both builds (tests/e2e/unwind.sh):
 *   level3 < level2 < level1 < main            5 x malloc(100)
 *   unwindlib_inner < unwindlib_entry < main   7 x malloc(200), through the PLT
 *   make_widget < build_widgets < main         3 x new Widget (operator new)
 * Pointers go to volatile globals so the compiler keeps every allocation;
 * no function is inlined or tail-called (noinline, and the Makefile adds
 * -fno-optimize-sibling-calls), so each level is a frame in both builds.
 */
#include <cstdlib>

#define NOINLINE __attribute__((noinline, noclone))

extern "C" void unwindlib_entry(int n);

struct Widget {
	long v[6];
};

void *volatile keep[16];
Widget *volatile widgets[4];

extern "C" NOINLINE void level3(int i) { keep[i] = malloc(100); }
extern "C" NOINLINE void level2(int i) { level3(i); }
extern "C" NOINLINE void level1(int i) { level2(i); }
extern "C" NOINLINE void make_widget(int i) { widgets[i] = new Widget(); }
extern "C" NOINLINE void build_widgets(void)
{
	for (int i = 0; i < 3; i++)
		make_widget(i);
}

int main()
{
	for (int i = 0; i < 5; i++)
		level1(i);
	unwindlib_entry(7);
	build_widgets();
	return 0;
}
