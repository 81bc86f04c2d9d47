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
 *   in_handler < on_signal < [signal frame] < raise_signal < main
 *                                              2 x malloc(64), in a SIGUSR2 handler
 *                                              that main raises itself (so no
 *                                              allocator call is interrupted)
 * Pointers go to volatile globals so the compiler keeps every allocation;
 * no function is inlined or tail-called (noinline, and the Makefile adds
 * -fno-optimize-sibling-calls), so each level is a frame in both builds.
 */
#include <csignal>
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
extern "C" NOINLINE void in_handler(void) { keep[8 + (keep[8] != nullptr)] = malloc(64); }
extern "C" NOINLINE void on_signal(int) { in_handler(); }
extern "C" NOINLINE void raise_signal(void) { raise(SIGUSR2); }
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
	signal(SIGUSR2, on_signal);
	raise_signal();
	raise_signal();
	return 0;
}
