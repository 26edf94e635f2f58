package netfault

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"
)

// Switch changes a proxy's mode and reads its counters, whether the proxy
// runs in this process (Local) or in another one (Remote).
type Switch interface {
	// Apply switches to mode m (delay d for Delay) and returns the
	// counters once it is in effect (for Cut: with the connections it
	// severed).
	Apply(ctx context.Context, m Mode, d time.Duration) (Stats, error)
	// Stats returns the counters so far.
	Stats(ctx context.Context) (Stats, error)
	// Close stops the proxy.
	Close() error
}

// Local returns the Switch of a proxy of this process.
func Local(p *Proxy) Switch { return local{p} }

type local struct{ p *Proxy }

func (l local) Apply(_ context.Context, m Mode, d time.Duration) (Stats, error) {
	l.p.Apply(m, d)
	return l.p.Stats(), nil
}

func (l local) Stats(context.Context) (Stats, error) { return l.p.Stats(), nil }

func (l local) Close() error { return l.p.Close() }

// ErrProxyGone is returned by a Remote whose proxy process no longer
// answers: its output ended.
var ErrProxyGone = errors.New("netfault: the proxy process is gone")

// Remote is the controller's side of the control protocol: it drives a
// proxy in another process through that process's standard input and
// output. Its methods are safe for concurrent use.
type Remote struct {
	addr  string
	w     io.WriteCloser
	lines chan []byte // the proxy's output lines; closed at its end
	cmd   *exec.Cmd   // the proxy process, when Start started it

	mu     sync.Mutex // one request at a time
	closed bool
}

// closeWait is how long Close waits for the proxy process to exit once its
// standard input is closed, before it kills it.
const closeWait = 5 * time.Second

// Start starts cmd, a proxy process serving the control protocol on its
// standard input and output (Serve), and waits within ctx for its hello.
// The process's standard error is left as the caller set it.
func Start(ctx context.Context, cmd *exec.Cmd) (*Remote, error) {
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("netfault: %w", err)
	}
	r, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("netfault: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("netfault: start the proxy: %w", err)
	}
	c, err := NewRemote(ctx, w, r)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	c.cmd = cmd
	return c, nil
}

// NewRemote reads the hello of a proxy that serves the control protocol
// on the other ends of w and r, within ctx.
func NewRemote(ctx context.Context, w io.WriteCloser, r io.Reader) (*Remote, error) {
	c := &Remote{w: w, lines: make(chan []byte, 1)}
	go c.read(r)
	rep, err := c.next(ctx)
	if err != nil {
		return nil, fmt.Errorf("netfault: no hello from the proxy: %w", err)
	}
	c.addr = rep.Addr
	return c, nil
}

// read passes the proxy's output lines on until it ends.
func (c *Remote) read(r io.Reader) {
	defer close(c.lines)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		c.lines <- append([]byte(nil), sc.Bytes()...)
	}
}

// next waits for the next reply.
func (c *Remote) next(ctx context.Context) (reply, error) {
	var rep reply
	select {
	case line, ok := <-c.lines:
		if !ok {
			return rep, ErrProxyGone
		}
		if err := json.Unmarshal(line, &rep); err != nil {
			return rep, fmt.Errorf("netfault: unreadable reply %q: %w", line, err)
		}
		if rep.Error != "" {
			return rep, fmt.Errorf("netfault: proxy: %s", rep.Error)
		}
		return rep, nil
	case <-ctx.Done():
		return rep, ctx.Err()
	}
}

// Addr returns the address the proxy listens on, as its hello gave it.
func (c *Remote) Addr() string { return c.addr }

// Apply implements Switch.
func (c *Remote) Apply(ctx context.Context, m Mode, d time.Duration) (Stats, error) {
	return c.do(ctx, request{Mode: m.String(), Delay: d})
}

// Stats implements Switch.
func (c *Remote) Stats(ctx context.Context) (Stats, error) { return c.do(ctx, request{}) }

func (c *Remote) do(ctx context.Context, req request) (Stats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return Stats{}, ErrClosed
	}
	b, _ := json.Marshal(req) // plain fields
	if _, err := c.w.Write(append(b, '\n')); err != nil {
		return Stats{}, fmt.Errorf("%w: %v", ErrProxyGone, err)
	}
	rep, err := c.next(ctx)
	return rep.Stats, err
}

// Close closes the proxy's standard input, which ends it; a process Start
// started is waited for, and killed if it does not exit within a few
// seconds.
func (c *Remote) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.closed = true
	err := c.w.Close()
	if c.cmd == nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- c.cmd.Wait() }()
	select {
	case werr := <-exited:
		return errors.Join(err, werr)
	case <-time.After(closeWait):
		_ = c.cmd.Process.Kill()
		<-exited
		return errors.Join(err, fmt.Errorf("netfault: the proxy process did not exit within %s: killed", closeWait))
	}
}
