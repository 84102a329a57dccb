package block

import "golang.org/x/sys/unix"

// adviseHuge asks for transparent huge pages for a block buffer. Decoding
// writes every byte of a block: in huge pages that is a few faults
// instead of one per 4 KiB page, and those cost more than the decoding of
// a 16 MiB zstd block itself on a VM. Where huge pages are given to those
// who ask only (the usual setting) this asks; elsewhere it changes nothing.
func adviseHuge(b []byte) { _ = unix.Madvise(b, unix.MADV_HUGEPAGE) }
