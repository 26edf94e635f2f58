package fleet

import (
	"errors"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestReportsAndGracefulStop: the fleet reads the counters a worker
// reports (its owner proves the database reached its environment), hands
// every line to OnLine, keeps its log, notes a line that is not JSON, and
// stops it gracefully both ways, SIGTERM and the end of its standard
// input: each stopped worker reports final counters and exits 0.
func TestReportsAndGracefulStop(t *testing.T) {
	f := New(nil)
	lines := make(chan string, 1000)
	byTerm := startHelper(t, f, "sigterm", "w1", lines)
	byStdin := startHelper(t, f, "stdin", "w2", nil)
	waitFor(t, "both report", func() bool { return claimed(byTerm) >= 3 && claimed(byStdin) >= 3 })
	if s, _ := byTerm.Stats(); s.Owner != "sqlite:w1.db" {
		t.Errorf("reported owner %q: the database did not reach the worker's environment", s.Owner)
	}
	if _, final := byTerm.FinalStats(); final {
		t.Error("final counters before the worker stopped")
	}
	if l := <-lines; !strings.Contains(l, `"type":"report"`) {
		t.Errorf("first line to OnLine = %s, want the first report", l)
	}
	// Standard error is read apart from the reports: wait for its lines.
	waitFor(t, "the log lines", func() bool {
		tail := byTerm.LogTail(100)
		return strings.Contains(tail, "fleet: unreadable worker output: not json") &&
			strings.Contains(tail, "log line 2 | log line 3")
	})
	f.StopAll(5 * time.Second)
	for _, p := range []*Proc{byTerm, byStdin} {
		s, final := p.FinalStats()
		if !final || p.Err() != nil || p.Killed() || !p.ExitExpected() || p.Alive() {
			t.Errorf("%s stopped: final %v (%+v), exit %v, killed %v, expected %v, alive %v",
				p.Name(), final, s, p.Err(), p.Killed(), p.ExitExpected(), p.Alive())
		}
	}
	got := map[*Proc]bool{nextExit(t, f): true, nextExit(t, f): true}
	if !got[byTerm] || !got[byStdin] {
		t.Error("Exits did not hand over both workers")
	}
}

// TestStopKillsStubborn: a worker that ignores both ways of asking is
// killed once the wait is over.
func TestStopKillsStubborn(t *testing.T) {
	f := New(nil)
	p := startHelper(t, f, "stubborn", "w1", nil)
	waitFor(t, "it reports", func() bool { return claimed(p) > 0 })
	start := time.Now()
	f.StopAll(200 * time.Millisecond)
	if _, final := p.FinalStats(); final || !p.Killed() || p.Alive() || time.Since(start) > 5*time.Second {
		t.Errorf("stubborn worker: final %v, killed %v, alive %v after %s", final, p.Killed(), p.Alive(), time.Since(start))
	}
}

// TestKill: a real SIGKILL. The worker dies at once, says nothing more,
// and its exit is expected.
func TestKill(t *testing.T) {
	f := New(nil)
	p := startHelper(t, f, "sigterm", "w1", nil)
	other := startHelper(t, f, "sigterm", "w2", nil)
	waitFor(t, "it reports", func() bool { return claimed(p) > 0 })
	if err := f.Kill(p); err != nil {
		t.Fatal(err)
	}
	if got := nextExit(t, f); got != p {
		t.Fatalf("Exits handed over %s, want %s", got.Name(), p.Name())
	}
	var ee *exec.ExitError
	if !errors.As(p.Err(), &ee) || !strings.Contains(ee.String(), "killed") {
		t.Errorf("exit status %v, want killed by a signal", p.Err())
	}
	if _, final := p.FinalStats(); final || p.Alive() || !p.Killed() || !p.ExitExpected() {
		t.Errorf("killed worker: final %v, alive %v, killed %v, expected %v", final, p.Alive(), p.Killed(), p.ExitExpected())
	}
	if f.Running("w1") != nil || f.Running("w2") != other || f.ByOwner("w1") != p || f.ByOwner("w3") != nil {
		t.Error("Running does not skip the killed worker, or ByOwner does not find it")
	}
	for range 20 {
		if got := f.Pick(rand.New(rand.NewPCG(1, 2))); got != other {
			t.Fatalf("Pick = %v, want the only live worker", got)
		}
	}
}

// TestKillLater: the worker counts as killed at once, before runs while
// it still lives, after once it is dead.
func TestKillLater(t *testing.T) {
	f := New(nil)
	p := startHelper(t, f, "sigterm", "w1", nil)
	done := make(chan error, 1)
	var livedBefore bool
	f.KillLater(p, func() {
		time.Sleep(50 * time.Millisecond)
		select {
		case <-p.Exited():
		default:
			livedBefore = true
		}
	}, func(err error) { done <- err })
	if p.Alive() || f.Pick(rand.New(rand.NewPCG(1, 2))) != nil {
		t.Error("a worker being killed is still picked")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	default:
		t.Error("after ran before the worker exited")
	}
	if !livedBefore {
		t.Error("the worker died before `before` ran")
	}
}

// TestCrash: an exit the fleet did not cause is handed over as
// unexpected, with the worker's last words in its log.
func TestCrash(t *testing.T) {
	f := New(nil)
	p := startHelper(t, f, "crash", "w1", nil)
	if got := nextExit(t, f); got != p {
		t.Fatalf("Exits handed over %s", got.Name())
	}
	var ee *exec.ExitError
	if p.ExitExpected() || !errors.As(p.Err(), &ee) || ee.ExitCode() != 3 {
		t.Errorf("crash: expected %v, exit %v", p.ExitExpected(), p.Err())
	}
	if !strings.Contains(p.LogTail(3), "boom") {
		t.Errorf("log tail = %q", p.LogTail(3))
	}
}

// TestStartFails: a missing executable is an error naming the worker.
func TestStartFails(t *testing.T) {
	f := New(nil)
	defer f.Close()
	_, err := f.Start(Spec{Name: "w9", Executable: "/nonexistent/leasehold"})
	if err == nil || !strings.Contains(err.Error(), "start worker w9") {
		t.Errorf("Start = %v", err)
	}
	if len(f.All()) != 0 {
		t.Error("a worker that never started is listed")
	}
}
