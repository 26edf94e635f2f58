package netfault

import (
	"net"
	"sync"
	"time"
)

// link is one proxied connection: the client's and the upstream's.
type link struct {
	client, up net.Conn
	once       sync.Once
	done       chan struct{}
}

func (l *link) close() {
	l.once.Do(func() {
		close(l.done)
		_ = l.client.Close()
		_ = l.up.Close()
	})
}

// chunk is what one read returned, and when it may be forwarded.
type chunk struct {
	b   []byte
	due time.Time
}

// chunkQueue is how many reads a direction holds before it stops reading
// (the kernel's buffers hold the rest).
const chunkQueue = 256

// pump copies from src to dst until either fails or the link closes; then
// it closes the link. reply marks the upstream-to-client direction, the
// one Delay holds.
func (p *Proxy) pump(l *link, src, dst net.Conn, reply bool) {
	defer l.close()
	q := make(chan chunk, chunkQueue)
	go func() {
		defer close(q)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				c := chunk{b: buf[:n], due: time.Now()}
				if m, d, _ := p.state(); reply && m == Delay {
					c.due = c.due.Add(d)
				}
				select {
				case q <- c:
				case <-l.done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		if !p.await(l, c.due) {
			return
		}
		if _, err := dst.Write(c.b); err != nil {
			return
		}
		n := int64(len(c.b))
		p.count(func(s *Stats) {
			if reply {
				s.Down += n
			} else {
				s.Up += n
			}
		})
	}
}

// await waits until a chunk may be forwarded: its due time has come and
// the proxy is not stalled. It reports false when the link closed first.
func (p *Proxy) await(l *link, due time.Time) bool {
	for {
		m, _, changed := p.state()
		if m == Stall || m == Cut {
			select {
			case <-changed:
				continue
			case <-l.done:
				return false
			}
		}
		wait := time.Until(due)
		if wait <= 0 {
			return true
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
			return true
		case <-changed:
			t.Stop()
		case <-l.done:
			t.Stop()
			return false
		}
	}
}
