package main

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestServeShutdownClosesUnusedConnections: a connection that sent no
// request yet (a browser opens them ahead of its next request) does not
// hold up the shutdown: serve exits at once and without an error, where
// net/http alone waits 5 s for such a connection, as long as serve's
// whole shutdown budget, and reports the budget exceeded.
func TestServeShutdownClosesUnusedConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runServer(ctx, ln, http.NotFoundHandler(), testServeTimeouts)
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	time.Sleep(100 * time.Millisecond) // let the server accept it
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("runServer with an unused connection open: %v, want nil", err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("shutdown took %v with an unused connection open", took)
		}
	case <-time.After(slowClientWait):
		t.Fatal("runServer did not return")
	}
}
