package mountopts

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/cli"
)

func TestDefaults(t *testing.T) {
	o := Defaults()
	if o.CacheSize != 512<<20 || o.Workers != 2 || o.Mlock != MlockNone || o.ImageOffset != -1 ||
		o.NoCacheFiles || o.CacheImage || o.Tidy != fusefs.TidyNone || o.SeqDetector != 4 || o.DecRatio != 0.8 {
		t.Errorf("defaults: %+v", o)
	}
}

// TestDriverDefaults checks that dwarfs without -o mounts with the
// defaults of fusefs.MountOptions, and that the -o spellings of "off" set
// the fields that say so.
func TestDriverDefaults(t *testing.T) {
	got := Defaults().MountOptions
	want := fusefs.MountOptions{
		BlockSize: fusefs.DefaultBlockSize, SeqDetector: fusefs.DefaultSeqDetector,
		TidyInterval: fusefs.DefaultTidyInterval, TidyMaxAge: fusefs.DefaultTidyMaxAge,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("dwarfs defaults give %+v, want %+v", got, want)
	}
	o := Defaults()
	if err := o.ParseString("seq_detector=0,no_cache_files,tidy_strategy=swap,tidy_interval=1s"); err != nil {
		t.Fatal(err)
	}
	if m := o.MountOptions; m.SeqDetector >= 0 || !m.NoCacheFiles || m.Tidy != fusefs.TidySwap || m.TidyInterval != time.Second {
		t.Errorf("seq_detector=0,no_cache_files,tidy_strategy=swap,tidy_interval=1s gives %+v", m)
	}
}

func TestParse(t *testing.T) {
	o := Defaults()
	err := o.ParseString("cachesize=64m,workers=4,mlock=try,decratio=0.5,offset=1024,imagesize=2g," +
		"enable_nlink,readonly,cache_image,no_cache_files,tidy_strategy=time,tidy_interval=2s," +
		"tidy_max_age=90,seq_detector=0,uid=7,gid=8,preload_category=pcmaudio/waveform,preload_all," +
		"allow_other,default_permissions,perfmon,readahead=128k,blocksize=1m,nosuid,rw,noauto,_netdev,x-systemd.requires=foo")
	if err != nil {
		t.Fatal(err)
	}
	want := Options{
		MountOptions: fusefs.MountOptions{
			BlockSize: 1 << 20, Readahead: 128 << 10, EnableNlink: true, ReadOnly: true,
			NoCacheFiles: true, Tidy: fusefs.TidyTime, TidyInterval: 2 * time.Second,
			TidyMaxAge: 90 * time.Second, SeqDetector: -1, Perfmon: true,
			AllowOther: true, DefaultPermissions: true,
		},
		CacheSize: 64 << 20, Workers: 4, Mlock: MlockTry,
		DecRatio: 0.5, ImageOffset: 1024, ImageSize: 2 << 30,
		CacheImage: true, PreloadAll: true, BlockAllocator: "malloc",
	}
	if o.UID == nil || *o.UID != 7 || o.GID == nil || *o.GID != 8 {
		t.Errorf("uid/gid: %v %v", o.UID, o.GID)
	}
	if len(o.PreloadCategory) != 1 || o.PreloadCategory[0] != "pcmaudio/waveform" {
		t.Errorf("preload_category: %v", o.PreloadCategory)
	}
	if len(o.KernelFlags) != 1 || o.KernelFlags[0] != "nosuid" {
		t.Errorf("kernel flags: %v", o.KernelFlags)
	}
	o.UID, o.GID, o.PreloadCategory, o.KernelFlags = nil, nil, nil, nil
	if !reflect.DeepEqual(o, want) {
		t.Errorf("got  %+v\nwant %+v", o, want)
	}
}

// TestParseDropIn covers options the reference driver (and libfuse)
// accept beyond the basic set.
func TestParseDropIn(t *testing.T) {
	o := Defaults()
	if o.CaseInsensitive || o.CacheSparse || o.AutoUnmount || o.MaxThreads != 0 || o.BlockAllocator != "malloc" {
		t.Errorf("defaults: %+v", o)
	}
	err := o.ParseString("case_insensitive,cache_sparse,analysis_file=/tmp/x\\,y.prof,block_allocator=mmap,max_threads=3,auto_unmount")
	if err != nil {
		t.Fatal(err)
	}
	// libfuse's thread pool tuning: accepted, no effect.
	before := o
	for _, s := range []string{"clone_fd", "max_idle_threads=0", "max_idle_threads=64", "max_idle_threads=-1"} {
		if err := o.ParseString(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	if !reflect.DeepEqual(o, before) {
		t.Errorf("clone_fd, max_idle_threads changed the options: %+v", o)
	}
	if !o.CaseInsensitive || !o.CacheSparse || o.AnalysisFile != "/tmp/x,y.prof" || o.BlockAllocator != "mmap" || o.MaxThreads != 3 || !o.AutoUnmount {
		t.Errorf("got %+v", o)
	}
	if o.NoXattr {
		t.Error("no_xattr set by default")
	}
	if err := o.ParseString("no_xattr"); err != nil || !o.NoXattr {
		t.Errorf("no_xattr: %v, NoXattr %v", err, o.NoXattr)
	}
	if err := o.ParseString("no_xattr=1"); err == nil {
		t.Error("no_xattr=1 accepted")
	}
	if err := o.ParseString("no_cache_sparse"); err != nil || o.CacheSparse {
		t.Errorf("no_cache_sparse: %v %v", err, o.CacheSparse)
	}
	for _, c := range []struct{ in, want string }{
		{"block_allocator=classic", `invalid value for option block_allocator: no such block allocator: "classic" (malloc, mmap)`},
		{"block_allocator", "invalid value for option block_allocator: missing value"},
		{"max_threads=0", "invalid value for option max_threads: must be at least 1"},
		{"max_threads=100001", "invalid value for option max_threads: must be at most 100000"},
		{"analysis_file=", "invalid value for option analysis_file: missing value"},
		{"case_insensitive=1", "invalid value for option case_insensitive: takes no value"},
		{"auto_unmount=yes", "invalid value for option auto_unmount: takes no value"},
		{"clone_fd=1", "invalid value for option clone_fd: takes no value"},
		{"max_idle_threads", "invalid value for option max_idle_threads: missing value"},
		{"max_idle_threads=abc", `invalid value for option max_idle_threads: not a number: strconv.Atoi: parsing "abc": invalid syntax`},
		{"max_idle_threads=-2", "invalid value for option max_idle_threads: must be -1 (no limit) or more"},
	} {
		o := Defaults()
		if err := o.ParseString(c.in); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.in, err, c.want)
		}
	}
}

