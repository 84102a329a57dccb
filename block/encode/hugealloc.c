//go:build cgo && !purego

// The allocator of the cgo encoders. The match tables of libzstd's ultra
// levels (about 300 MiB for a 16 MiB block at level 22) and of liblzma's
// binary-tree finders (about 700 MiB for a 64 MiB dictionary) are mapped
// on their own and offered to transparent huge pages: the match finders
// read them at random, and with 4 KiB pages the TLB misses and page
// faults cost a good part of the encoder's time. Where huge pages are
// given only on request (the usual setting) this asks for them; elsewhere
// it changes nothing. Small allocations come from malloc. A header before
// each block says which.

#include "hugealloc.h"

#include <stdlib.h>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#define GD_MMAP 1
#endif

enum { gdHeader = 64, gdMapMin = 1 << 20 };

void* gd_huge_alloc(size_t n) {
	size_t total = n + gdHeader;
	char* p;
	if (total < n) return NULL;
#ifdef GD_MMAP
	if (n >= gdMapMin) {
		p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON, -1, 0);
		if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
		madvise(p, total, MADV_HUGEPAGE);
#endif
	} else
#endif
	{
		p = malloc(total);
		if (!p) return NULL;
	}
	*(size_t*)p = total;
	return p + gdHeader;
}

void gd_huge_free(void* q) {
	if (!q) return;
	char* p = (char*)q - gdHeader;
	size_t total = *(size_t*)p;
#ifdef GD_MMAP
	if (total - gdHeader >= gdMapMin) {
		munmap(p, total);
		return;
	}
#endif
	free(p);
}
