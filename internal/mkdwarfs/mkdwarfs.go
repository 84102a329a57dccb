// Package mkdwarfs is the mkdwarfs command line: it maps the options onto
// writer.BuildOptions or writer.RewriteOptions, shows progress and prints
// the summary. Building and rewriting are package writer's.
package mkdwarfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/godwarfs/godwarfs/block/encode"
	"github.com/godwarfs/godwarfs/dedup"
	"github.com/godwarfs/godwarfs/imagesig"
	"github.com/godwarfs/godwarfs/internal/chmod"
	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/ociartifact"
	"github.com/godwarfs/godwarfs/ociinput"
	"github.com/godwarfs/godwarfs/source/httpsource"
	_ "github.com/godwarfs/godwarfs/source/remote" // images at http(s)://, s3:// and docker://
	"github.com/godwarfs/godwarfs/source/s3source"
	"github.com/godwarfs/godwarfs/tarinput"
	"github.com/godwarfs/godwarfs/writer"
)

// sourceDateEpoch returns the clock SOURCE_DATE_EPOCH (seconds since
// 1970, reproducible-builds.org) sets: the creation timestamp, the history
// entry's time and --set-time now all read it, so two builds of a tree are
// byte-identical whenever they run. nil when the variable is unset or
// empty; an error when it is not a non-negative integer, as the
// specification asks.
func sourceDateEpoch(v string) (func() time.Time, error) {
	if v == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds since 1970", v)
	}
	t := time.Unix(n, 0).UTC()
	return func() time.Time { return t }, nil
}

// Config is a fully parsed mkdwarfs invocation.
type Config struct {
	Build       dedup.Options
	Output      string // "-" for stdout
	Force       bool
	Compression string
	// CategoryComp is the block compression of categories (-C CAT::SPEC).
	CategoryComp map[string]string
	SchemaComp   string
	MetaComp     string
	HistoryComp  string
	Workers      int
	Niceness     int // --compress-niceness
	MemLimit     int64
	Header       []byte
	Executable   bool // --runtime: the output is a program
	NoIndex      bool
	NoHistory    bool
	NoHistTime   bool
	NoHistArgs   bool
	Args         []string // command line for the history
	LogLevel     int
	Progress     string
	DebugFilter  string // --debug-filter mode: print filter effects only
	// Shard is set by --shard; ShardPlan (--shard-plan) prints its plan
	// instead of building.
	Shard     *writer.ShardOptions
	ShardPlan bool
	// Rewrite is set when an existing image (Build.Input) is rewritten
	// (--recompress, --rebuild-metadata, --change-block-size).
	Rewrite *writer.RewriteOptions
	// TarInput is the tar archive Build.Input names ("-": Stdin), read
	// with TarOptions; "" when the input is a directory.
	TarInput   string
	TarOptions tarinput.Options
	// OCIInput is the container image Build.Input names (oci:,
	// docker-archive:, docker://), read with OCIOptions; OCIConfig is
	// where its config goes (--oci-config).
	OCIInput   string
	OCIOptions ociinput.Options
	OCIConfig  string
	// S3Input is the s3://BUCKET/PREFIX/ whose objects Build.Input
	// names.
	S3Input string
	Stdin   io.Reader
	// Append or Merge is set when images grow (--append, --merge).
	Append *writer.AppendOptions
	Merge  *writer.MergeOptions
	// Update is set for --update and --apply-upper.
	Update *writer.UpdateOptions
	// Signer, when set (--sign), signs the output once it is written:
	// OUTPUT.sig (see package imagesig).
	Signer ssh.Signer
	// mergeGlobs marks the merge inputs that are s3:// patterns, true
	// for those given with NAME=; mergeIntoRoot is --merge-into-root.
	mergeGlobs    map[int]bool
	mergeIntoRoot bool
	// warnings are shown once logging is set up (at --log-level warn and
	// above); notes at --log-level verbose.
	warnings []string
	notes    []string
	level    int // -l
}

// target is where and how the image is written.
func (c *Config) target(stdout io.Writer) writer.Target {
	t := writer.Target{
		Output: c.Output, Overwrite: c.Force, Stdout: stdout, Executable: c.Executable,
		BlockCompression: c.Compression, SchemaCompression: c.SchemaComp,
		MetadataCompression: c.MetaComp, HistoryCompression: c.HistoryComp,
		CategoryCompression: c.CategoryComp,
		Workers:             c.Workers, Niceness: c.Niceness, NoSectionIndex: c.NoIndex,
		// Signing then reads no more than the headers back.
		Sums:    c.Signer != nil,
		History: writer.History{Omit: c.NoHistory, NoTimestamp: c.NoHistTime},
	}
	if !c.NoHistArgs {
		t.History.Arguments = c.Args
	}
	return t
}

