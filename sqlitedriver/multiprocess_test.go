package sqlitedriver

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/testdb"
)

// helperEnv names the database file a worker subprocess drains.
const helperEnv = "LEASEHOLD_SQLITEDRIVER_HELPER_DB"

// TestMultiProcessDrain drains one file with several worker processes (this
// test binary re-run as TestHelperWorker): every job is claimed and
// completed exactly once, and no SQLITE_BUSY error surfaces.
func TestMultiProcessDrain(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := testdb.SQLitePath(t)
	d := openPath(t, path)
	const jobs, workers = 1500, 3
	insertN(t, d, jobs)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = make(map[int64]int)
	)
	for i := 0; i < workers; i++ {
		cmd := exec.CommandContext(testCtx(t), os.Args[0], "-test.run=^TestHelperWorker$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperEnv+"="+path, "LEASEHOLD_HELPER_OWNER=p"+strconv.Itoa(i))
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cmd.Run(); err != nil {
				t.Errorf("worker process: %v\n%s\n%s", err, out.String(), stderr.String())
				return
			}
			mu.Lock()
			defer mu.Unlock()
			sc := bufio.NewScanner(&out)
			for sc.Scan() {
				if id, ok := strings.CutPrefix(sc.Text(), "done "); ok {
					n, _ := strconv.ParseInt(id, 10, 64)
					seen[n]++
				}
			}
		}()
	}
	wg.Wait()
	if len(seen) != jobs {
		t.Errorf("%d distinct jobs completed, want %d", len(seen), jobs)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("job %d completed %d times", id, n)
		}
	}
	left, err := d.ListJobs(testCtx(t), &leasehold.ListParams{
		States: []leasehold.JobState{leasehold.StatePending, leasehold.StateProcessing}})
	if err != nil || len(left) != 0 {
		t.Errorf("left unfinished: %d jobs, %v", len(left), err)
	}
}

// TestHelperWorker is the worker subprocess of TestMultiProcessDrain; it
// does nothing in a normal test run.
func TestHelperWorker(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		return
	}
	owner := os.Getenv("LEASEHOLD_HELPER_OWNER")
	d := openPath(t, path) // also migrates, concurrently with the others
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		js, err := d.Claim(ctx, &driver.ClaimParams{Queue: "q", Kinds: []string{"k"}, Owner: owner,
			TTL: time.Minute, Limit: 10})
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		if len(js) == 0 {
			return
		}
		ps := make([]*driver.FinishParams, len(js))
		for i, j := range js {
			ps[i] = &driver.FinishParams{ID: j.ID, Owner: owner, Attempt: j.Attempt,
				Transition: transition(leasehold.OutcomeCompleted, "")}
		}
		ids, err := d.Finish(ctx, nil, ps)
		if err != nil || len(ids) != len(js) {
			t.Fatalf("Finish = %v, %v", ids, err)
		}
		for _, r := range ids {
			fmt.Printf("done %d\n", r.ID)
		}
	}
}
