/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * memtrace.h: mark zones, frames, pools and thread names for memtrace.
 *
 * One header, no dependencies, C (gnu99 or later) and C++ (C++11 or later),
 * GCC or clang. Every mark is a USDT probe of provider `memtrace`: a nop in
 * the code plus a `.note.stapsdt` note that says where the nop is and where
 * the mark's arguments are. memtrace finds the notes in every module of the
 * target and attaches to them; other USDT tools (bpftrace, libbpf's
 * bpf_program__attach_usdt, `readelf -n`) read them too. With nothing
 * attached a mark costs about two nops.
 *
 *   MEMTRACE_ZONE_BEGIN(name)    a zone starts on this thread
 *   MEMTRACE_ZONE_END(name)      the innermost open zone NAME of this thread ends
 *   MEMTRACE_ZONE(name)          a zone from here to the end of the enclosing block
 *                                (C: cleanup attribute; C++: an RAII object)
 *   MEMTRACE_FRAME_MARK()        a frame ends here (frame marks from any thread
 *   MEMTRACE_FRAME_MARK_NAMED(name)   delimit frames for all threads); NAMED labels it
 *   MEMTRACE_ALLOC(pool, ptr, size)   a custom allocator or pool handed out SIZE bytes at PTR
 *   MEMTRACE_FREE(pool, ptr)          ... took PTR back
 *   MEMTRACE_POOL_RESET(pool)         ... took back everything it had handed out
 *   MEMTRACE_THREAD_NAME(name)   name the calling thread in reports
 *   MEMTRACE_POOL_TRACED()       non-zero while a tracer listens to the pool marks
 *
 * Names (zone, frame, pool, thread) are string literals, or strings that
 * live, unchanged, as long as the program: the tracer reads them by address,
 * possibly later. Zones and pools are identified by the text of their name.
 * Pool marks count only in their pool: memtrace's zone and frame figures
 * count the heap allocations it sees itself (malloc, new, ...).
 *
 * Example:
 *
 *   #include "memtrace.h"
 *
 *   void frame(struct world *w)
 *   {
 *           MEMTRACE_ZONE("update");
 *           physics(w);                   // allocations here count in "update"
 *           void *p = arena_get(&w->arena, 64);
 *           MEMTRACE_ALLOC("frame arena", p, 64);
 *           render(w);
 *           arena_clear(&w->arena);
 *           MEMTRACE_POOL_RESET("frame arena");
 *           MEMTRACE_FRAME_MARK();
 *   }
 *
 * Probes, in the notes (provider "memtrace"; every argument is 8 bytes on
 * 64-bit targets, an address or an unsigned size):
 *
 *   probe        arguments          semaphore
 *   zone_begin   name               -
 *   zone_end     name               -
 *   frame_mark   name (0: unnamed)  -
 *   alloc        pool, ptr, size    memtrace_alloc_semaphore
 *   free         pool, ptr          memtrace_free_semaphore
 *   pool_reset   pool               memtrace_pool_reset_semaphore
 *   thread_name  name               -
 *
 * Why only the pool marks have semaphores: zone, frame and thread marks take
 * one string literal's address, which costs a lea next to the nop; testing a
 * semaphore would cost as much as it saves. Pool marks sit in allocators' hot
 * paths and take values the caller may have to compute or keep alive (the
 * size especially), so they are skipped, arguments and all, unless a tracer
 * is attached (the kernel increments the semaphore when it attaches). The
 * semaphores are weak hidden `unsigned short` variables in section `.probes`:
 * one per module, however many translation units include this header.
 *
 * Defining MEMTRACE_DISABLE before including this header turns every macro
 * into nothing: no notes, no nops, and the arguments are not evaluated (they
 * still appear in dead code, so variables used only in marks do not draw
 * unused-variable warnings).
 *
 * Limits: x86-64 is the supported target; aarch64 notes are emitted in the
 * same format (best effort); elsewhere the marks compile to nothing. In C,
 * MEMTRACE_ZONE is a declaration: it cannot directly follow a label before
 * C23.
 */
#ifndef MEMTRACE_H
#define MEMTRACE_H