// Log levels.
const (
	logError   = cli.LogError
	logWarn    = cli.LogWarn
	logInfo    = cli.LogInfo
	logVerbose = cli.LogVerbose
	logDebug   = cli.LogDebug
	logTrace   = cli.LogTrace
)

// Tool is mkdwarfs for the commands: interrupted, the builder removes its
// temporary file.
var Tool = cli.Tool{Name: "mkdwarfs", Main: Main, CancelOnSignal: true}

// Main runs mkdwarfs with the command line args (args[0] is the program
// name) and returns the exit status (cli.ExitOK, cli.ExitError, or
// cli.ExitPartial when the image was written but some inputs could not be
// read). A tar archive or input list given as "-" is read from stdio.In.
func Main(ctx context.Context, args []string, stdio cli.Stdio) int {
	args = args[min(1, len(args)):]
	stdin, stdout, stderr := stdio.In, stdio.Out, stdio.Err
	prog := Program()
	r, code, done := prog.Parse(args, stdout, stderr)
	if done {
		return code
	}
	cfg, err := configFrom(r, args, stdin)
	if err != nil {
		return prog.Fail(stderr, err)
	}
	if cfg.DebugFilter != "" {
		if err := dedup.DebugFilter(cfg.Build, cfg.DebugFilter, stdout); err != nil {
			return prog.Fail(stderr, err)
		}
		return cli.ExitOK
	}
	if cfg.ShardPlan {
		if _, err := build(ctx, cfg, stdout, nil); err != nil {
			return prog.Fail(stderr, err)
		}
		return cli.ExitOK
	}
	cfg.Progress = progressMode(cfg.Progress, stderr)
	if strings.HasPrefix(cfg.Output, ociartifact.Scheme) {
		return mainPush(ctx, cfg, stdout, stderr)
	}
	if s3source.IsURL(cfg.Output) {
		return mainUpload(ctx, cfg, stdout, stderr)
	}
	if cfg.Rewrite != nil {
		return mainRewrite(ctx, cfg, stdout, stderr)
	}
	return mainBuild(ctx, cfg, stdout, stderr)
}

// mainPush builds or rewrites the image into a temporary file and, when
// that succeeded, pushes it to the registry reference cfg.Output names:
// a failed build leaves nothing in the registry, and the tag moves only
// once the blob is stored.
func mainPush(ctx context.Context, cfg *Config, stdout, stderr io.Writer) int {
	ref := cfg.Output
	if _, err := ociartifact.ParseReference(ref); err != nil {
		return Program().Fail(stderr, &cli.UsageError{Msg: err.Error()})
	}
	dir, err := os.MkdirTemp(cfg.TarOptions.TempDir, "mkdwarfs-push-")
	if err != nil {
		return Program().Fail(stderr, fmt.Errorf("a temporary file for the image: %w", err))
	}
	defer os.RemoveAll(dir)
	code := buildInto(ctx, cfg, filepath.Join(dir, "image.dwarfs"), stdout, stderr)
	if code != cli.ExitOK && code != cli.ExitPartial {
		return code
	}
	tr := httpsource.NewTransport(max(cfg.Workers, 1))
	defer tr.CloseIdleConnections()
	r, _ := ociartifact.ParseReference(ref)
	repo := r.Context().RepositoryStr()
	d, err := ociartifact.Push(ctx, cfg.Output, ref, ociartifact.PushOptions{Transport: tr, Title: path.Base(repo) + ".dwarfs"})
	if err != nil {
		return Program().Fail(stderr, fmt.Errorf("the image was built, but not pushed: %w", err))
	}
	if cfg.LogLevel >= logInfo {
		fmt.Fprintf(stderr, "pushed %s (manifest %s)\n", ref, d)
	}
	if cfg.Signer != nil {
		// --sign wrote OUTPUT.sig beside the temporary file.
		if err := ociartifact.PushSignature(ctx, cfg.Output+".sig", ref, d, ociartifact.PushOptions{Transport: tr, Title: path.Base(repo) + ".dwarfs.sig"}); err != nil {
			return Program().Fail(stderr, fmt.Errorf("the image was pushed, but not %w", err))
		}
		if sr, err := ociartifact.SignatureRef(ref); err == nil && cfg.LogLevel >= logInfo {
			fmt.Fprintf(stderr, "pushed its signature to %s\n", sr)
		}
	}
	return code
}

// buildInto builds, rewrites or grows the image as cfg says, into the
// file output instead of the one the command line names.
func buildInto(ctx context.Context, cfg *Config, output string, stdout, stderr io.Writer) int {
	cfg.Output = output
	// Rewrites and grows took their target from the command line.
	if cfg.Rewrite != nil {
		cfg.Rewrite.Target.Output = cfg.Output
	}
	if cfg.Append != nil {
		cfg.Append.Target.Output = cfg.Output
	}
	if cfg.Merge != nil {
		cfg.Merge.Target.Output = cfg.Output
	}
	if cfg.Update != nil {
		cfg.Update.Target.Output = cfg.Output
	}
	if cfg.Rewrite != nil {
		return mainRewrite(ctx, cfg, stdout, stderr)
	}
	return mainBuild(ctx, cfg, stdout, stderr)
}

