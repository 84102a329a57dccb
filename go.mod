module github.com/godwarfs/godwarfs

go 1.26.0

require (
	github.com/DataDog/zstd v1.5.7
	github.com/andybalholm/brotli v1.3.0
	github.com/hanwen/go-fuse/v2 v2.12.1
	github.com/klauspost/compress v1.20.4
	github.com/pierrec/lz4/v4 v4.1.33
	github.com/ulikunitz/xz v0.5.17
	github.com/zeebo/xxh3 v1.1.0
	golang.org/x/crypto v0.58.0
	golang.org/x/sync v0.25.0
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.48.0
)

require github.com/klauspost/cpuid/v2 v2.2.10 // indirect
