package controllers

import (
	"sync"
	"time"
)

// shiftedClock is the wall clock moved forward by what a test advanced it: the
// LinstorBackupSchedule controller reads it, so a test plays hours of runs in seconds.
type shiftedClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *shiftedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *shiftedClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

var scheduleClock = &shiftedClock{}