// mainBuild builds an image from a directory, archive or container
// image, or grows one (--append, --merge).
func mainBuild(ctx context.Context, cfg *Config, stdout, stderr io.Writer) int {
	start := time.Now()
	progress := startProgress(cfg.Progress, stderr)
	if cfg.TarInput != "" && cfg.TarInput != "-" {
		if st, err := os.Stat(cfg.TarInput); err == nil {
			progress.archiveSize = st.Size()
		}
	}
	setLoggers(cfg, progress.logWriter())
	res, err := build(ctx, cfg, stdout, progress.update)
	progress.stop()
	if err != nil && ctx.Err() != nil {
		fmt.Fprintln(stderr, "mkdwarfs: interrupted, no image written")
		return cli.ExitError
	}
	switch {
	case errors.Is(err, fs.ErrExist):
		err = fmt.Errorf("%w (use -f to overwrite)", err)
	case errors.Is(err, dedup.ErrPathExists):
		err = fmt.Errorf("%w (use --replace to let the later one win)", err)
	case cfg.Merge == nil && cfg.Append == nil && cfg.Update == nil:
	case errors.Is(err, writer.ErrUsage), errors.Is(err, writer.ErrSameFile):
		err = &cli.UsageError{Msg: err.Error()}
	}
	if err != nil {
		return Program().Fail(stderr, err)
	}
	if err := signOutput(cfg, res.Sums, stderr); err != nil {
		return Program().Fail(stderr, err)
	}
	if cfg.LogLevel >= logInfo {
		head := "header"
		if cfg.Executable {
			head = "runtime"
		}
		printSummary(stderr, res, int64(len(cfg.Header)), head, time.Since(start))
		if res.Plan != nil {
			printShard(stderr, cfg.Shard.Index, res.Plan)
		}
	}
	if cfg.LogLevel >= logVerbose && res.Timeline != nil {
		// Where the time went: each phase's wall and CPU time.
		res.Timeline.WriteTo(stderr)
	}
	if res.Stats.Errors > 0 {
		return cli.ExitPartial
	}
	return cli.ExitOK
}

// moreHelp follows the option list in --help; -H adds the level table.
func moreHelp(w io.Writer, r *cli.Result) {
	fmt.Fprint(w, recompressHelp)
	fmt.Fprint(w, growHelp)
	fmt.Fprint(w, shardHelp)
	fmt.Fprint(w, updateHelp)
	fmt.Fprint(w, "\nSizes accept k, m, g, t suffixes (powers of 1024).\n")
	if r.Has("long-help") {
		fmt.Fprintln(w)
		printLevels(w)
	}
}

// ParseConfig turns command line arguments into a Config.
func ParseConfig(args []string, stdin io.Reader, stdout io.Writer) (*Config, error) {
	r, err := cli.Parse(Program().AllOptions(), args)
	if err != nil {
		return nil, err
	}
	return configFrom(r, args, stdin)
}

