package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// procSample is the operator process's resource use so far.
type procSample struct {
	// PeakRSSBytes is VmHWM: the highest resident set size since the process started.
	PeakRSSBytes int64 `json:"peakRSSBytes"`
	// RSSBytes is VmRSS at the moment of the sample.
	RSSBytes int64 `json:"rssBytes"`
	// CPUSeconds is user plus system time since the process started.
	CPUSeconds float64 `json:"cpuSeconds"`
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat.
var clockTicks = func() float64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64); err == nil && v > 0 {
			return v
		}
	}
	return 100 // USER_HZ on every Linux architecture Go supports
}()

func readProc(pid int) (procSample, error) {
	var s procSample
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v) // "123456 kB"
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "VmHWM":
			s.PeakRSSBytes = n << 10
		case "VmRSS":
			s.RSSBytes = n << 10
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// The command name (field 2) may hold spaces and parentheses: fields are counted
	// after its closing parenthesis; utime and stime are fields 14 and 15.
	rest := string(stat)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest) // f[0] is field 3 (state)
	if len(f) < 13 {
		return s, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	s.CPUSeconds = (ut + st) / clockTicks
	return s, nil
}