#define MEMTRACE_VERSION_MAJOR 1
#define MEMTRACE_VERSION_MINOR 0
#define MEMTRACE_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH, for #if comparisons */
#define MEMTRACE_VERSION                                                                        \
	(MEMTRACE_VERSION_MAJOR * 10000 + MEMTRACE_VERSION_MINOR * 100 + MEMTRACE_VERSION_PATCH)

#if !defined(MEMTRACE_DISABLE) && !(defined(__x86_64__) || defined(__aarch64__))
#define MEMTRACE_DISABLE 1 /* no note format for this target yet */
#endif
#if !defined(MEMTRACE_DISABLE) && !(defined(__GNUC__) || defined(__clang__))
#define MEMTRACE_DISABLE 1 /* needs GNU inline asm */
#endif

#define __MEMTRACE_CAT2(a, b) a##b
#define __MEMTRACE_CAT(a, b) __MEMTRACE_CAT2(a, b)
#define __MEMTRACE_STR2(x) #x
#define __MEMTRACE_STR(x) __MEMTRACE_STR2(x)
#ifdef __COUNTER__
#define __MEMTRACE_UNIQUE(prefix) __MEMTRACE_CAT(prefix, __COUNTER__)
#else
#define __MEMTRACE_UNIQUE(prefix) __MEMTRACE_CAT(prefix, __LINE__)
#endif

#ifdef MEMTRACE_DISABLE

/* Referenced in dead code rather than in sizeof: never evaluated, yet a
 * variable used only in marks counts as used (clang warns about a static
 * one seen only in unevaluated operands). */
#define __MEMTRACE_IGNORE(x) ((void)(0 ? ((void)(x), 0) : 0))
#define MEMTRACE_ZONE_BEGIN(name) __MEMTRACE_IGNORE(name)
#define MEMTRACE_ZONE_END(name) __MEMTRACE_IGNORE(name)
#define MEMTRACE_ZONE(name) __MEMTRACE_IGNORE(name)
#define MEMTRACE_FRAME_MARK() ((void)0)
#define MEMTRACE_FRAME_MARK_NAMED(name) __MEMTRACE_IGNORE(name)
#define MEMTRACE_ALLOC(pool, ptr, size)                                                         \
	(__MEMTRACE_IGNORE(pool), __MEMTRACE_IGNORE(ptr), __MEMTRACE_IGNORE(size))
#define MEMTRACE_FREE(pool, ptr) (__MEMTRACE_IGNORE(pool), __MEMTRACE_IGNORE(ptr))
#define MEMTRACE_POOL_RESET(pool) __MEMTRACE_IGNORE(pool)
#define MEMTRACE_THREAD_NAME(name) __MEMTRACE_IGNORE(name)
#define MEMTRACE_POOL_TRACED() 0

#else /* !MEMTRACE_DISABLE */

/* ---- the note (the stapsdt format, version 3) ----
 *
 * At the probe site a nop (label 990), then on x86-64 a 5-byte nop. The
 * note names the first: any USDT tool can put its int3 there. Kernels with
 * optimized uprobes (6.18 and later: the uprobe syscall) turn a probe on a
 * 5-byte nop into a call, several times cheaper than the trap; memtrace
 * attaches at the 5-byte nop where the kernel does. In .note.stapsdt one ELF note:
 * namesz, descsz, type 3, owner "stapsdt", then a descriptor of three
 * addresses (the nop, _.stapsdt.base, the semaphore or 0) and three strings
 * (provider, probe, argument specs). Tools compare _.stapsdt.base's address
 * in the note with the .stapsdt.base section's address to learn how far a
 * prelinker moved the module. The note section takes the current section's
 * group ("?"), so a note in a discarded COMDAT copy of an inline function
 * goes with it.
 */
#if defined(__x86_64__)
#define __MEMTRACE_NOP "nop\n\t.byte 0x0f, 0x1f, 0x44, 0x00, 0x00" /* nop; nopl 0(%rax,%rax,1) */
#define __MEMTRACE_ADDR ".8byte"
#else
#define __MEMTRACE_NOP "nop"
#define __MEMTRACE_ADDR ".dword"
#endif

