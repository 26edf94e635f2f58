package work

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"
)

// TestUntilIdleNeedsScansInARow: --until-idle stops only after idleScans
// scans in a row found no work. A single empty scan may have missed a job
// moving between two queues (a reconciling payment resolved to pending
// while its reconcile job completed), so work found by the next scan, or
// a failed scan, starts the count again.
func TestUntilIdleNeedsScansInARow(t *testing.T) {
	errScan := errors.New("scan failed")
	for _, tc := range []struct {
		name  string
		scans []error // nil: no work; errBusy: work; other: the scan failed
		stops int     // the scan after which the worker stops (1-based)
	}{
		{"idle at once", []error{nil, nil}, 2},
		{"one empty scan, then work", []error{nil, errBusy, nil, nil}, 4},
		{"a failed scan is not idle", []error{nil, errScan, nil, nil}, 4},
		{"work, then idle", []error{errBusy, errBusy, nil, nil}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			stopped := make(chan struct{})
			n := 0
			done := make(chan struct{})
			go func() {
				defer close(done)
				untilIdle(ctx, func() { close(stopped) }, time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)),
					func(context.Context) (bool, error) {
						if n == len(tc.scans) {
							t.Errorf("scan %d: the worker should have stopped after scan %d", n+1, tc.stops)
							cancel()
							return true, nil
						}
						err := tc.scans[n]
						n++
						if errors.Is(err, errBusy) {
							return true, nil
						}
						return false, err
					})
			}()
			<-done
			select {
			case <-stopped:
			default:
				t.Fatalf("the worker did not stop after %d scans", n)
			}
			if n != tc.stops {
				t.Errorf("stopped after scan %d, want %d", n, tc.stops)
			}
		})
	}
}

// errBusy marks a scan that found work in TestUntilIdleNeedsScansInARow.
var errBusy = errors.New("busy")
