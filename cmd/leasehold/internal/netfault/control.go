package netfault

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// The control protocol drives a proxy that runs in a process of its own
// (`leasehold chaos proxy`), from a controller that holds the process's
// standard input and output: pipes, which cross network namespaces. Each
// side writes one JSON object a line. The proxy first writes a hello, a
// reply with its address; then it answers every request with a reply.

// request asks for a mode, or only for the counters when Mode is empty.
type request struct {
	Mode  string        `json:"mode,omitempty"`
	Delay time.Duration `json:"delay_ns,omitempty"`
}

// reply carries the counters after the request, or its error. Addr is set
// in the hello.
type reply struct {
	Addr  string `json:"addr,omitempty"`
	Stats Stats  `json:"stats"`
	Error string `json:"error,omitempty"`
}

// Serve runs the control protocol for p: it writes the hello on w, then
// answers each request line read from r, until r ends (the controller
// closed it, or died) or ctx ends. It returns nil at the end of r.
func Serve(ctx context.Context, p *Proxy, r io.Reader, w io.Writer) error {
	enc := json.NewEncoder(w)
	if err := enc.Encode(reply{Addr: p.Addr().String(), Stats: p.Stats()}); err != nil {
		return fmt.Errorf("netfault: hello: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- answer(p, r, enc) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// answer reads requests until r ends and replies to each.
func answer(p *Proxy, r io.Reader, enc *json.Encoder) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var req request
		var rep reply
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			rep.Error = fmt.Sprintf("bad request %q: %v", sc.Text(), err)
		} else if req.Mode != "" {
			if m, err := ParseMode(req.Mode); err != nil {
				rep.Error = err.Error()
			} else {
				p.Apply(m, req.Delay)
			}
		}
		rep.Stats = p.Stats()
		if err := enc.Encode(rep); err != nil {
			return fmt.Errorf("netfault: reply: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("netfault: read requests: %w", err)
	}
	return nil
}

// ServeProcess is the body of a proxy process: a proxy on listen that
// forwards each connection to the TCP address upstream, driven by the
// control protocol on in and out (Serve) until in ends or ctx ends; then
// the proxy closes.
func ServeProcess(ctx context.Context, listen, upstream string, in io.Reader, out io.Writer) error {
	p, err := Listen(listen, TCPUpstream(upstream))
	if err != nil {
		return err
	}
	err = Serve(ctx, p, in, out)
	return errors.Join(err, p.Close())
}
