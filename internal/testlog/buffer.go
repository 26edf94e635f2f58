// Package testlog holds what tests use to read output that other
// goroutines write: a client's log, a process's stdout and stderr.
package testlog

import (
	"bytes"
	"log/slog"
	"sync"
)

// Buffer is a bytes.Buffer safe to read while other goroutines write it.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Bytes returns a copy of what was written so far.
func (b *Buffer) Bytes() []byte { return []byte(b.String()) }

// Logger returns a text logger that writes to b.
func (b *Buffer) Logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }
