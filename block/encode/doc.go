// Package encode holds the section encoders: NewCompressor parses a
// compression spec in mkdwarfs -C syntax and returns a Compressor whose
// payloads package block decodes. Only code that writes images imports
// it; readers need package block alone, which is pure Go.
//
// libzstd (compiled from github.com/DataDog/zstd's sources) encodes zstd
// in cgo builds. liblzma and libFLAC come from the system and need their
// headers (Debian: liblzma-dev, libflac-dev), so they are used only in cgo
// builds with the build tags liblzma and libflac; the Makefile sets the
// tags where the headers are installed. Without them the pure-Go encoders
// are used, and Algorithms says which encoder each algorithm has.
package encode
