// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libctorlib.so: a library whose constructor allocates, which runs before
 * the program's main and before its own constructors. memtrace -- CMD must
 * hold the program after this library is mapped and before this runs:
 *   ctor_block_111, ctor_block_222, ctor_block_333: one malloc each, leaked.
 * The blocks are kept in volatile globals so the compiler cannot drop them.
 */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline, noclone))

void *volatile ctorlib_blocks[3];

NOINLINE void ctor_block_111(void) { ctorlib_blocks[0] = malloc(111); }
NOINLINE void ctor_block_222(void) { ctorlib_blocks[1] = malloc(222); }
NOINLINE void ctor_block_333(void) { ctorlib_blocks[2] = malloc(333); }

__attribute__((constructor)) static void ctorlib_init(void)
{
	ctor_block_111();
	ctor_block_222();
	ctor_block_333();
}

int ctorlib_count(void)
{
	return (ctorlib_blocks[0] != NULL) + (ctorlib_blocks[1] != NULL) + (ctorlib_blocks[2] != NULL);
}
