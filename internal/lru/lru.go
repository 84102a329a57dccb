// Package lru is a small least-recently-used cache bounded by the cost
// (bytes, say) of what it holds, for caches of derived data that can be
// rebuilt at will: the reader's chunk layouts, a remote source's fetched
// ranges. Decoded blocks, which readers pin while they use them, have a
// cache of their own (block.Cache).
package lru

import (
	"container/list"
	"sync"
)

// LRU maps keys to values, dropping the least recently used entries when
// their costs together would exceed its budget. It is safe for concurrent
// use. Values are shared, not copied: they must not be modified once
// added.
type LRU[K comparable, V any] struct {
	mu     sync.Mutex
	budget int64
	used   int64
	order  list.List // of *entry[K, V], front = most recently used
	m      map[K]*list.Element
}

type entry[K comparable, V any] struct {
	key  K
	val  V
	cost int64
}

// New returns an empty cache that holds entries costing budget at most.
func New[K comparable, V any](budget int64) *LRU[K, V] {
	return &LRU[K, V]{budget: budget}
}

// Get returns the value under k and marks it most recently used.
func (c *LRU[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*entry[K, V]).val, true
}

// Add keeps v under k, at cost, dropping the least recently used entries
// to stay within the budget, and returns it. If k is present already
// (added by another caller meanwhile), the present value stays and is
// returned instead, so that every caller goes on with the same one. A
// value costing more than the whole budget is returned but not kept.
// cost must not be negative.
func (c *LRU[K, V]) Add(k K, v V, cost int64) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[k]; ok {
		c.order.MoveToFront(el)
		return el.Value.(*entry[K, V]).val
	}
	if cost > c.budget {
		return v
	}
	for c.used+cost > c.budget {
		e := c.order.Remove(c.order.Back()).(*entry[K, V])
		delete(c.m, e.key)
		c.used -= e.cost
	}
	if c.m == nil {
		c.m = map[K]*list.Element{}
	}
	c.m[k] = c.order.PushFront(&entry[K, V]{k, v, cost})
	c.used += cost
	return v
}

// Len is the number of entries held.
func (c *LRU[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// Cost is the cost of the entries held, together.
func (c *LRU[K, V]) Cost() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}