// configFrom interprets parsed options, phase by phase: the level's
// defaults first, then what each option overrides.
func configFrom(p *cli.Result, args []string, stdin io.Reader) (*Config, error) {
	if len(p.Args) > 0 && !p.Has("merge") {
		return nil, cli.Unexpected(p.Args[0])
	}
	cfg := &Config{Build: dedup.DefaultOptions(), Args: append([]string{"mkdwarfs"}, args...)}
	recomp, grow := isRecompress(p), isGrow(p)
	for _, phase := range []func() error{
		func() error { return levelOptions(p, cfg) },
		func() error { return ioOptions(p, cfg, stdin, recomp, grow) },
		func() error { return workerOptions(p, cfg) },
		func() error { return scanOptions(p, cfg) },
		func() error { return segmenterOptions(p, cfg) },
		func() error { return compressionOptions(p, cfg) },
		func() error { return entryOptions(p, cfg) },
		func() error { return runtimeOptions(p, cfg, recomp) },
		func() error { return categorizeOptions(p, cfg) },
		func() error { return perCategoryOptions(p, cfg) },
		func() error { return runtimeCodecs(cfg) },
		func() error { return metadataPackOptions(p, cfg) },
		func() error { return shardOptions(p, cfg, recomp, grow) },
	} {
		if err := phase(); err != nil {
			return nil, err
		}
	}
	if grow {
		if err := growOptions(cfg, p); err != nil {
			return nil, err
		}
	} else if recomp {
		if err := recompressOptions(cfg, p); err != nil {
			return nil, err
		}
	}
	if err := signOptions(p, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// levelOptions applies SOURCE_DATE_EPOCH and the defaults of the
// compression level (-l).
func levelOptions(p *cli.Result, cfg *Config) error {
	o := &cfg.Build
	if now, err := sourceDateEpoch(os.Getenv("SOURCE_DATE_EPOCH")); err != nil {
		return err
	} else if now != nil {
		o.Now = now
	}
	lvl := 7
	if n, ok, err := p.Int("compress-level", 0, 9); err != nil {
		return err
	} else if ok {
		lvl = n
	}
	L := levels[lvl]
	cfg.level = lvl
	o.BlockSizeBits, o.WindowBits, o.WindowStep, o.Order, o.Lookback = L.blockBits, L.window, L.step, L.order, L.lookback
	cfg.Compression, cfg.SchemaComp, cfg.HistoryComp, cfg.MetaComp = L.block, L.schema, L.schema, L.meta
	return nil
}

// ioOptions takes the input (directory, list, archive or container
// image) and the output.
func ioOptions(p *cli.Result, cfg *Config, stdin io.Reader, recomp, grow bool) error {
	o := &cfg.Build
	var err error
	in, ok := p.Lookup("input")
	if !ok && !p.Has("merge") {
		if !p.Has("input-list") || recomp || grow {
			return cli.Missing("input")
		}
		// As the reference: the list's paths are relative to the
		// current directory.
		in = "."
	}
	o.Input = in
	if v, ok := p.Lookup("debug-filter"); ok {
		switch v {
		case "all", "excluded", "excluded-files", "files", "included", "included-files":
			cfg.DebugFilter = v
		default:
			return usagef("invalid --debug-filter mode %q", v)
		}
	}
	if cfg.Output, ok = p.Lookup("output"); !ok && cfg.DebugFilter == "" && !p.Has("shard-plan") {
		return cli.Missing("output")
	}
	cfg.Force = p.Has("force")
	if v, ok := p.Lookup("input-list"); ok {
		var r io.Reader = stdin
		if v != "-" {
			f, err := os.Open(v)
			if err != nil {
				return fmt.Errorf("opening input list: %w", err)
			}
			defer f.Close()
			r = f
		}
		list, err := dedup.ReadInputList(r)
		if err != nil {
			return err
		}
		if list == nil {
			list = []string{}
		}
		o.InputList = list
		if p.Has("filter") {
			return usagef("--input-list cannot be combined with --filter")
		}
	}
	if !recomp && !grow {
		if err := inputFormat(p, cfg, stdin); err != nil {
			return err
		}
	}
	if cfg.LogLevel, err = p.LogLevel(); err != nil {
		return err
	}
	return nil
}

// workerOptions sets the block size and the threads and memory of the build.
func workerOptions(p *cli.Result, cfg *Config) error {
	o := &cfg.Build
	if n, ok, err := p.Int("block-size-bits", 10, 30); err != nil {
		return err
	} else if ok {
		o.BlockSizeBits = n
	}
	cfg.Workers = 2
	if n, ok, err := p.Int("num-workers", 1, 1024); err != nil {
		return err
	} else if ok {
		cfg.Workers = n
	}
	cfg.Niceness = 5
	if n, ok, err := p.Int("compress-niceness", -20, 19); err != nil {
		return err
	} else if ok {
		cfg.Niceness = n
	}
	o.ScannerWorkers = cfg.Workers
	if n, ok, err := p.Int("num-scanner-workers", 1, 1024); err != nil {
		return err
	} else if ok {
		o.ScannerWorkers = n
	}
	o.OrderWorkers = cfg.Workers
	if n, ok, err := p.Int("num-segmenter-workers", 1, 1024); err != nil {
		return err
	} else if ok {
		o.OrderWorkers = n
	}
	if v, ok := p.Lookup("memory-limit"); ok && v != "auto" {
		n, err := cli.ParseSize(v)
		if err != nil || n <= 0 {
			return usagef("invalid --memory-limit %q", v)
		}
		cfg.MemLimit = n
	}
	return nil
}

// scanOptions sets what the scan takes and how it orders the files.
func scanOptions(p *cli.Result, cfg *Config) error {
	o := &cfg.Build
	if v, ok := lastPlain(p, "order"); ok {
		if err := parseOrder(o, v); err != nil {
			return err
		}
	}
	if v, ok := p.Lookup("max-similarity-size"); ok {
		n, err := cli.ParseSize(v)
		if err != nil {
			return usagef("invalid --max-similarity-size: %v", err)
		}
		o.MaxSimilaritySize = n
	}
	if v, ok := p.Lookup("file-hash"); ok {
		h, err := dedup.NewFileHash(v)
		if err != nil {
			return usagef("%v", err)
		}
		o.FileHash = h
	}
	cfg.Progress = "auto"
	if v, ok := p.Lookup("progress"); ok {
		switch v {
		case "ascii", "unicode", "simple", "none":
			cfg.Progress = v
		default:
			return usagef("invalid --progress %q", v)
		}
	}
	if p.Has("no-progress") {
		cfg.Progress = "none"
	}
	for _, f := range p.All("filter") {
		rs, err := dedup.ParseFilterRules(f, nil)
		if err != nil {
			return usagef("could not parse filter rule '%s': %v", f, err)
		}
		o.Filters = append(o.Filters, rs...)
	}
	o.RemoveEmpty = p.Has("remove-empty-dirs")
	o.ContinueOnErr = p.Has("continue-on-error")
	return nil
}

// segmenterOptions sets how the segmenter looks for repeated data.
func segmenterOptions(p *cli.Result, cfg *Config) error {
	o := &cfg.Build
	plainInt := func(name string, lo, hi int) (int, bool, error) {
		v, ok := lastPlain(p, name)
		if !ok {
			return 0, false, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return 0, false, cli.BadValue(name, v, fmt.Sprintf("expected a number from %d to %d", lo, hi))
		}
		return n, true, nil
	}
	if n, ok, err := plainInt("max-lookback-blocks", 0, 1<<16); err != nil {
		return err
	} else if ok {
		o.Lookback = n
	}
	if n, ok, err := plainInt("window-size", 0, 24); err != nil {
		return err
	} else if ok {
		o.WindowBits = n
		if n > 0 && n < 5 {
			return usagef("--window-size must be 0 or at least 5")
		}
	}
	if n, ok, err := plainInt("window-step", 0, 8); err != nil {
		return err
	} else if ok {
		o.WindowStep = n
	}
	if n, ok, err := plainInt("bloom-filter-size", 0, 10); err != nil {
		return err
	} else if ok {
		o.BloomSizeShift = n
	}
	return nil
}

// compressionOptions sets and checks the compression of each kind of section.
func compressionOptions(p *cli.Result, cfg *Config) error {
	for _, c := range []struct {
		name string
		dst  *string
	}{{"compression", &cfg.Compression}, {"schema-compression", &cfg.SchemaComp},
		{"metadata-compression", &cfg.MetaComp}, {"history-compression", &cfg.HistoryComp}} {
		v, ok := p.Lookup(c.name)
		if c.name == "compression" {
			v, ok = lastPlain(p, c.name)
		} else if ok && strings.Contains(v, "::") {
			return usagef("--%s: categories are not supported", c.name)
		}
		if ok {
			*c.dst = v
		}
		comp, err := encode.NewCompressor(*c.dst)
		if err != nil {
			return cli.BadValue(c.name, *c.dst, err.Error())
		}
		// flac and ricepp encode only data whose layout a categorizer
		// found: audio samples, image pixels.
		if _, pcm := comp.(encode.PCMCompressor); pcm {
			return cli.BadValue(c.name, *c.dst, "it needs the sample layout of a category (pcmaudio/waveform::"+*c.dst+")")
		}
		if _, layout := comp.(encode.MetadataCompressor); layout {
			return cli.BadValue(c.name, *c.dst, "it needs the pixel layout of a category (fits/image::"+*c.dst+")")
		}
	}
	return nil
}

// entryOptions sets what the image records of each entry and of its
// own making.
func entryOptions(p *cli.Result, cfg *Config) error {
	o := &cfg.Build
	var err error
	// An input list names its entries, so they are taken whatever their
	// type, as the reference does.
	o.WithDevices = p.Has("with-devices") || o.InputList != nil
	o.WithSpecials = p.Has("with-specials") || o.InputList != nil
	o.NoSparse = p.Has("no-sparse-files")
	if o.Hollow = p.Has("hollow"); o.Hollow && o.NoSparse {
		return usagef("--hollow cannot be combined with --no-sparse-files")
	}
	if v, ok := p.Lookup("header"); ok {
		h, err := os.ReadFile(v)
		if err != nil {
			return fmt.Errorf("reading header: %w", err)
		}
		cfg.Header = h
	}
	cfg.NoIndex = p.Has("no-section-index")
	cfg.NoHistory = p.Has("no-history")
	cfg.NoHistTime = p.Has("no-history-timestamps")
	cfg.NoHistArgs = p.Has("no-history-command-line")
	for _, c := range []struct {
		name string
		dst  **uint32
	}{{"set-owner", &o.SetOwner}, {"set-group", &o.SetGroup}} {
		if v, ok := p.Lookup(c.name); ok {
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return usagef("invalid --%s %q: must be a numeric id", c.name, v)
			}
			u := uint32(n)
			*c.dst = &u
		}
	}
	if v, ok := p.Lookup("chmod"); ok {
		if o.Chmod, err = dedup.ParseChmod(v, chmod.ProcessUmask()); err != nil {
			return usagef("%v", err)
		}
	}
	o.NoCreateTime = p.Has("no-create-timestamp")
	if v, ok := p.Lookup("set-time"); ok {
		var t int64
		if v == "now" {
			t = o.Now().Unix()
		} else {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return usagef("invalid --set-time %q (unix time or 'now')", v)
			}
			t = n
		}
		o.SetTime = &t
	}
	o.KeepAllTimes = p.Has("keep-all-times")
	if v, ok := p.Lookup("time-resolution"); ok {
		if o.TimeResolution, err = dedup.ParseTimeResolution(v); err != nil {
			return usagef("%v", err)
		}
	}
	o.NoHardlinks = p.Has("no-hardlink-table")
	o.NoCategoryNames = p.Has("no-category-names")
	o.NoCategoryMetadata = o.NoCategoryNames || p.Has("no-category-metadata")
	return nil
}

