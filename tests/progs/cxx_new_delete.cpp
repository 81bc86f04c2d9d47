// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cxx_new_delete: every replaceable operator new and operator delete of
 * C++17, each allocation from its own noinline site, paired with a known
 * delete variant. The operators are called directly (::operator new(n, ...))
 * so the size and the variant are exactly what the source says; three
 * new-expressions check the compiler-generated calls too. Aligned sizes are
 * multiples of the alignment, so libstdc++ rounding them up for aligned_alloc
 * cannot change the figure. tests/e2e/cxx.sh asserts all of it.
 *
 * libstdc++'s operator new calls malloc (new[] calls new, aligned new calls
 * aligned_alloc, every delete ends in free): each of those is ONE allocation
 * or free at the C++ site, not two or three.
 *
 *   site                               operator                            allocs bytes freed by
 *   site_new_24                        new(24)                             1      24    delete(void*)
 *   site_new_array_40                  new[](40)                           1      40    delete[](void*)
 *   site_new_32_sized                  new(32)                             1      32    delete(void*, 32)
 *   site_new_array_48_sized            new[](48)                           1      48    delete[](void*, 48)
 *   site_new_nothrow_56                new(56, nothrow)                    1      56    delete(void*, nothrow)
 *   site_new_array_nothrow_72          new[](72, nothrow)                  1      72    delete[](void*, nothrow)
 *   site_new_aligned_128               new(128, align 64)                  1      128   delete(void*, align 64)
 *   site_new_array_aligned_192         new[](192, align 64)                1      192   delete[](void*, align 64)
 *   site_new_aligned_256_sized         new(256, align 64)                  1      256   delete(void*, 256, align 64)
 *   site_new_array_aligned_320_sized   new[](320, align 64)                1      320   delete[](void*, 320, align 64)
 *   site_new_aligned_nothrow_384       new(384, align 64, nothrow)         1      384   delete(void*, align 64, nothrow)
 *   site_new_array_aligned_nothrow_448 new[](448, align 64, nothrow)       1      448   delete[](void*, align 64, nothrow)
 *   site_new_expr_obj                  new Obj (48 bytes)                  1      48    delete expr (sized: 48)
 *   site_new_expr_int_array            new int[25]                         1      100   delete[] expr
 *   site_new_expr_aligned              new Aligned (64 bytes, alignas 64)  1      64    delete expr (aligned)
 *   site_new_leak_16                   new(16) x3                          3      48    never: leaked
 *
 *   Each site's demangled function name is "site_...()": these are C++
 *   functions with an empty parameter list. delete(nullptr) is called once
 *   and is not an event.
 *   Measured part: 18 allocations, 2260 bytes, 15 frees, leaked 3 (48
 *   bytes), temporary 0 (every block is freed after the next allocation),
 *   peak 2260 (all live at once before the deletes).
 *   Before main libstdc++ allocates its emergency exception pool (one malloc
 *   of 72704 bytes with gcc 12 on x86-64, never freed), so the whole-process
 *   totals are 19 allocations, 74964 bytes, 15 frees, 4 leaked, 72752 leaked
 *   bytes, peak 74964.
 */
#include <cstddef>
#include <new>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))

namespace {
constexpr std::align_val_t A64{64};

struct Obj {
	long v[6];
};
static_assert(sizeof(Obj) == 48, "Obj is 48 bytes");

struct alignas(64) Aligned {
	char c[64];
};
static_assert(sizeof(Aligned) == 64, "Aligned is 64 bytes");
} // namespace

/* volatile: keep every pointer observable so no call is elided */
static void *volatile p[12];
static void *volatile null_ptr;
static Obj *volatile obj;
static int *volatile ints;
static Aligned *volatile al;
static void *volatile leak[3];

NOINLINE void *site_new_24() { return ::operator new(24); }
NOINLINE void *site_new_array_40() { return ::operator new[](40); }
NOINLINE void *site_new_32_sized() { return ::operator new(32); }
NOINLINE void *site_new_array_48_sized() { return ::operator new[](48); }
NOINLINE void *site_new_nothrow_56() { return ::operator new(56, std::nothrow); }
NOINLINE void *site_new_array_nothrow_72() { return ::operator new[](72, std::nothrow); }
NOINLINE void *site_new_aligned_128() { return ::operator new(128, A64); }
NOINLINE void *site_new_array_aligned_192() { return ::operator new[](192, A64); }
NOINLINE void *site_new_aligned_256_sized() { return ::operator new(256, A64); }
NOINLINE void *site_new_array_aligned_320_sized() { return ::operator new[](320, A64); }
NOINLINE void *site_new_aligned_nothrow_384() { return ::operator new(384, A64, std::nothrow); }
NOINLINE void *site_new_array_aligned_nothrow_448()
{
	return ::operator new[](448, A64, std::nothrow);
}
NOINLINE Obj *site_new_expr_obj() { return new Obj(); }
NOINLINE int *site_new_expr_int_array() { return new int[25]; }
NOINLINE Aligned *site_new_expr_aligned() { return new Aligned(); }
NOINLINE void *site_new_leak_16() { return ::operator new(16); }

NOINLINE void allocate_all()
{
	p[0] = site_new_24();
	p[1] = site_new_array_40();
	p[2] = site_new_32_sized();
	p[3] = site_new_array_48_sized();
	p[4] = site_new_nothrow_56();
	p[5] = site_new_array_nothrow_72();
	p[6] = site_new_aligned_128();
	p[7] = site_new_array_aligned_192();
	p[8] = site_new_aligned_256_sized();
	p[9] = site_new_array_aligned_320_sized();
	p[10] = site_new_aligned_nothrow_384();
	p[11] = site_new_array_aligned_nothrow_448();
	obj = site_new_expr_obj();
	ints = site_new_expr_int_array();
	al = site_new_expr_aligned();
	for (int i = 0; i < 3; i++)
		leak[i] = site_new_leak_16();
}

NOINLINE void delete_all()
{
	::operator delete(p[0]);
	::operator delete[](p[1]);
	::operator delete(p[2], 32);
	::operator delete[](p[3], 48);
	::operator delete(p[4], std::nothrow);
	::operator delete[](p[5], std::nothrow);
	::operator delete(p[6], A64);
	::operator delete[](p[7], A64);
	::operator delete(p[8], 256, A64);
	::operator delete[](p[9], 320, A64);
	::operator delete(p[10], A64, std::nothrow);
	::operator delete[](p[11], A64, std::nothrow);
	delete obj;
	delete[] ints;
	delete al;
	::operator delete(null_ptr); /* not an event */
}

int main()
{
	static const char done[] = "cxx_new_delete: done\n";

	allocate_all();
	delete_all();
	if (write(1, done, sizeof(done) - 1) < 0)
		return 2;
	return 0;
}
