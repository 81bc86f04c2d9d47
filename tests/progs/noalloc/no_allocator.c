// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * For tests/e2e/agent.sh: a process with no allocator at all (static, no C
 * library), so a recording of it cannot start. It waits in pause(2) until
 * it is killed.
 */
void _start(void)
{
	for (;;)
		__asm__ volatile("mov $34, %%eax\n\tsyscall" : : : "rax", "rcx", "r11", "memory"); /* pause */
}