// metadataPackOptions sets how the metadata is packed (-P). For a build
// whose metadata is compressed (levels 7 to 9), auto, the default, packs
// all of it: such metadata is decompressed into memory at mount anyway,
// unpacking the tables there costs a few bytes per inode, and packed
// tables compress smaller (0.3 to 0.5 MB of 3.3 on a 345,000-file tree).
// Uncompressed metadata is read in place, so there auto stays the
// reference's: names and symlinks. Rewrites and appends keep the input's
// packing unless -P is given.
func metadataPackOptions(p *cli.Result, cfg *Config) error {
	v, given := p.Lookup("pack-metadata")
	if !given {
		if isRecompress(p) || isGrow(p) {
			return nil
		}
		v = "auto"
	}
	if !isNullSpec(cfg.MetaComp) {
		words := strings.Split(v, ",")
		for i, w := range words {
			if strings.TrimSpace(w) == "auto" {
				words[i] = "all"
			}
		}
		v = strings.Join(words, ",")
	}
	pk, err := dedup.ParsePack(v)
	if err != nil {
		return usagef("%v", err)
	}
	cfg.Build.Pack = &pk
	return nil
}

// isNullSpec reports whether a compression spec stores data as it is.
func isNullSpec(spec string) bool {
	algo, _, _ := strings.Cut(strings.TrimSpace(spec), ":")
	return strings.EqualFold(algo, "null")
}

