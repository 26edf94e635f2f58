package fleet

import (
	"strings"
	"sync"
)

// tailBytes is how much of a worker's log a tailBuffer keeps, at least.
const tailBytes = 16 << 10

// tailBuffer keeps the end of a worker's log; it is safe for the writer
// goroutine of os/exec and for readers.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

// Write implements io.Writer.
func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*tailBytes {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-tailBytes:]...)
	}
	return len(p), nil
}

// Tail returns the last n lines, joined by " | ".
func (b *tailBuffer) Tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(b.buf)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