#define __MEMTRACE_BASE                                                                         \
	".ifndef _.stapsdt.base\n"                                                              \
	"\t.pushsection .stapsdt.base,\"aG\",\"progbits\",.stapsdt.base,comdat\n"               \
	"\t.weak _.stapsdt.base\n"                                                              \
	"\t.hidden _.stapsdt.base\n"                                                            \
	"_.stapsdt.base:\n"                                                                     \
	"\t.space 1\n"                                                                          \
	"\t.size _.stapsdt.base, 1\n"                                                           \
	"\t.popsection\n"                                                                       \
	".endif\n"

#define __MEMTRACE_NOTE(probe, sema, args)                                                      \
	"990:\t" __MEMTRACE_NOP "\n"                                                            \
	"\t.pushsection .note.stapsdt,\"?\",\"note\"\n"                                         \
	"\t.balign 4\n"                                                                         \
	"\t.4byte 992f-991f, 994f-993f, 3\n"                                                    \
	"991:\t.asciz \"stapsdt\"\n"                                                            \
	"992:\t.balign 4\n"                                                                     \
	"993:\t" __MEMTRACE_ADDR " 990b\n"                                                      \
	"\t" __MEMTRACE_ADDR " _.stapsdt.base\n"                                                \
	"\t" __MEMTRACE_ADDR " " sema "\n"                                                      \
	"\t.asciz \"memtrace\"\n"                                                               \
	"\t.asciz \"" probe "\"\n"                                                              \
	"\t.asciz \"" args "\"\n"                                                               \
	"994:\t.balign 4\n"                                                                     \
	"\t.popsection\n" __MEMTRACE_BASE

/*
 * Argument specs are "SIZE@OPERAND", as sys/sdt.h writes them: the compiler
 * prints each operand where it put the value ("8@%rdi", "8@$0" on x86-64,
 * "8@x0" on aarch64). Every argument is converted to a pointer or a size_t
 * first, so SIZE is that type's size and the value is unsigned (a positive
 * SIZE). The constraint is "nr", not sys/sdt.h's "nor": a memory operand
 * can come out %rip-relative ("8@sym(%rip)"), which libbpf 1.1 refuses,
 * failing the attach of the whole probe; three arguments fit in registers.
 */
#define __MEMTRACE_ARGP(n) __MEMTRACE_STR(__SIZEOF_POINTER__) "@%[a" #n "]"
#define __MEMTRACE_ARGZ(n) __MEMTRACE_STR(__SIZEOF_SIZE_T__) "@%[a" #n "]"
#define __MEMTRACE_PTR(x) ((const void *)(x))
#define __MEMTRACE_SIZE(x) ((__SIZE_TYPE__)(x))

#define __MEMTRACE_PROBE1(probe, sema, x1)                                                      \
	__asm__ __volatile__(__MEMTRACE_NOTE(probe, sema, __MEMTRACE_ARGP(1))                   \
			     : : [a1] "nr"(__MEMTRACE_PTR(x1)))
#define __MEMTRACE_PROBE2(probe, sema, x1, x2)                                                  \
	__asm__ __volatile__(__MEMTRACE_NOTE(probe, sema,                                       \
					     __MEMTRACE_ARGP(1) " " __MEMTRACE_ARGP(2))         \
			     : : [a1] "nr"(__MEMTRACE_PTR(x1)), [a2] "nr"(__MEMTRACE_PTR(x2)))
#define __MEMTRACE_PROBE3(probe, sema, x1, x2, x3)                                              \
	__asm__ __volatile__(__MEMTRACE_NOTE(probe, sema,                                       \
					     __MEMTRACE_ARGP(1) " " __MEMTRACE_ARGP(2)          \
					     " " __MEMTRACE_ARGZ(3))                            \
			     : : [a1] "nr"(__MEMTRACE_PTR(x1)), [a2] "nr"(__MEMTRACE_PTR(x2)),  \
			       [a3] "nr"(__MEMTRACE_SIZE(x3)))

/* ---- semaphores ---- */

#ifdef __cplusplus
extern "C" {
#endif
#define __MEMTRACE_SEMAPHORE(probe)                                                             \
	__attribute__((weak, used, visibility("hidden"), section(".probes")))                   \
	unsigned short memtrace_##probe##_semaphore = 0;
__MEMTRACE_SEMAPHORE(alloc)
__MEMTRACE_SEMAPHORE(free)
__MEMTRACE_SEMAPHORE(pool_reset)
#ifdef __cplusplus
}
#endif

/* A volatile read: the kernel changes the semaphore behind the compiler's
 * back, so it must not be hoisted out of a loop. */
#define __MEMTRACE_ACTIVE(sema) __builtin_expect(*(volatile unsigned short *)&(sema) != 0, 0)

/* ---- the marks ---- */

#define MEMTRACE_ZONE_BEGIN(name) __MEMTRACE_PROBE1("zone_begin", "0", name)
#define MEMTRACE_ZONE_END(name) __MEMTRACE_PROBE1("zone_end", "0", name)
#define MEMTRACE_FRAME_MARK() __MEMTRACE_PROBE1("frame_mark", "0", 0)
#define MEMTRACE_FRAME_MARK_NAMED(name) __MEMTRACE_PROBE1("frame_mark", "0", name)
#define MEMTRACE_THREAD_NAME(name) __MEMTRACE_PROBE1("thread_name", "0", name)

/* For a pool that has work to do only to report (e.g. a usable size). */
#define MEMTRACE_POOL_TRACED()                                                                  \
	(__MEMTRACE_ACTIVE(memtrace_alloc_semaphore) || __MEMTRACE_ACTIVE(memtrace_free_semaphore))

#define MEMTRACE_ALLOC(pool, ptr, size)                                                         \
	do {                                                                                    \
		if (__MEMTRACE_ACTIVE(memtrace_alloc_semaphore))                                \
			__MEMTRACE_PROBE3("alloc", "memtrace_alloc_semaphore", pool, ptr, size); \
	} while (0)
#define MEMTRACE_FREE(pool, ptr)                                                                \
	do {                                                                                    \
		if (__MEMTRACE_ACTIVE(memtrace_free_semaphore))                                 \
			__MEMTRACE_PROBE2("free", "memtrace_free_semaphore", pool, ptr);        \
	} while (0)
#define MEMTRACE_POOL_RESET(pool)                                                               \
	do {                                                                                    \
		if (__MEMTRACE_ACTIVE(memtrace_pool_reset_semaphore))                           \
			__MEMTRACE_PROBE1("pool_reset", "memtrace_pool_reset_semaphore", pool); \
	} while (0)

/* ---- scoped zones ---- */

#ifdef __cplusplus
class __memtrace_zone_scope {
public:
	__attribute__((always_inline)) explicit __memtrace_zone_scope(const char *name)
		: name_(name)
	{
		MEMTRACE_ZONE_BEGIN(name);
	}
	__attribute__((always_inline)) ~__memtrace_zone_scope()
	{
		MEMTRACE_ZONE_END(name_);
	}
	__memtrace_zone_scope(const __memtrace_zone_scope &) = delete;
	__memtrace_zone_scope &operator=(const __memtrace_zone_scope &) = delete;

private:
	const char *name_;
};
#define MEMTRACE_ZONE(name) ::__memtrace_zone_scope __MEMTRACE_UNIQUE(__memtrace_zone_)(name)
#else
static __inline__ __attribute__((always_inline, unused)) const char *
__memtrace_zone_open(const char *name)
{
	MEMTRACE_ZONE_BEGIN(name);
	return name;
}
static __inline__ __attribute__((always_inline, unused)) void
__memtrace_zone_close(const char *const *name)
{
	MEMTRACE_ZONE_END(*name);
}
#define MEMTRACE_ZONE(name)                                                                     \
	const char *__MEMTRACE_UNIQUE(__memtrace_zone_)                                         \
		__attribute__((cleanup(__memtrace_zone_close), unused)) =                       \
			__memtrace_zone_open(name)
#endif

#endif /* MEMTRACE_DISABLE */
#endif /* MEMTRACE_H */
