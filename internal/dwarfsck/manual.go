package dwarfsck

import "github.com/godwarfs/godwarfs/internal/cli"

// manual is the hand-written part of the dwarfsck manual page.
var manual = cli.Manual{
	Description: []string{
		"dwarfsck verifies the checksums of every section of a DwarFS image and the consistency of its " +
			"metadata, then prints a summary of the image; -d chooses how much. It can also list the files " +
			"(-l), print a digest of every file (--checksum), write the image's header (-H) or export its " +
			"metadata as JSON.",
		"Examples:",
		"  dwarfsck image.dwarfs\n  dwarfsck -d3 image.dwarfs\n  dwarfsck --check-integrity -q image.dwarfs\n  dwarfsck --checksum=sha256 image.dwarfs\n  dwarfsck --sign=~/.ssh/id_ed25519 image.dwarfs\n  dwarfsck --verify=allowed_signers image.dwarfs\n  dwarfsck --push=docker://registry.example/tools:v1 tools.dwarfs",
	},
	Sections: []cli.Section{
		{Title: "DETAIL LEVELS", Paragraphs: []string{
			"-d 0 prints only the creator lines; 1 adds the version and the metadata summary; 2 (the default) " +
				"the history; 3 the list of sections; 4 every inode; 5 the chunks of every file; 6 and 7 the whole " +
				"metadata as JSON. Feature names select parts directly, e.g. -d version,history.",
			"The summary of a shard image (mkdwarfs --shard) has the line \"shard: K/N plan DIGEST\" (in " +
				"--json, \"shard\" with index, count and plan_digest): it is shard K of N of the plan DIGEST, " +
				"as its history records it.",
		}},
		{Title: "SIGNATURES", Paragraphs: []string{
			"--sign=KEY signs the image with an SSH private key (ed25519, ecdsa or rsa; unencrypted) and writes " +
				"IMAGE.sig, or the file --signature names, through a temporary file renamed into place. " +
				"--verify=ALLOWED_SIGNERS checks that file: the signature must be good and made by a key of the " +
				"allowed signers file (the format of ssh-keygen(1), ALLOWED SIGNERS: principals, the options " +
				"namespaces=, valid-after= and valid-before=, and the key; cert-authority lines are refused), the " +
				"image's section headers must match what was signed, and every section's data must match its " +
				"signed BLAKE3 (the SHA-512/256 in its header for a version 1 digest). The first difference is reported naming its section, with exit status 1; " +
				"success prints the signer's principals and key fingerprint. Both modes read every section " +
				"but decode nothing, and exit without the summary.",
			"For an image at an http://, https:// or s3:// URL, --verify fetches the signature from beside it: " +
				"URL.sig (the path with .sig appended, the query kept), and for s3://BUCKET/KEY the object KEY.sig, " +
				"with the same connections and credentials as the image; --signature names another file or URL. " +
				"A signature that cannot be fetched (404, no such object) is an error naming where it was looked " +
				"for: verification never falls back to an unverified read. A signature file is small, and one " +
				"larger than 64 KiB plus twice the image's signed digest is refused. dwarfs -o verify and " +
				"dwarfsextract --verify look for the signature the same way. --sign writes to a local file only.",
			"The signature is an SSH signature (ssh-keygen -Y sign's format, hash sha512) in the namespace " +
				"dwarfs-image@godwarfs over the image's signed digest, which --print-signed-digest writes to " +
				"stdout. So ssh-keygen can check a signature: dwarfsck --print-signed-digest IMAGE | ssh-keygen -Y " +
				"verify -f ALLOWED_SIGNERS -I PRINCIPAL -n dwarfs-image@godwarfs -s IMAGE.sig; and make one: " +
				"dwarfsck --print-signed-digest IMAGE > DIGEST; ssh-keygen -Y sign -f KEY -n dwarfs-image@godwarfs " +
				"DIGEST, then dwarfsck --verify=ALLOWED_SIGNERS --signature=DIGEST.sig IMAGE.",
			"The signed digest (version 2) describes every section; integers are unsigned little-endian. It " +
				"starts with the 24 bytes \"godwarfs-image-digest/2\\n\", then 1 byte each: the format's major and " +
				"minor version, flags (bit 0: the image has a section index) and a zero byte; then the section " +
				"count N (4 bytes) and the offset just past the last section (8 bytes); then, for every section in " +
				"file order, 84 bytes: type (2), compression (2), payload offset (8), payload length (8), the " +
				"SHA-512/256 stored in its header (32), and a BLAKE3-256 (32) over the same bytes as that " +
				"SHA-512/256: header bytes 0x28 to 0x3f (XXH3, number, type, compression, length), then the " +
				"payload. A verified read checks each block it loads against the BLAKE3, a fraction of " +
				"SHA-512's CPU cost. Offsets count from the start of the image, after any header (mkdwarfs " +
				"--header): that header is not signed. Images of format 2.0 and 2.1 carry no SHA-512/256 and " +
				"cannot be signed.",
			"Version 1 digests, which earlier releases signed, are the same without the BLAKE3 (\"/1\", records " +
				"of 52 bytes) and are computed from the section headers alone; signatures over them are still " +
				"verified, and a verified read then checks each block against its header's SHA-512/256. " +
				"Computing a version 2 digest reads the whole image once: --sign and --print-signed-digest do.",
			"dwarfsck --sign appends the digest itself to the signature file, base64 between " +
				"\"-----BEGIN GODWARFS SIGNED DIGEST-----\" and \"-----END GODWARFS SIGNED DIGEST-----\" lines after " +
				"the SSH signature (ssh-keygen ignores them), so that --verify can name the section in which an " +
				"image differs from what was signed, and a verified mount needs to read no more than the headers " +
				"at open. Without that block (a signature made by ssh-keygen) the verifier computes the image's " +
				"digest, version 1 and then version 2, reading the whole image at open, and a changed header is " +
				"reported as a bad signature, without a section.",
		}},
		{Title: "REGISTRIES", Paragraphs: append([]string{
			"Every mode reads an image at a docker://REGISTRY/REPO:TAG or @sha256:DIGEST reference as it " +
				"reads one at a URL. --push=docker://REGISTRY/REPO:TAG checks every section of a local image " +
				"against its SHA-512/256 (as --check-integrity does) and only then pushes it, printing the " +
				"manifest digest; a damaged image is not pushed. Its signature, IMAGE.sig when it exists or " +
				"the local file --signature names, is pushed after it (see below).",
		}, cli.RegistryManual...)},
		{Title: "DIFFERENCES FROM THE REFERENCE DWARFSCK", Paragraphs: []string{
			"The reference's dumps of its internal metadata encoding (the features metadata_details, " +
				"frozen_analysis, frozen_details, frozen_layout and schema_raw_dump, including the metadata memory " +
				"usage table of -d 2) are not shown; asked for by name they are refused. metadata_full_dump prints " +
				"the metadata as JSON (as --export-metadata does) instead of the reference's debug dump; --json " +
				"does not list the sections. --checksum offers no sm3, and prints the files in path order.",
		}},
	},
	SeeAlso: []string{"mkdwarfs(1)", "dwarfs(1)", "dwarfsextract(1)", "ssh-keygen(1)"},
}
