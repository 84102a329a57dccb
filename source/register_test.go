package source_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/godwarfs/godwarfs/source"
)

// memObjects are the objects of the memtest:// backend, by name.
var memObjects = map[string][]byte{}

// memFetcher reads a memtest:// object; it is what a backend outside
// this package implements.
type memFetcher struct {
	name      string
	companion bool
	shared    *atomic.Int64 // counts fetchers made by Share
}

func (m *memFetcher) Name() string { return m.name }
func (m *memFetcher) Key() string  { return m.name }
func (m *memFetcher) Close()       {}

func (m *memFetcher) Stat(context.Context) (source.Version, error) {
	b, ok := memObjects[m.name]
	if !ok {
		return source.Version{}, errors.New("no such object")
	}
	if strings.HasSuffix(m.name, ".sig") && !m.companion {
		return source.Version{}, errors.New("a companion read as an image")
	}
	return source.Version{Size: int64(len(b)), ETag: `"v1"`}, nil
}

func (m *memFetcher) Get(_ context.Context, p []byte, off int64, pin source.Version, got *atomic.Int64) error {
	b := memObjects[m.name]
	if int64(len(b)) != pin.Size {
		return fmt.Errorf("%w (size %d, opened %d)", source.ErrChanged, len(b), pin.Size)
	}
	got.Add(int64(copy(p, b[off:])))
	return nil
}

func (m *memFetcher) Share(name string) source.Fetcher {
	if !strings.HasPrefix(name, "memtest://") {
		return nil
	}
	m.shared.Add(1)
	return &memFetcher{name: name, shared: m.shared}
}

func (m *memFetcher) ReadCompanion() { m.companion = true }

var memShared atomic.Int64

func init() {
	source.Register("memtest", source.Backend{
		Open: func(_ context.Context, name string, o source.Options) (source.Fetcher, error) {
			if o.Workers <= 0 {
				return nil, errors.New("options without defaults")
			}
			return &memFetcher{name: name, shared: &memShared}, nil
		},
		Sibling: func(name, suffix string) (string, error) { return name + "/companion" + suffix, nil },
	})
}

// TestRegisteredBackend opens an image through a backend registered from
// outside the package: the engine reads it through the Fetcher, Sibling
// asks the backend, and ReadSmall shares the image's fetcher and tells it
// that it reads a companion.
func TestRegisteredBackend(t *testing.T) {
	img := goodImages(t)[0]
	b, err := os.ReadFile(img.Path)
	if err != nil {
		t.Fatal(err)
	}
	memObjects["memtest://images/a.dwarfs"] = b
	memObjects["memtest://images/a.dwarfs/companion.sig"] = []byte("signature")

	if !source.IsRemote("MEMTEST://images/a.dwarfs") || source.IsRemote("memtest2://images/a.dwarfs") {
		t.Error("IsRemote does not follow the registered schemes")
	}
	src := openSource(t, "memtest://images/a.dwarfs", source.Options{})
	if src.Size() != int64(len(b)) || source.FetcherOf(src).Name() != "memtest://images/a.dwarfs" {
		t.Fatalf("size %d, fetcher %v", src.Size(), source.FetcherOf(src))
	}
	checkContent(t, openImage(t, src), img.Manifest)
	if st := src.Stats(); st.BytesFetched == 0 || st.Requests == 0 {
		t.Errorf("stats %+v count no fetch", st)
	}

	sig := source.Sibling("memtest://images/a.dwarfs", ".sig")
	if sig != "memtest://images/a.dwarfs/companion.sig" {
		t.Fatalf("Sibling = %q", sig)
	}
	before := memShared.Load()
	got, err := source.ReadSmall(context.Background(), sig, 100, source.Options{}, src)
	if err != nil || string(got) != "signature" {
		t.Fatalf("ReadSmall: %q, %v", got, err)
	}
	if memShared.Load() != before+1 {
		t.Error("ReadSmall did not share the image's fetcher")
	}
	if _, err := source.ReadSmall(context.Background(), "memtest://none", 100, source.Options{}, nil); err == nil || !strings.Contains(err.Error(), "memtest://none") || !strings.Contains(err.Error(), "no such object") {
		t.Errorf("ReadSmall of a missing object: %v", err)
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "memtest") {
			t.Errorf("second Register: recovered %v, want a panic naming the scheme", r)
		}
	}()
	source.Register("MemTest", source.Backend{Open: func(context.Context, string, source.Options) (source.Fetcher, error) { return nil, nil }})
}
