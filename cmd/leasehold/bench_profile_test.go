package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchProfiles runs a tiny drain with every profile flag and checks
// that each file was written: the CPU, allocation and mutex profiles as
// gzipped pprof data, the execution trace with its header.
func TestBenchProfiles(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	args := []string{"--db", "sqlite:" + filepath.Join(dir, "b.db"), "bench", "--phases", "drain", "--jobs", "200", "--workers", "20"}
	for _, flag := range []string{"cpuprofile", "memprofile", "mutexprofile", "trace"} {
		files[flag] = filepath.Join(dir, flag+".out")
		args = append(args, "--"+flag, files[flag])
	}
	if r := runIn(t, dir, nil, args...); r.code != 0 {
		t.Fatalf("bench: %s", r)
	}
	for flag, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("--%s: %v", flag, err)
			continue
		}
		want := []byte{0x1f, 0x8b} // gzip, as pprof writes its profiles
		if flag == "trace" {
			want = []byte("go 1.")
		}
		if !bytes.HasPrefix(b, want) {
			t.Errorf("--%s: %d bytes starting %q, want %q", flag, len(b), b[:min(len(b), 8)], want)
		}
	}
}

// TestBenchProfileBadPath checks that a profile path that cannot be
// created is refused before the run, not after it.
func TestBenchProfileBadPath(t *testing.T) {
	dir := t.TempDir()
	for _, flag := range []string{"memprofile", "mutexprofile"} {
		r := runIn(t, dir, nil, "--db", "sqlite:"+filepath.Join(dir, "b.db"), "bench", "--phases", "drain",
			"--jobs", "200", "--workers", "20", "--"+flag, filepath.Join(dir, "missing", "p.out"))
		if r.code == 0 || !strings.Contains(r.stderr, "profile") || strings.Contains(r.stderr, "drain:") {
			t.Errorf("--%s to a missing directory: want a failure before the drain, got %s", flag, r)
		}
	}
}