// signOptions loads the --sign key, so that a bad key fails before the build.
func signOptions(p *cli.Result, cfg *Config) error {
	var err error
	if v, ok := p.Lookup("sign"); ok {
		if cfg.Output == "-" || cfg.Output == "" {
			return usagef("--sign needs an output file, not standard output")
		}
		// Loaded now, so that a bad key fails before the build.
		if cfg.Signer, err = imagesig.LoadSigner(v); err != nil {
			return err
		}
	}
	return nil
}

// signOutput signs the written image when --sign asked for it.
func signOutput(cfg *Config, sums map[[32]byte][32]byte, stderr io.Writer) error {
	if cfg.Signer == nil {
		return nil
	}
	sig := cfg.Output + ".sig"
	if err := imagesig.SignPath(cfg.Output, sig, cfg.Signer, sums); err != nil {
		return fmt.Errorf("the image was written, but signing it failed: %w", err)
	}
	if cfg.LogLevel >= logInfo {
		fmt.Fprintf(stderr, "signed %s with %s key %s: %s\n", cfg.Output, cfg.Signer.PublicKey().Type(), ssh.FingerprintSHA256(cfg.Signer.PublicKey()), sig)
	}
	return nil
}

// Result summarises a successful run.
type Result = writer.BuildResult

// Run builds the image cfg describes (stdout is the output "-").
func Run(ctx context.Context, cfg *Config, stdout io.Writer) (*Result, error) {
	return build(ctx, cfg, stdout, nil)
}

