// Package ricepp implements RICEPP, the lossless Rice-style codec DwarFS
// uses for 16-bit image data (FITS) in blocks of compression type 7.
//
// This comment is the specification of the format as written and read by
// the reference tools (version 0.15.3, codec version 1).
//
// # Block payload
//
// A DwarFS block of compression RICEPP holds, in this order:
//
//  1. the uncompressed size in bytes, as an unsigned LEB128 varint;
//  2. a header struct in Thrift compact protocol, with the fields
//     1: block_size (i32), 2: component_count (i16),
//     3: bytes_per_sample (byte), 4: unused_lsb_count (byte),
//     5: big_endian (bool), 6: ricepp_version (i16), then a stop byte.
//     The writer emits all six fields in that order; ricepp_version is 1
//     and a reader refuses larger values. bytes_per_sample is always 2;
//     component_count is 1 or 2; block_size is at most 512.
//  3. the RICEPP stream described below, to the end of the payload.
//
// The block package parses (1) and (2); this package handles (3).
//
// # Samples
//
// The uncompressed data is a sequence of 16-bit samples, stored with the
// byte order given by big_endian. With unused_lsb_count = u the lowest u
// bits of every sample are zero and the codec works on the value v =
// sample >> u. With two components the samples alternate between the two
// (interleaved channels); each component is coded as its own stream of
// values, but the two streams share one bitstream.
//
// # Bitstream
//
// Bits are packed least significant bit first: the first bit of the
// stream is bit 0 of byte 0, bit 8 is bit 0 of byte 1, and a field of k
// bits written with value x puts bit 0 of x first. The stream ends at the
// first byte boundary after the last field; the padding bits are zero.
// A unary number z is z zero bits followed by a one bit.
//
// # Stream layout
//
// For each component c (in order) the stream starts with 16 bits: the
// value v of that component's first sample. This is the running value
// "last" of component c.
//
// The samples are then cut into chunks of block_size × component_count
// samples (the last chunk may be shorter); inside a chunk, component c
// owns the samples at offsets c, c+component_count, ... For each chunk
// and, inside it, for each component in order, one block is coded: a 4-bit
// selector s, then
//
//   - s = 0: every sample of the block has the value "last" (the previous
//     value of this component); nothing else follows.
//   - 1 ≤ s ≤ 14: Rice code with k = s-1 low bits. For every sample, in
//     order: the unary number q followed by k bits r give the mapped
//     difference d = q<<k | r. The difference is d>>1 when d is even and
//     ^(d>>1) (that is, -(d>>1)-1) when d is odd; it is added to "last"
//     modulo 2^16 and the result is the sample's value v.
//   - s = 15: the block is stored verbatim: 16 bits per sample holding the
//     sample exactly as stored in memory (bytes b0 b1 form the field
//     b0 | b1<<8, whatever big_endian says and including the unused low
//     bits). "last" becomes the value v of the block's final sample.
//     (The reference copies a native 16-bit word here, so this is what it
//     writes and reads on little-endian hosts, the only ones it is known
//     to run on; a big-endian build of it would swap the two bytes.)
//
// # Encoder choices
//
// Byte-identical output with the reference requires the same choices: for
// a block, the mapped differences d and their sum S are computed. With
// δ = (v - last) mod 2^16, d = 2δ mod 2^16 when δ < 2^15, else
// ^(2δ) mod 2^16 (a 16-bit zigzag code). S = 0 gives s = 0. Else
// the cost of k is n(k+1) + Σ(d>>k) bits for n samples; the search starts
// at k0 = max(0, bitlen(⌊S/n⌋) - 2), compares k0 and k0+1, and walks (up if
// k0+1 is not worse, down otherwise) while the next k is not worse and the
// current k is strictly between 0 and 14; when the two starting costs are
// equal k0+1 is taken without walking. The block is Rice coded with that
// k if k < 14 and the cost is below 16n bits, else stored verbatim.
//
// The value of a sample is always sample >> u, so low bits that are not in
// fact zero are lost in Rice-coded and constant blocks (mkdwarfs derives u
// from the data, so this does not happen there).
//
// # Decoder notes
//
// The reference reads the stream in 8-byte words and treats the missing
// bytes of the last word as zero bits; it also ignores bytes after the
// last field. Neither happens in a stream its encoder wrote, and this
// package's decoder reports both as corruption. A stream for zero samples
// is empty (the reference never writes one).
package ricepp
