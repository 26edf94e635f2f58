package maintenance

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
)

// queuesPurge records the Queues of each Purge call.
type queuesPurge struct {
	mu     sync.Mutex
	queues [][]string
}

func (q *queuesPurge) Purge(_ context.Context, p *driver.PurgeParams) (int64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.queues = append(q.queues, p.Queues)
	return 0, nil
}

// calls returns the Queues of the calls so far.
func (q *queuesPurge) calls() [][]string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.queues)
}

// TestRetainerPurgesItsQueues: every pass of the retainer purges the
// queues it was given and no other; given none (nil), it purges none,
// never every queue.
func TestRetainerPurgesItsQueues(t *testing.T) {
	for _, tc := range []struct {
		name         string
		queues, want []string
	}{
		{"its queues", []string{"emails", "default"}, []string{"emails", "default"}},
		{"no queues", nil, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &queuesPurge{}
			r := NewRetainer(f, tc.queues, time.Hour, 10*time.Millisecond, discard)
			if err := r.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = r.Stop(context.Background()) }()
			for deadline := time.Now().Add(5 * time.Second); len(f.calls()) < 2; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d purges in 5 s with an interval of 10 ms, want 2", len(f.calls()))
				}
			}
			for i, got := range f.calls() {
				if got == nil || !slices.Equal(got, tc.want) {
					t.Errorf("purge %d of a retainer of queues %#v: Queues %#v, want %#v", i, tc.queues, got, tc.want)
				}
			}
		})
	}
}

// TestPurgeQueuesPassesQueues: PurgeQueues names its queues in every
// batch; Purge names none, which is every queue.
func TestPurgeQueuesPassesQueues(t *testing.T) {
	f := &queuesPurge{}
	if _, err := PurgeQueues(t.Context(), f, []string{"a"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := Purge(t.Context(), f, time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := f.calls(); len(got) != 2 || !slices.Equal(got[0], []string{"a"}) || got[1] != nil {
		t.Fatalf("Queues of PurgeQueues([a]) then Purge: %#v, want [[a] nil]", got)
	}
}