func build(ctx context.Context, cfg *Config, stdout io.Writer, progress func(writer.Progress)) (*Result, error) {
	if cfg.Append != nil || cfg.Merge != nil || cfg.Update != nil {
		return runGrow(ctx, cfg, stdout, progress)
	}
	t := cfg.target(stdout)
	t.Progress = progress
	scan := cfg.Build
	if cfg.TarInput != "" {
		var r io.Reader = cfg.Stdin
		name := "standard input"
		if cfg.TarInput != "-" {
			f, err := os.Open(cfg.TarInput)
			if err != nil {
				return nil, fmt.Errorf("opening the input: %w", err)
			}
			defer f.Close()
			r, name = f, cfg.TarInput
		}
		src := tarinput.New(name, r, cfg.TarOptions)
		defer src.Close()
		scan.Tree = src
	}
	var oci *ociinput.Image
	if cfg.OCIInput != "" {
		opt := cfg.OCIOptions
		opt.Tar = cfg.TarOptions
		if opt.Transport == nil && strings.HasPrefix(cfg.OCIInput, "docker://") {
			tr := httpsource.NewTransport(cfg.Workers)
			defer tr.CloseIdleConnections()
			opt.Transport = tr
		}
		var err error
		if oci, err = ociinput.Open(ctx, cfg.OCIInput, opt); err != nil {
			return nil, err
		}
		defer oci.Close()
		scan.Tree = oci.Source()
	}
	if cfg.S3Input != "" {
		src := s3Tree(cfg)
		defer src.Close()
		scan.Tree = src
		if v := cfg.Build.Verbosef; v != nil {
			defer func() { v("fetched %d bytes of objects from %s", src.Fetched(), cfg.S3Input) }()
		}
	}
	// The scan's records (an entry and an inode per file) stay live
	// while its garbage grows in proportion to them. Once the tree is
	// scanned, what the heap gains is block buffers that die when
	// written. The metadata's tables then join the scan's records. Each
	// step collects more often than the last, and first returns what the
	// last one left.
	restore := collectWith(scanGCPercent)
	phase := func(percent int) func() {
		return func() {
			restore()
			restore = collectWith(percent)
			debug.FreeOSMemory()
		}
	}
	scan.BeforeSegmenting = phase(segmentGCPercent)
	scan.BeforeMetadata = phase(metadataGCPercent)
	defer func() { restore() }()
	if cfg.ShardPlan {
		return nil, printPlan(ctx, cfg, scan, stdout)
	}
	queue := cfg.MemLimit
	var cancel context.CancelCauseFunc
	if cfg.MemLimit > 0 {
		plan, err := planMemory(cfg.MemLimit, scan.BlockSizeBits, t.Workers, scan.Lookback, t.BlockCompression)
		if err != nil {
			return nil, err
		}
		queue = plan.queue
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		defer guardMemory(plan, cancel)()
	}
	res, err := writer.Build(ctx, writer.BuildOptions{Target: t, Scan: scan, MemoryLimit: queue, Header: cfg.Header, Shard: cfg.Shard})
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, ErrMemoryLimit) {
		return res, cause
	}
	if err == nil && oci != nil && cfg.OCIConfig != "" {
		if werr := os.WriteFile(cfg.OCIConfig, oci.Config(), 0o644); werr != nil {
			return res, fmt.Errorf("the image was written, but not the container image config: %w", werr)
		}
	}
	return res, err
}

// collectOften lowers GOGC to 25 while block data streams through the
// heap and returns what puts the previous setting back. What the heap
// gains then is block buffers that die once written, while the default
// GOGC=100 lets them pile up to the size of all that is live: a
// rewrite's 1 GiB bench peak fell by a quarter, a 4 GiB -l9 build's by
// 8%, at no measurable CPU cost (a collection marks only the live part).
// A GOGC set by the user wins.
func collectOften() (restore func()) { return collectWith(segmentGCPercent) }

// The GOGC of a build's steps: the scan, the segmenting (collectOften)
// and the metadata. A scan's collections cost in proportion to 1/GOGC.
const (
	scanGCPercent     = 75
	segmentGCPercent  = 25
	metadataGCPercent = 10
)

// collectWith sets GOGC to percent, unless the user set it, and returns
// what puts the previous setting back.
func collectWith(percent int) (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	prev := debug.SetGCPercent(percent)
	return func() { debug.SetGCPercent(prev) }
}

// inputFormat sets cfg up for a tar input (--input-format).
func inputFormat(p *cli.Result, cfg *Config, stdin io.Reader) error {
	in := cfg.Build.Input
	format, _ := p.Lookup("input-format")
	if v, ok := p.Lookup("tmpdir"); ok {
		cfg.TarOptions.TempDir = v
	}
	if ociinput.Is(in) && (format == "" || format == "auto") {
		if cfg.Build.InputList != nil {
			return usagef("--input-list cannot select from a container image")
		}
		if cfg.DebugFilter != "" {
			return usagef("--debug-filter needs a directory input")
		}
		cfg.OCIInput = in
		cfg.OCIOptions.Platform, _ = p.Lookup("platform")
		cfg.OCIConfig, _ = p.Lookup("oci-config")
		return nil
	}
	for _, o := range []string{"platform", "oci-config"} {
		if p.Has(o) {
			return usagef("--%s needs a container image input (oci:, docker-archive:, docker://)", o)
		}
	}
	if s3source.IsURL(in) && (format == "" || format == "auto") {
		if cfg.Build.InputList != nil {
			return usagef("--input-list cannot select from an S3 input")
		}
		if cfg.DebugFilter != "" {
			return usagef("--debug-filter needs a directory input")
		}
		if _, _, err := s3source.SplitURL(in); err != nil {
			return &cli.UsageError{Msg: err.Error()}
		}
		cfg.S3Input = in
		return nil
	}
	switch format {
	case "", "auto":
		if in == "-" {
			format = "tar"
		} else if st, err := os.Stat(in); err == nil && !st.IsDir() {
			isTar, err := tarinput.Detect(in)
			if err != nil {
				return fmt.Errorf("input %s: %w", in, err)
			}
			if !isTar {
				return fmt.Errorf("input %s is neither a directory nor a tar archive", in)
			}
			format = "tar"
		}
	case "dir", "tar":
	default:
		return usagef("invalid --input-format %q (auto, dir, tar)", format)
	}
	if format != "tar" {
		return nil
	}
	if cfg.Build.InputList != nil {
		return usagef("--input-list cannot select from a tar input")
	}
	if cfg.DebugFilter != "" {
		return usagef("--debug-filter needs a directory input")
	}
	cfg.TarInput, cfg.Stdin = in, stdin
	return nil
}