func TestParseRemote(t *testing.T) {
	o := Defaults()
	err := o.ParseString("remote_workers=8,remote_timeout=30s,remote_attempts=3,disk_cache=/var/cache/d,disk_cache_size=2g," +
		"s3_endpoint=http://127.0.0.1:8333,s3_region=eu-west-1,s3_path_style")
	if err != nil {
		t.Fatal(err)
	}
	if o.RemoteWorkers != 8 || o.RemoteTimeout != 30*time.Second || o.RemoteAttempts != 3 || o.DiskCache != "/var/cache/d" ||
		o.DiskCacheSize != 2<<30 || o.S3Endpoint != "http://127.0.0.1:8333" || o.S3Region != "eu-west-1" || !o.S3PathStyle {
		t.Errorf("got %+v", o)
	}
	for _, bad := range []string{"remote_workers=0", "remote_timeout=-1s", "disk_cache_size=12q", "disk_cache", "s3_path_style=1"} {
		o := Defaults()
		if err := o.ParseString(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ in, name string }{
		{"bogus", "bogus"},
		{"bogus=1", "bogus"},
		{"cachesize=", "cachesize"},
		{"cachesize=12x", "cachesize"},
		{"cachesize", "cachesize"},
		{"workers=0", "workers"},
		{"mlock=maybe", "mlock"},
		{"tidy_strategy=never", "tidy_strategy"},
		{"tidy_interval=soon", "tidy_interval"},
		{"decratio=2", "decratio"},
		{"offset=-5", "offset"},
		{"enable_nlink=1", "enable_nlink"},
		{"uid=-1", "uid"},
		{"seq_detector=x", "seq_detector"},
	} {
		o := Defaults()
		err := o.ParseString(c.in)
		var oe *Error
		if !errors.As(err, &oe) || oe.Option != c.name || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%q: %v, want error naming %q", c.in, err, c.name)
		}
	}
	o := Defaults()
	if err := o.ParseString("bogus"); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown option error does not wrap ErrUnknown: %v", err)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "512": 512, "4k": 4096, "4K": 4096, "64m": 64 << 20, "2g": 2 << 30, "1t": 1 << 40, "8KiB": 8192, "3MB": 3 << 20} {
		if got, err := cli.ParseSize(in); err != nil || got != want {
			t.Errorf("cli.ParseSize(%q) = %d %v, want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "k", "-1", "1x", "99999999999t"} {
		if _, err := cli.ParseSize(in); err == nil {
			t.Errorf("cli.ParseSize(%q): no error", in)
		}
	}
}

func TestSplit(t *testing.T) {
	got := Split(`a,b=1,,c=x\,y`)
	if strings.Join(got, "|") != "a|b=1|c=x,y" {
		t.Errorf("Split: %q", got)
	}
}

// TestTableDrivesAll checks that the help, the completion words and the
// parser agree on the options: every word is one the parser knows, with a
// value where the word says so, and the help names every option.
func TestTableDrivesAll(t *testing.T) {
	var help strings.Builder
	for _, it := range Items() {
		if it.Term == "" || it.Text == "" {
			t.Errorf("empty help item %+v", it)
		}
		help.WriteString(it.Term + ", ")
	}
	for _, w := range Words() {
		name, hasVal := strings.CutSuffix(w, "=")
		if !strings.Contains(help.String(), name) {
			t.Errorf("%s is not in the help", name)
		}
		o := Defaults()
		err := o.ParseString(name)
		var oe *Error
		switch {
		case errors.Is(err, ErrUnknown):
			t.Errorf("completion word %s: %v", w, err)
		case hasVal && (!errors.As(err, &oe) || !strings.HasSuffix(err.Error(), "missing value")):
			t.Errorf("%s without a value: %v, want missing value", name, err)
		case !hasVal && err != nil:
			t.Errorf("%s: %v", name, err)
		}
	}
}
