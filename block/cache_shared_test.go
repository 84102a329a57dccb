package block

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
)

// fill returns a loader whose block b of cache id is 100+b bytes of id.
func fill(id byte) LoadFunc {
	return copying(func(ctx context.Context, b int) ([]byte, error) {
		return bytes.Repeat([]byte{id}, 100+b), nil
	})
}

// TestSharedCacheBound: caches of one SharedCache evict each other's
// least recently used blocks, their blocks together stay within the one
// capacity, and closing one drops only its blocks.
func TestSharedCacheBound(t *testing.T) {
	s := NewSharedCache(CacheOptions{Capacity: 350, Workers: 2})
	a, b := s.NewCache(fill('a')), s.NewCache(fill('b'))
	ctx := context.Background()
	for _, step := range []struct {
		c     *Cache
		block int
		id    byte
	}{{a, 0, 'a'}, {b, 0, 'b'}, {a, 1, 'a'}} { // 100+100+101
		d, err := get(step.c, ctx, step.block)
		if err != nil || len(d) != 100+step.block || d[0] != step.id {
			t.Fatalf("block %d of %c: %v %q", step.block, step.id, err, d)
		}
	}
	get(a, ctx, 0) // LRU order now b0, a1, a0
	get(b, ctx, 2) // 102 bytes: evicts b0, the least recently used
	if b.Contains(0) || !a.Contains(0) || !a.Contains(1) || !b.Contains(2) {
		t.Errorf("after eviction: a0=%v a1=%v b0=%v b2=%v", a.Contains(0), a.Contains(1), b.Contains(0), b.Contains(2))
	}
	get(b, ctx, 3) // 103: evicts a1, the least recently used
	if a.Contains(1) || !a.Contains(0) || !b.Contains(3) {
		t.Errorf("cross eviction: a0=%v a1=%v b3=%v", a.Contains(0), a.Contains(1), b.Contains(3))
	}
	st := s.Stats()
	if st.CurrentBytes != 100+102+103 || st.PeakBytes > 350 || st.Capacity != 350 {
		t.Errorf("shared stats %+v", st)
	}
	if sa, sb := a.Stats(), b.Stats(); sa.CurrentBytes != 100 || sb.CurrentBytes != 205 ||
		sa.Evictions != 1 || sb.Evictions != 1 || sa.Hits != 1 || sb.Decoded != 3 ||
		st.Hits != 1 || st.Decoded != 5 || st.Evictions != 2 {
		t.Errorf("per cache stats a %+v b %+v total %+v", sa, sb, st)
	}
	if s.Caches() != 2 || a.Workers() != 2 || a.Shared() != s {
		t.Errorf("caches %d workers %d", s.Caches(), a.Workers())
	}
	b.Close()
	if _, err := get(b, ctx, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("get after close: %v", err)
	}
	if d, err := get(a, ctx, 0); err != nil || d[0] != 'a' {
		t.Errorf("other cache after close: %v", err)
	}
	if st := s.Stats(); st.CurrentBytes != 100 || s.Caches() != 1 || st.Decoded != 5 {
		t.Errorf("after close %+v, %d caches", st, s.Caches())
	}
	// A lower capacity evicts at once.
	s.SetCapacity(50)
	if st := s.Stats(); st.CurrentBytes != 0 || st.Capacity != 50 || a.Stats().Capacity != 50 {
		t.Errorf("after SetCapacity: %+v", st)
	}
	a.Close()
}

// TestSharedCacheConcurrent: readers of several caches on one budget,
// while caches come and go, never see an error or another cache's bytes,
// and the budget holds throughout (run with -race).
func TestSharedCacheConcurrent(t *testing.T) {
	const readers, workers, maxBlock = 8, 3, 150
	const capacity = (readers + workers) * maxBlock
	s := NewSharedCache(CacheOptions{Capacity: capacity, Workers: workers})
	ids := []byte("abcd")
	caches := make([]*Cache, len(ids))
	for i, id := range ids {
		caches[i] = s.NewCache(fill(id))
	}
	var wg sync.WaitGroup
	for g := range readers {
		wg.Go(func() {
			i := g % len(caches)
			for n := range 300 {
				b := (n*7 + g) % 40
				d, err := get(caches[i], context.Background(), b)
				if err != nil || len(d) != 100+b || d[0] != ids[i] || d[len(d)-1] != ids[i] {
					t.Errorf("cache %c block %d: %v", ids[i], b, err)
					return
				}
				if n%50 == 0 {
					caches[i].Prefetch(b + 1)
				}
			}
		})
	}
	// Caches of images added and removed meanwhile.
	wg.Go(func() {
		for n := range 50 {
			c := s.NewCache(fill('x'))
			for b := range 5 {
				if d, err := get(c, context.Background(), b+n%3); err != nil || d[0] != 'x' {
					t.Errorf("transient cache: %v", err)
				}
			}
			c.Close()
		}
	})
	wg.Wait()
	st := s.Stats()
	if st.PeakBytes > capacity || st.CurrentBytes > capacity || st.Evictions == 0 {
		t.Errorf("budget exceeded or nothing evicted: %+v", st)
	}
	for _, c := range caches {
		c.Close()
	}
	if st := s.Stats(); st.CurrentBytes != 0 || st.LoadingBytes != 0 || st.PinnedBytes != 0 || s.Caches() != 0 {
		t.Errorf("after closing all: %+v", st)
	}
}

// BenchmarkCacheGetHit measures a Get and Release of a cached block by
// parallel readers: the path every read of a cached block takes.
func BenchmarkCacheGetHit(b *testing.B) {
	c := NewCache(fill('a'), CacheOptions{Capacity: 1 << 20, Workers: 2})
	defer c.Close()
	for i := range 16 {
		if _, err := get(c, context.Background(), i); err != nil {
			b.Fatal(err)
		}
	}
	b.RunParallel(func(pb *testing.PB) {
		var p Pin
		i := 0
		for pb.Next() {
			if err := c.Get(context.Background(), i%16, &p); err != nil {
				b.Fatal(err)
			}
			p.Release()
			i++
		}
	})
}
