// Package imagesig signs DwarFS images and verifies their signatures.
//
// A signature is a detached SSH signature (the SSHSIG format that
// "ssh-keygen -Y sign" writes and "ssh-keygen -Y verify" reads) over the
// image's signed digest: a byte string that describes every section
// (type, compression, place, the SHA-512/256 of its header) and, since
// version 2, carries a BLAKE3 of every section. Verifying an image checks
// the signature over the digest and compares the image's headers with
// it; each section's data is then hashed when it is read and compared
// with its signed BLAKE3 (version 2) or its header's, now trusted,
// SHA-512/256 (version 1). BLAKE3 costs a fraction of SHA-512's CPU per
// byte, which a verified mount pays on every block it loads; version 1
// digests, which are computed from the headers alone, are still
// verified.
//
// # Signed digest
//
// All integers are unsigned, little-endian, of the width given.
//
//	magic      24 bytes  "godwarfs-image-digest/2\n" (the digit is the version: 1 or 2)
//	major      1 byte    image format major version (2)
//	minor      1 byte    image format minor version
//	flags      1 byte    bit 0: the image has a section index; others zero
//	reserved   1 byte    zero
//	count      4 bytes   number of sections N
//	end        8 bytes   offset just past the last section
//	N records of 84 bytes (version 1: 52), in file order:
//	  type         2 bytes   section type (0 BLOCK, 7 schema, 8 metadata, 9 index, 10 history)
//	  compression  2 bytes   compression id
//	  offset       8 bytes   offset of the section payload
//	  length       8 bytes   payload length
//	  sha512_256  32 bytes   the SHA-512/256 stored in the section header
//	  blake3      32 bytes   version 2 only: BLAKE3-256 over the same bytes as
//	                         the SHA-512/256, header bytes 0x28 to 0x3f (XXH3,
//	                         number, type, compression, length), then the payload
//
// Offsets are relative to the start of the image, i.e. after any header
// prepended to it (mkdwarfs --header): that header is not signed, so a
// signature stays valid when it is changed or removed (mkdwarfs
// --remove-header), and a reader must not trust it. Images of format 2.0
// and 2.1 (v1 section headers) carry no SHA-512/256 and cannot be signed.
// Computing a version 1 digest reads only the section headers; version 2
// reads the whole image once (Sign does, and so does a verifier given a
// signature without the digest in it, see below).
//
// The section index, when present, is a section like the others: its
// record holds its SHA-512/256, and the offsets it lists are the offsets
// in the records, so a changed index fails the comparison.
//
// # Signature file
//
// IMAGE.sig holds the armored SSH signature ("-----BEGIN SSH
// SIGNATURE-----"), made with namespace Namespace and hash sha512 over the
// signed digest. Sign appends the digest itself, base64 between
// "-----BEGIN GODWARFS SIGNED DIGEST-----" and "-----END GODWARFS SIGNED
// DIGEST-----" lines, after the signature: ssh-keygen ignores it, and a
// verifier that finds the signature good over it can name the sections in
// which the image differs from what was signed. A file without that block
// (e.g. one made by ssh-keygen -Y sign over the output of dwarfsck
// --print-signed-digest) is verified against the digest of the image:
// version 1, and if the signature is not over that, version 2.
//
// Allowed signers files follow ssh-keygen(1), ALLOWED SIGNERS: one key per
// line, with principals (comma-separated patterns), options (namespaces=,
// valid-after=, valid-before=) and the public key. cert-authority lines are
// refused: certificates are not supported.
package imagesig
