// Package imagesig signs DwarFS images and verifies their signatures.
//
// A signature is a detached SSH signature (the SSHSIG format that
// "ssh-keygen -Y sign" writes and "ssh-keygen -Y verify" reads) over the
// image's signed digest: a byte string built from the section headers
// alone, which carry a SHA-512/256 of every section (covering the section's
// number, type, compression, length and payload). Computing the digest
// reads no section data; verifying an image checks the signature over the
// digest, compares the image's headers with the signed digest, and then
// hashes each section's data against its (now trusted) SHA-512/256.
//
// # Signed digest, version 1
//
// All integers are unsigned, little-endian, of the width given.
//
//	magic      24 bytes  "godwarfs-image-digest/1\n" (the /1 is the version)
//	major      1 byte    image format major version (2)
//	minor      1 byte    image format minor version
//	flags      1 byte    bit 0: the image has a section index; others zero
//	reserved   1 byte    zero
//	count      4 bytes   number of sections N
//	end        8 bytes   offset just past the last section
//	N records of 52 bytes, in file order:
//	  type         2 bytes   section type (0 BLOCK, 7 schema, 8 metadata, 9 index, 10 history)
//	  compression  2 bytes   compression id
//	  offset       8 bytes   offset of the section payload
//	  length       8 bytes   payload length
//	  sha512_256  32 bytes   the SHA-512/256 stored in the section header
//
// Offsets are relative to the start of the image, i.e. after any header
// prepended to it (mkdwarfs --header): that header is not signed, so a
// signature stays valid when it is changed or removed (mkdwarfs
// --remove-header), and a reader must not trust it. Images of format 2.0
// and 2.1 (v1 section headers) carry no SHA-512/256 and cannot be signed.
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
// --print-signed-digest) is verified against the digest of the image.
//
// Allowed signers files follow ssh-keygen(1), ALLOWED SIGNERS: one key per
// line, with principals (comma-separated patterns), options (namespaces=,
// valid-after=, valid-before=) and the public key. cert-authority lines are
// refused: certificates are not supported.
package imagesig
