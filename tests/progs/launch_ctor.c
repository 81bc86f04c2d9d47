// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// link: -Lbuild/progs -lctorlib '-Wl,-rpath,$ORIGIN'
/*
 * launch_ctor: what `memtrace record -- CMD` must see from the very start.
 * Its DT_NEEDED library libctorlib.so allocates 111, 222 and 333 bytes in
 * its constructor (before main); main allocates 444 bytes on its first line
 * and frees nothing. Exact figures (tests/e2e/launch.sh):
 *   ctor_block_111 / _222 / _333: 1 allocation each, leaked
 *   main: 1 allocation of 444 bytes, leaked
 *   totals: 4 allocations, 1110 bytes, 0 frees
 * The pointer is stored in a volatile global so the compiler keeps the malloc.
 */
#include <stdlib.h>
#include <unistd.h>

int ctorlib_count(void);

void *volatile main_block;

int main(void)
{
	main_block = malloc(444);
	return ctorlib_count() == 3 && main_block ? 0 : 1;
}
