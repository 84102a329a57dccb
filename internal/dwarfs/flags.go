package dwarfs

import (
	"fmt"
	"io"

	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/mountopts"
)

// options are the dwarfs command's options; --help, --version and --man
// come from package cli.
var options = []cli.Option{
	{Long: "foreground", Short: "f", Help: "stay in the foreground (as mount.dwarfs: mount(8)'s fake mount, do everything but mount)"},
	{Long: "debug", Short: "d", Help: "stay in the foreground and print FUSE debug output"},
	{Long: "auto-mountpoint", Help: "mount on a directory named after the image (IMAGE without its extension), created if missing and then removed at unmount"},
	{Long: "options", Short: "o", HasValue: true, Arg: "OPT[,OPT...]", Help: "mount options, see below"},
	{Long: "single-threaded", Short: "s", Hidden: true, Help: "accepted for mount(8), no effect"},
	{Long: "no-mtab", Short: "n", Hidden: true, Help: "accepted for mount(8), no effect"},
	{Long: "verbose", Short: "v", Hidden: true, Help: "accepted for mount(8), no effect"},
	{Long: "version", Short: "V", Help: "print the version and exit"},
}

// multiManual describes dwarfs multi and its control commands.
var multiManual = []string{
	"dwarfs multi serves several images from one process and one FUSE mount. Each image appears " +
		"as a directory of the mount point named NAME, or after the image's file (the last element " +
		"of a URL's path) without .dwarfs. A name is one path element (no slash, not . or ..) and is " +
		"unique in the mount. What precedes the first colon of an argument is its name unless it is a " +
		"URL's scheme or contains a slash: write ./a:b.dwarfs for a file with a colon in its name. " +
		"Images are files, http, https and s3 URLs, or docker:// references (named after the " +
		"repository's last element), as for a single image.",
	"All images of the driver share one block cache: cachesize bounds their decoded blocks together " +
		"(the least recently used block of any image is evicted first), workers is the one decode pool " +
		"(at least remote_workers when an image is at a URL), and each image's metadata stays mapped from " +
		"its file as with a single image. The other -o options apply to every image of the mount; " +
		"analysis_file, signature and imagesize, which name one image's files, are refused.",
	"The mount point's root is a read-only directory of the driver. Each image directory has what a " +
		"mount of the image alone has: the user.dwarfs.driver.pid, user.dwarfs.driver.perfmon (that " +
		"image's counters) and, for an image at a URL, user.dwarfs.driver.remote attributes on its root, " +
		"and user.dwarfs.inodeinfo on every entry. The mount's root has user.dwarfs.driver.pid, " +
		"user.dwarfs.driver.perfmon (the requests of the whole mount, the shared cache and a line per " +
		"image) and user.dwarfs.driver.control, the path of the control socket.",
	"The driver keeps running until its last mount point is unmounted (fusermount3 -u or umount on " +
		"each), or until it gets SIGINT, SIGTERM or SIGHUP, which unmount them all.",
	"Examples:",
	"  dwarfs multi redis-6.dwarfs redis-7.dwarfs old:https://host/r5.dwarfs /mnt/redis -o cachesize=1g\n" +
		"  dwarfs add /mnt/redis s3://bucket/redis-8.dwarfs\n" +
		"  dwarfs remove /mnt/redis old\n" +
		"  dwarfs config /mnt/redis cachesize=2g\n" +
		"  dwarfs multi lib.dwarfs /mnt/lib -o attach=/mnt/redis",
}

// multiItems are the control commands and the control socket.
var multiItems = []cli.Item{
	{Term: "add MOUNTPOINT [NAME:]IMAGE...", Text: "opens the images and adds them to the mount; each appears in the listing at once (the kernel's cached entries of the root are invalidated). A name in use is an error; the other images are still added"},
	{Term: "remove MOUNTPOINT NAME...", Text: "takes the images out of the mount, lazily, like umount -l: the name leaves the listing at once and may be used again by add, while files and directories of the image that are open keep working until closed, and the image is closed with the last of them. Only what is open is sure to keep working: other access through the removed image (relative paths from a working directory in it) fails with ENOENT, at once where the kernel has marked the directory deleted, or once the image is closed. Readers of other images see nothing of this"},
	{Term: "config MOUNTPOINT [cachesize=SIZE]", Text: "prints the driver's settings (cache size and use, workers, each mount point with its control socket and images, their open files and cached bytes) after applying the changes given; only cachesize can change while mounted (a smaller one evicts at once), other options are an error"},
	{Term: "-o attach=MOUNTPOINT", Text: "dwarfs multi IMAGE... NEWMOUNT -o attach=MOUNTPOINT asks the driver serving MOUNTPOINT to mount the images at NEWMOUNT, served by the same process on the same block cache, with its own control socket; cachesize and workers are the driver's and cannot be given"},
	{Term: "control socket", Text: "add, remove, config and attach send a request over a unix socket of the driver: /run/godwarfs/dev-N.sock for root, otherwise $XDG_RUNTIME_DIR/godwarfs/dev-N.sock (or /run/user/UID/godwarfs, or godwarfs-UID in the temporary directory when neither exists), where N is the st_dev of the mounted file system, so the command finds it by stat(2) of any path of the mount. The directory is created mode 0700 and must be owned by the user and closed to others (the driver and the commands both check, so no other user can stand in for the driver), the socket is mode 0600, and the driver checks each caller's uid (SO_PEERCRED on Linux, LOCAL_PEERCRED on macOS and FreeBSD) and refuses any user but the one who mounted, root included"},
}

