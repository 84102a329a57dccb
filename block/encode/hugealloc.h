//go:build cgo && !purego

#include <stddef.h>

// gd_huge_alloc and gd_huge_free are the allocator the cgo encoders give
// their libraries (hugealloc.c).
void* gd_huge_alloc(size_t n);
void gd_huge_free(void* q);
