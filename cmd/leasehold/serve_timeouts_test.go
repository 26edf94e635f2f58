package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// testServeTimeouts are short read and write timeouts, far below
// slowClientWait, so that a server without them is told apart from one
// with them however slow the machine.
var testServeTimeouts = serveTimeouts{header: 5 * time.Second, read: 300 * time.Millisecond,
	write: 300 * time.Millisecond, idle: 5 * time.Second}

// slowClientWait is how long the tests wait for the server to give up on
// a slow client.
const slowClientWait = 10 * time.Second

// startTimedServer runs runServer with testServeTimeouts on a loopback
// port until the test ends, and returns its address.
func startTimedServer(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runServer(ctx, ln, h, testServeTimeouts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("runServer: %v", err)
		}
	})
	return ln.Addr().String()
}

// TestServeDropsSlowBody: a client that sends its headers and then its
// body a byte at a time, or not at all, is cut off once the read timeout
// has passed (forms are read before authentication, so anyone could hold
// connections this way), rather than holding its connection for ever.
func TestServeDropsSlowBody(t *testing.T) {
	read := make(chan error, 1)
	addr := startTimedServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := r.ParseForm()
		read <- err
		if err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
		}
	}))
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /login HTTP/1.1\r\nHost: x\r\n"+
		"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\ntoken="); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-read:
		if err == nil {
			t.Fatal("the form of 6 of its 1,000 bytes parsed")
		}
	case <-time.After(slowClientWait):
		t.Fatalf("the body is still being read %v after its first bytes (read timeout %v)", slowClientWait, testServeTimeouts.read)
	}
}

// TestServeDropsSlowReader: an answer that the client does not read is
// given up once the write timeout has passed, rather than holding the
// handler, its connection and what it holds for ever.
func TestServeDropsSlowReader(t *testing.T) {
	wrote := make(chan error, 1)
	page := bytes.Repeat([]byte("x"), 1<<20)
	addr := startTimedServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		var err error
		for i := 0; i < 256 && err == nil; i++ { // far beyond what socket buffers hold
			_, err = w.Write(page)
		}
		wrote <- err
	}))
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	select { // the client reads nothing
	case err := <-wrote:
		if err == nil {
			t.Fatal("256 MiB were written to a client that read none of it")
		}
	case <-time.After(slowClientWait):
		t.Fatalf("the answer is still being written %v after the request (write timeout %v)", slowClientWait, testServeTimeouts.write)
	}
}