// differences lists where the driver deliberately differs from the
// reference dwarfs(1).
var differences = []cli.Item{
	{Term: "multi, add, remove, config, attach=", Text: "not in the reference, which serves one image per process: several images in one mount on one block cache, changed while mounted"},
	{Term: "no_xattr", Text: "not in the reference: the kernel never caches extended attributes for FUSE, so a tool that asks for one of every file costs a request per file each time; with no_xattr the kernel stops sending them after the first refusal. Without it, names outside user.* are refused as unsupported (EOPNOTSUPP), which is enough for ls -l to stop asking for labels and ACLs"},
	{Term: "preload_category=NAME", Text: "a category the image does not have fails the mount with an error listing the categories it has (the reference silently preloads nothing); the option may be given more than once"},
	{Term: "block_allocator=malloc|mmap", Text: "accepted and checked, but decoded blocks of 64 KiB and more always get an anonymous mapping of their own (as with mmap in the reference), unmapped as soon as a block leaves the cache and no read holds it; smaller blocks are Go heap memory"},
	{Term: "max_threads=N", Text: "requests run on goroutines, not a libfuse thread pool, so there is no limit unless one is given (libfuse's default is 10 threads); with N, at most N requests are handled at once"},
	{Term: "clone_fd, max_idle_threads=N", Text: "accepted for scripts and fstab lines written for the reference, with no effect: they tune libfuse's thread pool (a /dev/fuse descriptor per thread; how many idle threads to keep), while the driver reads all requests from one descriptor with one waiting goroutine, starts another for each READ (which may wait for a block) and lets the others end; max_idle_threads takes a number from -1 (no limit) up"},
	{Term: "case_insensitive", Text: "directory indexes are built as directories are first searched rather than all at mount; the collision warnings are still given at mount"},
}

func moreHelp(w io.Writer, _ *cli.Result) {
	fmt.Fprint(w, "\nMount options (-o):\n")
	for _, it := range mountopts.Items() {
		fmt.Fprintf(w, "  %-34s %s\n", it.Term, it.Text)
	}
}

// Program describes the dwarfs command's command line, help and manual page.
func Program() *cli.Program {
	return &cli.Program{
		Name:    "dwarfs",
		Summary: "mount a DwarFS image with FUSE",
		Synopsis: []string{
			"IMAGE MOUNTPOINT [-f] [-d] [-o OPTION[,OPTION...]]",
			"IMAGE --auto-mountpoint [-f] [-d] [-o OPTION[,OPTION...]]",
			"multi [NAME:]IMAGE... MOUNTPOINT [-f] [-d] [-o OPTION[,OPTION...]]",
			"add MOUNTPOINT [NAME:]IMAGE...",
			"remove MOUNTPOINT NAME...",
			"config MOUNTPOINT [cachesize=SIZE]",
		},
		Options:    options,
		MoreHelp:   moreHelp,
		ValueWords: map[string][]string{"options": mountopts.Words()},
		Exit: []cli.ExitStatus{
			{Code: cli.ExitOK, Meaning: "mounted (in the background, once the mount is ready), or unmounted cleanly in the foreground"},
			{Code: cli.ExitError, Meaning: "a usage error or a bad mount option, or the image could not be opened or mounted; for add, remove and config, no driver answered or it refused the request or part of it"},
		},
		Manual: cli.Manual{
			Description: []string{
				"dwarfs mounts a DwarFS image read-only with FUSE. It runs in the background once the " +
					"mount is ready, unless -f or -d is given. Unmount with fusermount3 -u or umount.",
				"Installed or linked as mount.dwarfs or mount.fuse.dwarfs it is a mount(8) helper, so " +
					"images can be mounted from /etc/fstab; the source may be written dwarfs#IMAGE.",
				"With -o analysis_file=FILE the driver writes the path of every file opened, once, in the order " +
					"of first opens; mkdwarfs --categorize=hotness --hotness-list=FILE (godwarfs's or the " +
					"reference's) stores those files together in blocks of the category hotness, and " +
					"-o preload_category=hotness loads those blocks at mount.",
				"dwarfs multi, add, remove and config serve several images in one mount and change them " +
					"while mounted; see SEVERAL IMAGES IN ONE MOUNT.",
				"Examples:",
				"  dwarfs image.dwarfs /mnt/image -o cachesize=1g\n  dwarfs docker://registry.example/tools:v1 /mnt/tools\n  /srv/tree.dwarfs  /mnt/tree  fuse.dwarfs  ro,cachesize=256m  0 0",
			},
			Sections: []cli.Section{
				{Title: "MOUNT OPTIONS", Items: mountopts.Items()},
				{Title: "SEVERAL IMAGES IN ONE MOUNT", Paragraphs: multiManual, Items: multiItems},
				{Title: "REGISTRIES", Paragraphs: cli.RegistryManual},
				{Title: "DIFFERENCES FROM THE REFERENCE", Items: differences},
			},
			SeeAlso: []string{"mkdwarfs(1)", "dwarfsck(1)", "dwarfsextract(1)", "fusermount3(1)", "mount(8)"},
		},
	}
}
