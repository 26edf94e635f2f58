package netfault

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Mode is what the proxy does to the traffic.
type Mode int

// The modes of a Proxy.
const (
	// Pass forwards bytes as they come.
	Pass Mode = iota
	// Delay holds every reply (upstream to client) for the proxy's delay
	// before forwarding it.
	Delay
	// Stall forwards nothing in either direction; what arrives is held
	// and forwarded when the stall ends.
	Stall
	// Cut closes every connection and refuses new ones.
	Cut
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Delay:
		return "delay"
	case Stall:
		return "stall"
	case Cut:
		return "cut"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// ParseMode returns the mode a name of String stands for.
func ParseMode(name string) (Mode, error) {
	for m := Pass; m <= Cut; m++ {
		if m.String() == name {
			return m, nil
		}
	}
	return 0, fmt.Errorf("netfault: unknown mode %q (want pass, delay, stall or cut)", name)
}

// Dialer opens a connection to the upstream server.
type Dialer func(ctx context.Context) (net.Conn, error)

// ErrClosed is returned by calls on a closed Proxy.
var ErrClosed = errors.New("netfault: proxy closed")

// Stats count what the proxy did.
type Stats struct {
	// Accepted counts client connections forwarded upstream; Refused
	// those closed at once because the proxy was cut (or upstream did not
	// answer); Severed the open connections a cut closed.
	Accepted, Refused, Severed int64
	// Up and Down count the bytes forwarded to upstream and back.
	Up, Down int64
}

// Proxy is a TCP proxy whose faults are switched at run time. Its methods
// are safe for concurrent use.
type Proxy struct {
	ln   net.Listener
	dial Dialer

	mu      sync.Mutex
	mode    Mode
	delay   time.Duration
	changed chan struct{} // closed and replaced at every mode change
	links   map[*link]struct{}
	stats   Stats
	closed  bool
	wg      sync.WaitGroup
}

// Listen starts a proxy on addr (for instance "127.0.0.1:0") that forwards
// each connection to a new upstream connection from dial, in Pass mode.
func Listen(addr string, dial Dialer) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("netfault: listen: %w", err)
	}
	p := &Proxy{ln: ln, dial: dial, changed: make(chan struct{}), links: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() *net.TCPAddr { return p.ln.Addr().(*net.TCPAddr) }

// Mode returns the current mode and delay.
func (p *Proxy) Mode() (Mode, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode, p.delay
}

// Pass ends any fault: held bytes are forwarded, new connections accepted.
func (p *Proxy) Pass() { p.set(Pass, 0) }

// Delay holds each reply for d before forwarding it, from now on.
func (p *Proxy) Delay(d time.Duration) { p.set(Delay, d) }

// Stall stops forwarding, in both directions, until the mode changes.
func (p *Proxy) Stall() { p.set(Stall, 0) }

// Cut closes every open connection and refuses new ones until the mode
// changes.
func (p *Proxy) Cut() {
	p.set(Cut, 0)
	p.mu.Lock()
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.stats.Severed += int64(len(links))
	p.mu.Unlock()
	for _, l := range links {
		l.close()
	}
}

// Apply switches to mode m (with delay d for Delay), as Pass, Delay,
// Stall and Cut do.
func (p *Proxy) Apply(m Mode, d time.Duration) {
	switch m {
	case Delay:
		p.Delay(d)
	case Stall:
		p.Stall()
	case Cut:
		p.Cut()
	default:
		p.Pass()
	}
}

func (p *Proxy) set(m Mode, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode, p.delay = m, d
	close(p.changed)
	p.changed = make(chan struct{})
}

// state returns the mode, the delay and the channel closed at the next
// change.
func (p *Proxy) state() (Mode, time.Duration, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode, p.delay, p.changed
}

// Stats returns the counters so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Close stops listening, closes every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	p.closed = true
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	for _, l := range links {
		l.close()
	}
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		if m, _, _ := p.state(); m == Cut {
			p.count(func(s *Stats) { s.Refused++ })
			_ = c.Close()
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) count(f func(*Stats)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(&p.stats)
}

// dialTimeout bounds the upstream dial of one connection.
const dialTimeout = 10 * time.Second

// serve links client c to a new upstream connection until either side
// closes or a cut.
func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	up, err := p.dial(ctx)
	cancel()
	if err != nil {
		p.count(func(s *Stats) { s.Refused++ })
		_ = c.Close()
		return
	}
	l := &link{client: c, up: up, done: make(chan struct{})}
	p.mu.Lock()
	if p.closed || p.mode == Cut {
		p.stats.Refused++
		p.mu.Unlock()
		l.close()
		return
	}
	p.links[l] = struct{}{}
	p.stats.Accepted++
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pump(l, c, up, false) }()
	go func() { defer wg.Done(); p.pump(l, up, c, true) }()
	wg.Wait()
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}