// parseOrder applies an --order value: a mode, and for nilsimsa and
// explicit the reference's :NAME=VALUE options.
func parseOrder(o *dedup.Options, v string) error {
	if strings.Contains(v, "::") {
		return usagef("--order: categories are not supported")
	}
	mode, rest, _ := strings.Cut(v, ":")
	ord, ok := dedup.ParseOrder(mode)
	if !ok {
		return usagef("invalid --order %q (none, path, revpath, similarity, nilsimsa[:max-children=N][:max-cluster-size=N][:families=0|1], explicit:file=FILE)", v)
	}
	o.Order = ord
	opts := map[string]string{}
	if rest != "" {
		for _, kv := range strings.Split(rest, ":") {
			k, val, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return usagef("invalid --order %q: option %q is not NAME=VALUE", v, kv)
			}
			opts[k] = val
		}
	}
	take := func(name string) (string, bool) {
		val, ok := opts[name]
		delete(opts, name)
		return val, ok
	}
	switch ord {
	case dedup.OrderNilsimsa:
		for _, c := range []struct {
			name string
			dst  *int
		}{{"max-children", &o.Nilsimsa.MaxChildren}, {"max-cluster-size", &o.Nilsimsa.MaxClusterSize}} {
			val, ok := take(c.name)
			if !ok {
				continue
			}
			n, err := cli.ParseSize(val)
			if err != nil || n < 1 || n > 1<<31-1 {
				return usagef("invalid --order %q: %s must be a positive number", v, c.name)
			}
			*c.dst = int(n)
		}
		if val, ok := take("families"); ok {
			switch val {
			case "0":
				o.Nilsimsa.NoFamilies = true
			case "1":
				o.Nilsimsa.NoFamilies = false
			default:
				return usagef("invalid --order %q: families must be 0 or 1", v)
			}
		}
	case dedup.OrderExplicit:
		file, ok := take("file")
		if !ok || file == "" {
			return usagef("invalid --order %q: explicit needs file=FILE", v)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("reading the explicit order file: %w", err)
		}
		o.ExplicitOrder, err = dedup.ReadInputList(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
	}
	for k := range opts {
		if ord == dedup.OrderNilsimsa || ord == dedup.OrderExplicit {
			return usagef("invalid --order %q: unknown option %q", v, k)
		}
		return usagef("invalid --order %q: %s takes no options", v, mode)
	}
	return nil
}

// setLoggers routes warnings and the --log-level verbose, debug and trace
// notes to w, and notes the settings in effect.
func setLoggers(cfg *Config, w io.Writer) {
	o := &cfg.Build
	if o.Log == nil && cfg.LogLevel >= logWarn {
		o.Log = w
	}
	logf := func(tag string) func(string, ...any) {
		return func(format string, args ...any) {
			fmt.Fprintf(w, "%s %s %s\n", tag, time.Now().Format("15:04:05.000000"), fmt.Sprintf(format, args...))
		}
	}
	if cfg.LogLevel >= logVerbose {
		o.Verbosef = logf("V")
	}
	if cfg.LogLevel >= logDebug {
		o.Debugf = logf("D")
	}
	if cfg.LogLevel >= logTrace {
		o.Tracef = logf("T")
	}
	if o.Log != nil {
		for _, w := range cfg.warnings {
			fmt.Fprintln(o.Log, "warning: "+w)
		}
	}
	if o.Hollow && o.Log != nil {
		fmt.Fprintln(o.Log, "warning: creating a hollow image: no file data is stored, every file reads as zeros")
	}
	if o.Verbosef != nil {
		for _, n := range cfg.notes {
			o.Verbosef("%s", n)
		}
		window := "off"
		if o.WindowBits > 0 && o.Lookback > 0 {
			window = fmt.Sprintf("%d-byte window at %d-byte steps over %d block(s)", 1<<o.WindowBits, max(1, (1<<o.WindowBits)>>o.WindowStep), o.Lookback)
		}
		o.Verbosef("block size %d bytes; segment search: %s; order: %s; block compression %s", 1<<o.BlockSizeBits, window, o.Order, cfg.Compression)
		o.Verbosef("%d scanner workers, %d ordering workers, %d compression workers at niceness +%d", o.ScannerWorkers, max(o.OrderWorkers, 1), cfg.Workers, max(cfg.Niceness, 0))
	}
}
