package fleet

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/view"
)

// helperEnv makes the test binary act as a worker (see helper).
const helperEnv = "FLEET_TEST_HELPER"

// TestMain runs the helper worker when the test binary is started as one.
func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(m.Run())
}

// helper is a stand-in worker. It reports its counters every 10ms (its
// owner is the database location it was given, so that a test sees the
// environment arrive), writes a line of its own type and a log line each
// time, and one line that is not JSON first. Modes: "sigterm" stops on
// SIGTERM only, "stdin" at the end of its standard input only,
// "stubborn" never, "crash" exits 3 at once.
func helper(mode string) int {
	if mode == "crash" {
		fmt.Fprintln(os.Stderr, "boom: the worker crashed")
		return 3
	}
	stop := make(chan struct{}, 2)
	sig := make(chan os.Signal, 1)
	if mode == "sigterm" {
		signal.Notify(sig, syscall.SIGTERM)
	} else {
		signal.Ignore(syscall.SIGTERM)
	}
	go func() { <-sig; stop <- struct{}{} }()
	if mode == "stdin" {
		go func() { _, _ = io.Copy(io.Discard, os.Stdin); stop <- struct{}{} }()
	}
	e := NewEmitter(os.Stdout)
	fmt.Println("not json")
	s := view.StatsView{Owner: os.Getenv(cli.EnvDatabaseURL)}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			e.EmitStats(TypeFinal, s)
			return 0
		case <-t.C:
			s.Claimed++
			e.EmitStats(TypeReport, s)
			e.Emit(map[string]any{"type": "tick", "n": s.Claimed})
			fmt.Fprintf(os.Stderr, "log line %d\n", s.Claimed)
		}
	}
}

// startHelper starts a helper worker in mode on f; the fleet is closed
// when the test ends. lines receives the lines passed to OnLine.
func startHelper(t *testing.T, f *Fleet, mode, owner string, lines chan<- string) *Proc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(helperEnv, mode)
	s := Spec{Name: owner, Owner: owner, Executable: exe, DB: "sqlite:" + owner + ".db"}
	if lines != nil {
		s.OnLine = func(l []byte) {
			select {
			case lines <- string(l):
			default:
			}
		}
	}
	p, err := f.Start(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return p
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// claimed is the helper's latest reported counter.
func claimed(p *Proc) int64 {
	s, _ := p.Stats()
	return s.Claimed
}

// nextExit returns the next process Exits hands over.
func nextExit(t *testing.T, f *Fleet) *Proc {
	t.Helper()
	select {
	case p := <-f.Exits():
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("no exit reported")
		return nil
	}
}
