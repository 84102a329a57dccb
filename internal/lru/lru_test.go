package lru

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

// keys returns the cache's keys, most recently used first.
func keys[K comparable, V any](c *LRU[K, V]) []K {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ks []K
	for el := c.order.Front(); el != nil; el = el.Next() {
		ks = append(ks, el.Value.(*entry[K, V]).key)
	}
	return ks
}

func TestLRU(t *testing.T) {
	type op struct {
		get  bool // Get k, else Add k at cost
		k    string
		cost int64
		want string // value Get finds ("" absent) or Add returns
	}
	tests := []struct {
		name     string
		budget   int64
		ops      []op
		wantKeys []string
		wantCost int64
	}{
		{
			name:     "fills to the budget exactly",
			budget:   10,
			ops:      []op{{k: "a", cost: 4, want: "a1"}, {k: "b", cost: 6, want: "b1"}},
			wantKeys: []string{"b", "a"}, wantCost: 10,
		},
		{
			name:     "evicts the least recently added",
			budget:   10,
			ops:      []op{{k: "a", cost: 4, want: "a1"}, {k: "b", cost: 4, want: "b1"}, {k: "c", cost: 4, want: "c1"}},
			wantKeys: []string{"c", "b"}, wantCost: 8,
		},
		{
			name:   "a Get makes an entry recent",
			budget: 10,
			ops: []op{{k: "a", cost: 4, want: "a1"}, {k: "b", cost: 4, want: "b1"},
				{get: true, k: "a", want: "a1"}, {k: "c", cost: 4, want: "c1"}, {get: true, k: "b"}},
			wantKeys: []string{"c", "a"}, wantCost: 8,
		},
		{
			name:     "evicts as many as it takes",
			budget:   10,
			ops:      []op{{k: "a", cost: 3, want: "a1"}, {k: "b", cost: 3, want: "b1"}, {k: "c", cost: 3, want: "c1"}, {k: "d", cost: 9, want: "d1"}},
			wantKeys: []string{"d"}, wantCost: 9,
		},
		{
			name:     "a present key keeps its value",
			budget:   10,
			ops:      []op{{k: "a", cost: 4, want: "a1"}, {k: "b", cost: 4, want: "b1"}, {k: "a", cost: 5, want: "a1"}},
			wantKeys: []string{"a", "b"}, wantCost: 8,
		},
		{
			name:     "one over the budget is returned, not kept",
			budget:   10,
			ops:      []op{{k: "a", cost: 4, want: "a1"}, {k: "big", cost: 11, want: "big1"}, {get: true, k: "big"}, {get: true, k: "a", want: "a1"}},
			wantKeys: []string{"a"}, wantCost: 4,
		},
		{
			name:     "a zero budget keeps free entries only",
			budget:   0,
			ops:      []op{{k: "a", cost: 1, want: "a1"}, {k: "z", cost: 0, want: "z1"}, {get: true, k: "a"}, {get: true, k: "z", want: "z1"}},
			wantKeys: []string{"z"}, wantCost: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New[string, string](tt.budget)
			for i, o := range tt.ops {
				if o.get {
					got, ok := c.Get(o.k)
					if ok != (o.want != "") || got != o.want {
						t.Errorf("op %d: Get(%q) = %q, %v; want %q", i, o.k, got, ok, o.want)
					}
					continue
				}
				if got := c.Add(o.k, o.k+"1", o.cost); got != o.want {
					t.Errorf("op %d: Add(%q) = %q, want %q", i, o.k, got, o.want)
				}
			}
			if ks := keys(c); !slices.Equal(ks, tt.wantKeys) {
				t.Errorf("keys %q, want %q", ks, tt.wantKeys)
			}
			if c.Len() != len(tt.wantKeys) || c.Cost() != tt.wantCost {
				t.Errorf("Len %d, Cost %d; want %d, %d", c.Len(), c.Cost(), len(tt.wantKeys), tt.wantCost)
			}
		})
	}
}

// TestLRUConcurrent: callers racing on the same keys find the right
// values, and the budget holds throughout (run with -race).
func TestLRUConcurrent(t *testing.T) {
	const budget = 50
	c := New[int, *string](budget)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 200; round++ {
				k := round % 20
				v, ok := c.Get(k)
				if !ok {
					s := fmt.Sprint(k)
					v = c.Add(k, &s, int64(1+k%5))
				}
				if *v != fmt.Sprint(k) {
					t.Errorf("key %d holds %q", k, *v)
				}
				if cost := c.Cost(); cost > budget {
					t.Errorf("cost %d over the budget %d", cost, budget)
				}
			}
		}()
	}
	wg.Wait()
	if c.Len() == 0 || c.Cost() > budget {
		t.Errorf("Len %d, Cost %d", c.Len(), c.Cost())
	}
}
