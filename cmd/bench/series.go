package main

import (
	"sort"
	"sync"
	"time"
)

// clock turns wall-clock instants into one-second buckets counted from t0, the instant
// the operator was started. The sampler ticks on these bucket boundaries, so a phase
// that ends at tick k holds exactly the buckets [start, k): counts are split between
// phases at one-second resolution, with no event counted twice or lost.
type clock struct{ t0 time.Time }

func (c clock) bucket(t time.Time) int {
	d := t.Sub(c.t0)
	if d < 0 {
		return -1
	}
	return int(d / time.Second)
}

func (c clock) tick(k int) time.Time { return c.t0.Add(time.Duration(k) * time.Second) }

// series counts events by key in one-second buckets. It keeps one small map per
// second, never the events themselves, so it stays small over a long run.
type series struct {
	mu      sync.Mutex
	buckets map[int]map[string]int
}

func newSeries() *series { return &series{buckets: map[int]map[string]int{}} }

func (s *series) add(bucket int, key string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.buckets[bucket]
	if m == nil {
		m = map[string]int{}
		s.buckets[bucket] = m
	}
	m[key] += n
}

// sum adds the buckets [from, to) key by key; keep, when set, selects keys.
func (s *series) sum(from, to int, keep func(string) bool) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for b, m := range s.buckets {
		if b < from || b >= to {
			continue
		}
		for k, v := range m {
			if keep == nil || keep(k) {
				out[k] += v
			}
		}
	}
	return out
}

// perSecond is the total of the keys selected by keep in each bucket [0, n).
func (s *series) perSecond(n int, keep func(string) bool) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int, n)
	for b, m := range s.buckets {
		if b < 0 || b >= n {
			continue
		}
		for k, v := range m {
			if keep == nil || keep(k) {
				out[b] += v
			}
		}
	}
	return out
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
