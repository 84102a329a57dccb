package mkdwarfs

import "github.com/godwarfs/godwarfs/internal/cli"

// manual is the hand-written part of the mkdwarfs manual page.
var manual = cli.Manual{
	Description: []string{
		"mkdwarfs builds a DwarFS image from a directory tree. Identical files are stored once, " +
			"similar data is deduplicated in segments across files, and the file data is compressed " +
			"in blocks. The image is written to a temporary file beside the output and renamed into " +
			"place only when complete, so a failed or interrupted run leaves nothing under the output name.",
		"Given an existing image with -i, mkdwarfs rewrites it instead: --recompress re-encodes its " +
			"sections with other compression, --rebuild-metadata re-creates the metadata (applying the " +
			"metadata options such as --set-owner and --chmod), and --change-block-size re-chunks the file data.",
		"Given a tar archive with -i (or - for standard input), mkdwarfs builds the image from its " +
			"members, without extracting them; see TAR INPUT.",
		"Given s3://BUCKET/PREFIX/ with -i, mkdwarfs builds the image from the objects under the " +
			"prefix, and -o s3://BUCKET/KEY uploads the image once it is complete (see OBJECT STORAGE).",
		"Images can also grow without being recompressed: --append adds a directory to an existing " +
			"image, and --merge joins images (see GROWING IMAGES). A tree can be built in shards on " +
			"several machines and merged (see SHARDS).",
		"The images are compatible with the reference DwarFS tools (format 2.5 is written; every 2.x image can be read).",
		"Examples:",
		"  mkdwarfs -i /usr/share/doc -o doc.dwarfs\n  mkdwarfs -i tree -o tree.dwarfs -l 9 -F '- *.o'\n  mkdwarfs -i old.dwarfs -o new.dwarfs --recompress -C lzma:level=9\n" +
			"  zcat app.tar.gz | mkdwarfs -i - -o app.dwarfs\n  mkdwarfs -i oci:layout:latest -o app.dwarfs --oci-config=app.json\n  mkdwarfs -i rootfs.tar -o rootfs.dwarfs --with-devices --with-specials\n" +
			"  mkdwarfs -i releases.dwarfs --append v2.0 --append-at v2.0 -o releases-new.dwarfs\n  mkdwarfs --merge shard1.dwarfs shard2.dwarfs docs=s3://bucket/docs.dwarfs -o all.dwarfs",
	},
	Sections: []cli.Section{
		{Title: "TAR INPUT", Paragraphs: []string{
			"-i takes a tar archive (ustar, pax or GNU) as well as a directory: --input-format=auto (the " +
				"default) reads a file that is not a directory as tar when it starts with a tar header or " +
				"with the magic of gzip, xz, zstd or bzip2, and - (standard input) always as tar. A plain " +
				"tar file is read in place: each file's data is read at its offset in the archive. A " +
				"compressed archive or a pipe is decoded once; the data of its files stays in memory up to " +
				"16 MiB, beyond that in an unlinked temporary file in --tmpdir. Then the image is built as " +
				"from a directory: filters, --set-owner, --chmod, --time-resolution, categorizers, ordering " +
				"and all levels work the same, and so do --with-devices and --with-specials, which devices " +
				"and FIFOs in an archive need as on disk.",
			"Members are taken as GNU tar extracts them: a leading / is removed (with a warning), a name " +
				"with a .. component is an error, a later member replaces an earlier one of the same path (a " +
				"directory over a directory only changes its attributes), and directories without a member " +
				"get mode 755 and the owner and times of the member below them (the root too, when the " +
				"archive has no ./ member). Hard links become one inode; a hard link to a member not " +
				"earlier in the archive is an error. GNU and pax sparse files keep their zero pages as " +
				"holes; pax sub-second, access and change times are kept. Extended attributes and ACLs " +
				"cannot be stored and are dropped, with one warning that counts them. A truncated archive, " +
				"a bad header or a member whose data ends early is an error naming the member and the " +
				"offset of its header, and no image is written.",
		}},
		{Title: "CONTAINER IMAGES", Paragraphs: []string{
			"-i oci:DIR[:REF] reads an OCI image layout (as skopeo, umoci or buildah write it); REF is a " +
				"tag (the org.opencontainers.image.ref.name annotation in index.json) or a manifest digest, " +
				"and may be left out when index.json lists one manifest. -i docker-archive:FILE reads what " +
				"docker save or podman save write. -i docker://REGISTRY/REPO:TAG (or @sha256:DIGEST) pulls " +
				"from a registry: anonymously, or with the credentials of ~/.docker/config.json " +
				"($DOCKER_CONFIG) or, without it, of $REGISTRY_AUTH_FILE or podman's auth.json (basic " +
				"auth or bearer tokens, as the registry asks); a registry on localhost or 127.0.0.1 is " +
				"spoken to over plain HTTP. From a multi-platform index, --platform=OS/ARCH[/VARIANT] " +
				"picks the image (default: this machine's, e.g. linux/amd64); an image of one platform is " +
				"taken as it is, unless --platform names another.",
			"The image's layers make one tree as a container runtime stacks them: a later layer's entry " +
				"replaces what the lower layers had at its path (a file a directory, a directory a file; a " +
				"directory over a directory changes only its attributes), .wh.NAME removes NAME of the " +
				"lower layers, and .wh..wh..opq hides everything the lower layers had in its directory; " +
				"whiteouts never appear in the image. Within a layer, members are taken as in a tar input " +
				"(see TAR INPUT), and a hard link must name a file of the same layer.",
			"Each layer is read once, from the top layer down, so that only the data of files that are " +
				"in the result is kept: uncompressed layers on disk are read in place, and the files of " +
				"gzip or zstd layers are decoded to memory and, beyond 16 MiB, to an unlinked file in " +
				"--tmpdir; nothing is unpacked. Every blob's digest, and the digest of each layer's " +
				"uncompressed tar against the config's diff IDs, is checked as it is read: a mismatch, a " +
				"missing blob or a bad member is an error naming the layer's digest (and the member), and " +
				"no image is written. --oci-config=FILE writes the image's config blob (entrypoint, env, " +
				"user, working dir, labels, history) beside the image.",
		}},
		{Title: "REGISTRIES", Paragraphs: append([]string{
			"-o docker://REGISTRY/REPO:TAG builds the image into a temporary file (in --tmpdir) and, once " +
				"the build succeeded, pushes it to the registry: the blob first, then the empty config, then " +
				"the manifest, which moves the tag. A failed build or push leaves the tag as it was. The same " +
				"works for --recompress, --append and --merge, whose input images, like the image of -i with " +
				"those options, may be docker:// references themselves (a --merge input goes to the " +
				"repository's last element, e.g. app for docker://r.example/ns/app:v1). Without those " +
				"options, -i docker://... is a container image to convert (see CONTAINER IMAGES). " +
				"With --sign the signature is pushed after the image (see below).",
		}, cli.RegistryManual...)},
		{Title: "OBJECT STORAGE", Paragraphs: []string{
			"-i s3://BUCKET/PREFIX/ builds the image from the objects whose keys start with PREFIX/ (a " +
				"PREFIX without the trailing slash gets one; s3://BUCKET/ takes the whole bucket). A key's " +
				"part after the prefix is the file's path; the directories the keys imply are made, and a " +
				"key ending in / makes a directory even when nothing is below it (an empty one). Objects " +
				"carry no file attributes, so every file has mode 644 and every directory 755, all owned " +
				"by 0:0 (--set-owner, --set-group and --chmod change that); a file's modification time is " +
				"its object's LastModified, a directory's that of its own key ending in /, else the newest " +
				"of what it holds. Sizes and times come from the listing alone, read page by page " +
				"(ListObjectsV2). A key whose path has an empty, . or .. element, or a path that is both an " +
				"object and a directory, is an error naming the keys, and so is a prefix with no object below " +
				"it. Filters, ordering, categorizers and " +
				"levels work as for a directory; --input-list does not.",
			"The objects are fetched when the build first reads them and ahead of its reads, in the " +
				"order it scans, by 16 parallel ranged GETs of up to 8 MiB. Each is pinned to the ETag and " +
				"size the listing gave (If-Match): an object that changed or was deleted since the listing " +
				"fails the build with an error naming its key, and no image is written. Keys of the same " +
				"size whose ETags give the same MD5 (objects uploaded in one part, unencrypted) are fetched " +
				"once: the first key's bytes are checked against that MD5 and the others are read from them, " +
				"so a later change to one of those others goes unseen and the image holds what the listing " +
				"named; where the bytes do not match (a store whose ETags are not MD5s), each key is fetched " +
				"on its own. Throttling, server " +
				"errors, resets and cut bodies are retried, listing pages included, as range reads of " +
				"remote images are (five attempts within 60 seconds, backing off). Fetched bytes stay in an " +
				"unlinked temporary file in --tmpdir for the build's second pass: it needs room for the " +
				"objects' total size.",
			"-o s3://BUCKET/KEY builds, rewrites or merges the image into a temporary file (in --tmpdir) " +
				"and, once that succeeded, uploads it with a multipart upload: parts of 8 MiB, four or -N " +
				"at a time, each retried as above. The object appears at the key only when the upload " +
				"completes; a failed or interrupted build or upload aborts it, so that neither an object " +
				"nor stored parts are left. An existing object is an error unless -f is given. With --sign " +
				"the signature goes to KEY.sig once the image is there, where dwarfsck --verify looks.",
			"--merge takes s3:// patterns as well as images: s3://BUCKET/shards/shard-*.dwarfs stands for " +
				"the objects whose keys match it (*, ? and [...] as in path.Match, not matching /), sorted by " +
				"key; a pattern that matches nothing is an error naming it. Images built on several machines " +
				"then merge, each into the directory its name gives:",
			"  mkdwarfs -i s3://bucket/src/ -o s3://bucket/images/src.dwarfs\n  mkdwarfs -i s3://bucket/doc/ -o s3://bucket/images/doc.dwarfs\n  mkdwarfs --merge 's3://bucket/images/*.dwarfs' -o s3://bucket/all.dwarfs",
			"Every S3 access is configured as for the images mkdwarfs reads at s3:// URLs: the endpoint " +
				"from AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, the region from AWS_REGION, credentials from " +
				"the AWS variables, AWS_PROFILE and the shared files (~/.aws), else anonymous; an endpoint " +
				"on an IP address, localhost or a single-label name (a service's short name) is addressed " +
				"path-style, as is every endpoint with GODWARFS_S3_PATH_STYLE=1 (a self-hosted store under " +
				"a longer name, such as minio.storage.svc).",
		}},
		{Title: "ENVIRONMENT", Paragraphs: []string{
			"SOURCE_DATE_EPOCH (seconds since 1970, see reproducible-builds.org) replaces the current " +
				"time in the creation timestamp, the history entry and --set-time now, so two builds of the " +
				"same tree with the same arguments by the same binary are byte-identical whenever they run. " +
				"A value that is not a non-negative integer is an error.",
		}},
		{Title: "COMPRESSION", Paragraphs: []string{
			"-C and the other --*-compression options take ALGO[:OPTION=VALUE...]: null; zstd:level=N " +
				"(-131072 to 22; levels below 1 are faster and weaker) with :long for long-distance matching " +
				"and :tlen=N (0 to 131072: a match this long ends libzstd's search for a longer one; 0 keeps the level's); " +
				"lzma:level=N (0 to 9) with :extreme, :dict_size=N (12 to 30, the log2 of the dictionary), " +
				":binary=NAME, :mode=fast|normal, :mf=hc3|hc4|bt2|bt3|bt4, :nice=N (2 to 273; 0 keeps the " +
				"preset's), :depth=N (0 to 4294967295) and :pb=N|auto (0 to 4); lz4; lz4hc:level=N (0 to 12); brotli:quality=N " +
				"(0 to 11) with :lgwin=N (10 to 24). The -l level (0 to 9) chooses all of them together with " +
				"block size and ordering; mkdwarfs -H prints the table and the encoders of this build.",
			"lzma:pb is the number of position bits LZMA2 models. The presets use 2, which suits data " +
				"laid out in 16- or 32-bit units (executables, tables of numbers, audio). With pb=auto, the " +
				"default and a godwarfs extension, each block is looked at first: where its byte values do " +
				"not depend on their position modulo 4 (text, JavaScript, JSON, SVG, WebAssembly) it is " +
				"compressed with pb=0, and at levels 6 to 9 without :nice also with a nice length of at " +
				"least 96 (at the preset's search depth), which finds the longer repeats of source trees. " +
				"On a tree of many releases of JavaScript projects this made the -l9 image's blocks 0.7% " +
				"smaller, for about a tenth more build time. pb=2 gives the reference's streams. Any LZMA2 " +
				"decoder reads either.",
			"lzma:binary=NAME puts a BCJ filter for executables of one architecture (x86, powerpc, ia64, " +
				"arm, armthumb or sparc) before LZMA2: it turns relative call targets into absolute ones, " +
				"which repeat more. As with the reference, each block is compressed with and without the " +
				"filter and the smaller stream is kept, so data that is not such code costs only time. " +
				"Images with these filters, and with arm64 from newer xz tools, are read in every build.",
		}},
		{Title: "GROWING IMAGES", Paragraphs: []string{
			"mkdwarfs -i OLD --append DIR [--append-at PATH] -o NEW writes OLD's tree with DIR's added at " +
				"PATH (without --append-at, DIR's entries join the root). OLD's blocks are copied into NEW byte " +
				"for byte, checked against their checksums on the way; none is recompressed. Files of OLD whose " +
				"size a new file has are read to compare whole-file hashes: a new file " +
				"with the contents of a file in OLD is stored as that file. The other new files are ordered " +
				"(--order), segmented and compressed (-C, -l) into new blocks as a build would; the segmenter " +
				"also matches them against OLD's last blocks, up to --append-index-size of them (default 1g, " +
				"0 turns it off), which are decoded once and held in memory while segmenting, so that data a " +
				"new file shares with OLD's files is referred to, not stored again. New blocks are compressed " +
				"on their own, so changed files do not compress against their old versions as they would in " +
				"one build. So that segments find what they share with their old versions instead, an append " +
				"segments with a finer window than a build: -W 7 (128 bytes) unless -W is given. Ten redis " +
				"releases appended one at a time at -l7 made an image 1.06 times the size of one build of all " +
				"of them (1.33 times with a build's -W 12); a large OLD is indexed at sparser steps so that " +
				"the index stays under about 8 million entries.",
			"mkdwarfs --merge [NAME=]IMAGE... -o NEW joins images: every block of every image is copied as " +
				"it is (an image at an http(s):// or s3:// URL is read with ranged requests, a few blocks at " +
				"once, and never decoded), and each image's tree goes to the directory NAME, by default the " +
				"image's file name without .dwarfs; NAME may be a path (a/b=IMAGE). A NAME never starts with " +
				". or / nor contains a colon, so write ./x=y.dwarfs for a file whose name has an equals sign. " +
				"--merge-into-root puts the trees of images given without NAME= into the root instead. Files that share their data in an " +
				"image share it in NEW. Files of a size that two images have are read (their blocks decoded, " +
				"fetched again for a remote image) and hashed, and a file with the contents of an earlier " +
				"image's file is stored as that file: its own copy stays in its image's blocks, which are " +
				"copied unchanged, but nothing refers to it (--no-merge-dedup keeps them apart and decodes " +
				"nothing). Merging cannot find redundancy below whole files between the images: shard " +
				"a tree along lines its data does not cross (one directory per project or release series).",
			"In both, a path that two trees have is an error naming it and the image it comes from, " +
				"unless both are directories, whose entries merge (the earlier one keeps its attributes), or " +
				"--replace is given: then the later tree's entry replaces the earlier one. Images of different " +
				"block sizes merge: blocks keep their sizes and the new image's block size is the largest. " +
				"The metadata is made for the whole tree with the (first) image's block size, time resolution, " +
				"packing, hard link table, creation timestamp setting and kept times, unless -S, " +
				"--time-resolution, -P, --no-hardlink-table, --no-create-timestamp or --keep-all-times say " +
				"otherwise; --set-owner, --set-group, --set-time and --chmod apply to the whole tree. Birth " +
				"times are not carried over. The history holds the images' entries, in order, and a new one. " +
				"A corrupt or truncated image is an error naming it; as with any build, nothing is left " +
				"under the output name when a run fails or is interrupted.",
		}},
		{Title: "SHARDS", Paragraphs: []string{
			"A tree too large for one machine is built in shards, one per task of a job array (Slurm's " +
				"SLURM_ARRAY_TASK_ID, Kubernetes' JOB_COMPLETION_INDEX, both counted from 0), and the shards " +
				"are merged: mkdwarfs -i TREE --shard=K/N -o shard-K.dwarfs on each task, then mkdwarfs " +
				"--merge --merge-into-root shard-*.dwarfs -o TREE.dwarfs, which copies the shards' blocks as " +
				"they are.",
			"Every shard build scans the whole tree, as a build would (filters, --input-list, a tar " +
				"archive, --with-devices and --remove-empty-dirs apply), and plans it; the plan depends only " +
				"on the paths, sizes and types of the entries, not on the order a directory lists them in " +
				"nor on the machine. It cuts the tree at depth --shard-depth (default 1: the root's " +
				"entries): the entries there, and the files, symlinks and empty directories above it, are " +
				"the units. A directory holding more than 1/N of the bytes is no unit but cut again one " +
				"level deeper, until its parts fit or are files. A directory whose entries are versions " +
				"of one tree (directories most of whose names recur in the others, such as releases side by " +
				"side) is cut across them: a unit is one relative path in every version, so that what the " +
				"versions share is in one shard and stored once; unless a path is a file, or a mix of files " +
				"and directories, holding more than 1/N across the versions (a few big files a version), " +
				"when the versions are cut apart as other directories are. The units are placed largest first, each " +
				"into the shard with the fewest bytes so far (the lowest index on a tie; units of equal size " +
				"in path order). A shard holds its units, everything below them, and the directories leading " +
				"to them, with their own attributes; so directories are shared between shards, and a shard " +
				"with no unit holds the root alone. --shard-plan (with --shard=N or K/N) prints the plan as " +
				"JSON, each shard's index, paths (its units) and bytes, and the plan's digest, and builds " +
				"nothing.",
			"The digest is a SHA-256 of the listing, N, the depth and the planning rules. A shard image " +
				"records K, N and the digest in its history entry, as the options --shard=K/N and " +
				"--shard-digest=DIGEST of its command line (with --no-history-command-line the entry records " +
				"only these; --no-history cannot be given); dwarfsck shows it as \"shard: K/N plan DIGEST\". " +
				"--shard-digest=DIGEST on a shard build makes it fail unless the tree plans to DIGEST, e.g. " +
				"the one --shard-plan printed before the tasks started, so that a tree that changes while the " +
				"shards are built fails early. An image is a shard when its newest history entry is a shard " +
				"build's and no other entry is; an image made from a shard by --recompress or --append is not.",
			"When any image given to --merge is a shard, they must all be shards of one plan, every K " +
				"from 0 to N-1 once: otherwise the merge fails before writing, naming each shard that is " +
				"missing, given twice, of another plan (the plan most images have, or the first's, is the " +
				"one), or an image that is no shard. A merged image can then be merged with other images. " +
				"The shards are joined in shard order whatever order they are given in. With " +
				"--merge-into-root they make the original tree: the directories shards share merge. Hard " +
				"links whose paths are in different shards become a file in each shard, stored once in the " +
				"merged image unless --no-merge-dedup but no longer linked; a shard plan at depth 1 keeps " +
				"links within one top-level directory together, unless that directory is cut. A merge of " +
				"shards needs its own history entry (not --no-history), or the result would read as a " +
				"shard. Data shared between shards is not deduplicated below whole files, so a plan works " +
				"best when its units are what the data does not cross, like one directory per project.",
		}},
		{Title: "SELF-MOUNTING EXECUTABLES", Paragraphs: []string{
			"mkdwarfs -i APPDIR -o APP --runtime=FILE writes the runtime FILE (a dwarfs-run binary; " +
				"--runtime alone takes the dwarfs-run beside mkdwarfs), then the image, and makes APP " +
				"executable; like any image it appears under its name only when complete. Run, APP mounts " +
				"its image read-only on a private temporary directory (through fusermount3 with " +
				"auto_unmount, and watched by a guard process, so that the mount and its directory go when " +
				"the runtime does, even by SIGKILL), runs the " +
				"tree's AppRun with the arguments, with APPDIR, APPIMAGE, ARGV0 and OWD set as AppImage's " +
				"runtime sets them, passes SIGINT, SIGTERM, SIGHUP and SIGQUIT on to it, and exits with its " +
				"status once the mount is gone. Without FUSE it extracts the image once to " +
				"$XDG_CACHE_HOME/dwarfs-run/DIGEST and runs it from there. APP --appimage-help lists the " +
				"runtime's own options (--appimage-extract, --appimage-mount, --appimage-offset).",
			"--entry=PATH names another program of the tree to run instead of AppRun. The runtime reads " +
				"it from the image's history, which records the command line, so --entry cannot be combined " +
				"with --no-history or --no-history-command-line; of several history entries (an image grown " +
				"with --append) the newest with an --entry counts. --hotness-list with --categorize=hotness, " +
				"from a list the dwarfs driver's -o analysis_file wrote while the application started, puts " +
				"what it reads first into blocks of their own, as for any image.",
			"The runtime decodes zstd, lz4, lz4hc and uncompressed sections only, which keeps it small " +
				"(every packed application carries a copy). With --runtime, mkdwarfs refuses a compression " +
				"outside these and names the options that ask for one: the lzma of -l8 and -l9, or the flac " +
				"and ricepp that --categorize gives audio and FITS images (-C pcmaudio/waveform::zstd and " +
				"-C fits/image::zstd choose another).",
		}},
		{Title: "LOGGING", Paragraphs: []string{
			"--log-level sets what is reported on standard error: error, warn (also unreadable inputs " +
				"and other warnings), info (the default: also the summary), verbose (also the settings in " +
				"effect and each phase with its time, as lines starting with V and the time of day, and at " +
				"the end a table of the phases (scanning, ordering, segmenting, metadata, compressing, " +
				"writing) with the start, end, wall and CPU time of each and the cores it kept busy, and " +
				"the CPU time spent in the block encoders), debug " +
				"(D lines: duplicate files, each file's place in the order, and how each file was segmented) " +
				"and trace (T lines: every segment match).",
		}},
		{Title: "NILSIMSA ORDER", Paragraphs: []string{
			"--order=nilsimsa groups files whose nilsimsa digests are alike. The digests are clustered " +
				"around centroids (each bit set when most members have it): a file joins the first cluster " +
				"within a distance limit, starting at 128 of the 256 bits, or starts a new one while there are " +
				"fewer than max-children clusters, else joins the nearest. Clusters larger than max-cluster-size " +
				"are clustered again with half the limit; smaller ones are ordered by a nearest neighbour " +
				"search, which takes time quadratic in max-cluster-size. Sibling clusters follow each other " +
				"largest first, each next to the one whose first file is nearest its last. max-children=1 with " +
				"a max-cluster-size above the number of files orders all files in one search. Files without a " +
				"digest (larger than --max-similarity-size) come first, largest first. The result does not " +
				"depend on --num-segmenter-workers, which sets how many clusters are worked on at once.",
			"Before that, the top-level directories (below any directories that all paths share) are " +
				"joined into families: two directories are related when at least a fifth of the smaller " +
				"one's bytes are in files with a namesake of a near digest (within 40 bits) in the other, or " +
				"in files both hold identical copies of. A family that is a single directory is split the " +
				"same way one level down (a project's releases into its major lines). Each family is " +
				"ordered on its own as above, the families follow each other by the name of their first " +
				"directory, and a family of at least a block's bytes starts a new block, as it would in a " +
				"build of its own; such a family also stores its own copy of a file it shares with another " +
				"family when it holds other versions of that file or the file is at most 4 KiB, as its own " +
				"build would. Releases of one " +
				"project side by side (one directory per version) are one family and are ordered as a " +
				"whole; unrelated projects side by side do not interleave in the blocks, which keeps a " +
				"file's versions close enough for the segmenter's lookback and the compressor's window. " +
				"families=0 orders the whole tree as one, as the reference does. The number of families " +
				"is reported at --log-level=verbose.",
		}},
		{Title: "CATEGORIZERS", Paragraphs: []string{
			"--categorize[=LIST] runs categorizers on the input while it is scanned, in the order of LIST; " +
				"the first that claims a file decides its category. --categorize alone means " +
				"--categorize=fits,pcmaudio,binary,incompressible, as with the reference. The incompressible " +
				"categorizer compresses each file (at least --incompressible-min-input-size " +
				"bytes) in --incompressible-block-size pieces with a fast zstd level (--incompressible-zstd-level), " +
				"and files whose output is at least --incompressible-ratio of the input go to the category " +
				"'incompressible'; with --incompressible-fragments each piece is categorized on its own, so one " +
				"file can have data in both categories.",
			"The pcmaudio categorizer recognises uncompressed PCM audio in AIFF, CAF, WAV and WAV64 files " +
				"(8, 16, 20, 24 or 32 bits per sample, integer samples; 32 bytes or more) and splits each into " +
				"'pcmaudio/metadata' (headers and trailing chunks) and 'pcmaudio/waveform' (the samples). The fits " +
				"categorizer does the same for FITS files holding a 2-dimensional 16-bit image ('fits/metadata', " +
				"'fits/image'). Waveforms and images of different layouts are stored in separate blocks, and the " +
				"layout is recorded for each block in the image's category metadata, a JSON object: for a " +
				"waveform endianness, signedness, padding, bytes_per_sample, bits_per_sample and " +
				"number_of_channels; for an image endianness, bytes_per_sample, unused_lsb_count and " +
				"component_count; " +
				"which dwarfsck shows and a codec such as FLAC uses. The binary categorizer puts ELF and PE " +
				"executables and libraries into 'binary/elf' and 'binary/pe', thin Mach-O files into " +
				"'binary/macho-section', and splits fat Mach-O files into their architectures' images " +
				"('binary/macho-section') and what lies between them ('binary/macho-header'); files for " +
				"different machines (and ELF types, ABIs, byte orders) are kept in separate blocks. Malformed " +
				"files are left uncategorized, with the reference's warnings.",
			"Like the reference, --categorize brings per-level defaults for pcmaudio/waveform and fits/image, " +
				"unless the command line sets them: at levels 1 to 7 --order=revpath for both; -W 0 for fits/image, " +
				"and for pcmaudio/waveform -W 0 (levels 1-4), 20 (5-7) or 16 (8-9); and -C flac:level=3, 5 or 8 " +
				"for pcmaudio/waveform and -C ricepp for fits/image where this build has those codecs, else " +
				"zstd at level 3, 5 or 8 (as a reference build without them does; --log-level=verbose says " +
				"which). When a category's compressor needs whole frames (FLAC: channels times bytes per " +
				"sample), the segmenter matches and cuts that category's data in whole frames only.",
			"The hotness categorizer puts the files named in --hotness-list into the category 'hotness', so " +
				"that their data is stored together, in blocks of its own. The list has one path a line, " +
				"relative to the input directory; leading slashes are ignored, nothing else is normalised, " +
				"paths that name no file are ignored, and a path listed twice is an error. Mounting an image " +
				"with dwarfs -o analysis_file=FILE writes such a list of the files opened; rebuilding with " +
				"--categorize=hotness --hotness-list=FILE and mounting with -o preload_category=hotness then " +
				"loads those blocks at mount time. Without a list (or with an empty one) the categorizer " +
				"claims nothing, with a warning; --hotness-list without hotness in --categorize has no effect " +
				"(godwarfs warns). Like the reference, the hotness categorizer must be named: --categorize " +
				"alone does not enable it.",
			"Order matters: with --categorize=hotness,incompressible a listed file always goes to hotness " +
				"(the incompressible test is not run on it); with incompressible,hotness a listed file that " +
				"the incompressible categorizer claims stays there, as with the reference: in whole-file mode " +
				"when it is incompressible or sparse, and with --incompressible-fragments every file it " +
				"examines, so that only files below --incompressible-min-input-size can still go to hotness. " +
				"Data stored once for several paths (identical files, hard links) is hot when any of them is listed.",
			"The data of each category is ordered, segmented and stored in blocks of its own, and the image " +
				"records the category of every block (dwarfsck shows them; the dwarfs preload_category option " +
				"and mkdwarfs --recompress-categories use them). -C, --order, -B, -W, -w and --bloom-filter-size " +
				"take CAT[,CAT...]::VALUE to set a value for categories only, e.g. -C incompressible::lz4 or " +
				"--order=incompressible::none; the category <default> is everything not categorized. " +
				"--categorize implies -C incompressible::null unless -C sets that category, so already " +
				"compressed data is stored as it is instead of being compressed again, which is faster and " +
				"rarely bigger. When rewriting an image with --recompress, -C CAT::ALGO applies to the " +
				"blocks of that category in the image.",
		}},
		{Title: "FILTER RULES", Paragraphs: []string{
			"Each -F rule is '+ PATTERN' (include), '- PATTERN' (exclude) or '. FILE' (read more rules " +
				"from FILE, one a line; blank lines and lines starting with # are skipped; FILE may merge " +
				"others). Rules are tried in the order given and the first one that matches an entry decides; " +
				"an entry no rule matches is included. An excluded directory is not scanned. A letter i after " +
				"the sign ('+i *.jpg') makes the rule ignore case.",
			"A pattern starting with / is anchored at the input directory; any other pattern matches at " +
				"any depth. A pattern ending in / matches only directories; any other pattern matches only " +
				"files, links and other non-directories, unless it ends in **. ? and * match any one and any " +
				"number of characters except /, ** matches across directories, [abc], [a-h] and [!a-h] are " +
				"character classes, {a,b} alternatives, and \\ quotes the next character.",
			"For example, these rules keep the File/Spec/E*.pm and M*.pm modules at any depth and all .pl " +
				"files except those below a unicore directory, and leave out every other file (the " +
				"directories stay; --remove-empty-dirs drops the empty ones); --debug-filter lists the result " +
				"without building an image:",
			"  mkdwarfs -i perl -o perl.dwarfs --remove-empty-dirs \\\n    -F '+ File/Spec/[EM]*.pm' -F '- unicore/**.pl' -F '+ *.pl' -F '- *'",
		}},
		{Title: "BLOCK SIZE AND READ PATTERNS", Paragraphs: []string{
			"A block is compressed as one stream, so reading any byte of it decodes the block from its start " +
				"to that byte. Archives read whole (extracted, copied, a tar of the mount) are smallest and read " +
				"fastest with large blocks (-S24 to -S26). Archives read a few files at a time pay, per file, " +
				"a decode of on average half a block, and the driver's cache holds whole blocks: on 442 MB of " +
				"shared libraries at -S26 (lzma), reading 75 of the files (24 MB) in name order through the " +
				"mount took the driver 100 s and 424 MiB, and 6.6 s and 63 MiB with 1 MiB xz blocks.",
			"For such archives, keep blocks small (-S20 to -S22, as squashfs does with 1 MiB blocks), or with " +
				"lzma write each block as xz blocks with an index: -C lzma:level=9:xz_block_size=20. A read then " +
				"decodes only the xz blocks (1 MiB) holding its bytes, and the block cache keeps those pieces, " +
				"not whole blocks, so its memory follows what is read. The reference tools read and check such " +
				"images. Each xz block starts with an empty dictionary, which costs size: on a 64 MiB block of " +
				"shared libraries at lzma level 9, 16% with 1 MiB xz blocks, 11% with 4 MiB, 4% with 16 MiB; " +
				"text with long-range repetition loses more. Images opened with a signature to verify decode " +
				"whole blocks, since only a whole payload can be checked against its signed digest.",
		}},
		{Title: "PERFORMANCE", Paragraphs: []string{
			"A build runs in phases (--log-level=verbose prints each with its wall and CPU time). " +
				"Scanning reads and hashes files on --num-scanner-workers threads and ordering clusters " +
				"similarity digests on --num-segmenter-workers; segmenting is one thread, and each block " +
				"it fills goes straight to one of -N compression workers, so compression runs alongside " +
				"segmenting from the first block on. Each block is compressed as one encoder job, as the " +
				"reference does; only a build whose data fits in one block has that block cut into jobs " +
				"for several threads. Up to two blocks per worker wait for compression or writing " +
				"(--memory-limit), so a worker that finishes a fast block starts the next while an older " +
				"one is still being compressed. Each worker keeps its zstd and lzma encoders from block to " +
				"block and asks the kernel for transparent huge pages for their tables (granted where " +
				"/sys/kernel/mm/transparent_hugepage/enabled is madvise or always), which saves the zstd " +
				"encoder at level 22 several percent of its CPU and the lzma encoder at level 9 the page " +
				"faults of its 700 MiB of tables for every block; the metadata is compressed while the " +
				"last blocks are.",
			"On a machine with many cores, three things bound the wall time however many cores there " +
				"are: scanning and ordering, which must see every file before the first block is made; the " +
				"segmenter, one thread per build; and the last block, which one worker compresses alone " +
				"(seconds at -l7, where blocks are 16 MiB, and much longer at -l9, where they are 64 MiB " +
				"of lzma). Compression itself scales with the number of blocks. Each worker holds one " +
				"encoder's state (hundreds of MiB at zstd level 22 or lzma level 9), so memory grows with " +
				"-N. make bench-scale-cores measures a corpus on 1 and 2 cores and projects 16 and 64.",
		}},
		{Title: "DIFFERENCES FROM THE REFERENCE MKDWARFS", Paragraphs: []string{
			"-B (--max-lookback-blocks) defaults to 2, where the reference's default is 1: the segmenter " +
				"also searches the block finished last, so that a file at the start of a block can still " +
				"refer to its earlier version at the end of the one before, which otherwise is stored again " +
				"at every block boundary (on a tree of many releases of several projects, 3% of the image). " +
				"A file can then have data in two blocks, and reading it decodes both. At -l9 the default " +
				"is 3. -B 1 keeps the reference's behaviour.",
			"-P auto, the default, packs all metadata tables (as -P all) when the metadata is " +
				"compressed, at levels 7 to 9, where the reference packs only names and symlinks: that " +
				"metadata is decompressed into memory when the image is opened anyway, and packed tables " +
				"compress smaller (on a tree of 345,000 files, 0.34 MB of 3.3). Uncompressed metadata " +
				"(levels 0 to 6) is read in place, and there auto is the reference's. -P names,symlinks " +
				"gives the reference's packing at every level.",
			"Compressed metadata is laid out with the fields of its tables of chunks, directory entries " +
				"and (where they hold times) inodes in whole bytes, where the reference gives each field " +
				"the fewest bits its values need. Every reader takes the widths from the metadata's schema. The rows then " +
				"start on byte boundaries, where compressors find them repeated: on a tree of 345,000 files " +
				"the metadata is 8% larger in memory and compresses to 2.1 instead of 3.4 MB with zstd " +
				"(-l7) and 1.5 instead of 3.1 MB with lzma (-l9); metadata under 256 KiB is also tried in " +
				"the reference's layout and the smaller kept. Uncompressed metadata keeps the reference's layout. " +
				"Metadata of more than 128 KiB compressed with libzstd (a cgo build) is compressed twice, " +
				"with and without libzstd's block pre-splitter, and the smaller kept: on tables of rows the " +
				"pre-splitter's cuts can cost a tenth of the compressed size (the metadata of a tree of " +
				"345,000 files, moved by a few bytes: 2.37 instead of 2.14 MB at 6 of 64 offsets; packed, " +
				"2.72 instead of 2.67 MB), and the second compression takes a second or two.",
			"Levels 6 and 7, and -C's default, compress blocks with zstd:level=22:tlen=512, where the " +
				"reference uses zstd:level=22: libzstd's level 22 searches on for a longer match until it " +
				"has one of 999 bytes, and after the segmenter has taken the long repeats few matches are " +
				"that long. On a tree of many releases of JavaScript projects the -l7 build took three " +
				"quarters of the CPU of one with level 22's own 999, for an image 0.1% larger (100 redis " +
				"releases: three quarters, 0.15%). " +
				"-C zstd:level=22 gives libzstd's own level 22.",
			"lzma blocks are written with pb=auto (see COMPRESSION): pb=0 and a longer nice length for " +
				"blocks without 16- or 32-bit structure. lzma:pb=2 gives the reference's streams.",
			"The pcmaudio and fits categorizers log the reference's messages at its levels, except that " +
				"its info messages are verbose ones here. A FITS image that " +
				"would extend past the end of the file is left uncategorized with a warning, as is a CAF " +
				"data chunk too small for its edit count, and data with a layout that is not a whole number of " +
				"its compressor's frames (the reference does not check these). With " +
				"--incompressible-fragments a file's similarity (for --order) is computed over the whole file, " +
				"not per category. Empty lines in a hotness list are skipped (the reference takes one as the " +
				"path '' and fails on a second as a duplicate). Data stored once for several paths is hot when " +
				"any of them is listed; the reference only looks at the path its scan met first, which depends " +
				"on the order of directory entries on disk. By default godwarfs stops at the first input it cannot read and writes no image; " +
				"with --continue-on-error it behaves as the reference does by default: it reports the input, " +
				"leaves it out (or stores it empty when reading fails only while its data is packed), and exits with status 2.",
			"A filter pattern that does not start with / is matched against the path below the input " +
				"directory only; the reference also lets it match directories above the input, so its " +
				"result can depend on where the tree lives. ? and * match one character, not one byte.",
			"--debug-filter lists the same paths as the reference, sorted; the reference lists them in " +
				"the order its scanner reads the directories.",
			"Builds without cgo (make build-static) encode zstd and lzma in pure Go, and so do cgo builds " +
				"without the build tag liblzma for lzma (make sets it, and libflac for FLAC, where the headers are; " +
				"-H says which encoders a build has): zstd levels below 1 " +
				"all use the Go encoder's fastest level (level 1), zstd:long and lzma:extreme have no effect, " +
				"and the lzma options mode, mf, nice and depth are refused with an error; lzma:binary works.",
		}},
	},
	SeeAlso: []string{"dwarfs(1)", "dwarfsck(1)", "dwarfsextract(1)"},
}
