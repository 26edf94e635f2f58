package leasehold

import (
	"context"
	"testing"
)

// TestRecheckIndexFollowsBatch: a job an insert middleware broke is
// refused with its index in the InsertMany or InsertBulk slice, even in a
// batch of one (as the same job is when refused before the middleware),
// and with Index -1 from Insert. nopDriver panics if a refused job
// reaches it.
func TestRecheckIndexFollowsBatch(t *testing.T) {
	breakLast := InsertMiddlewareFunc(func(ctx context.Context, tx any, jobs []*InsertJob, next func(context.Context) ([]*InsertResult, error)) ([]*InsertResult, error) {
		jobs[len(jobs)-1].Opts.Queue = "bad queue"
		return next(ctx)
	})
	c, err := NewClient(Config{Driver: nopDriver{}, InsertMiddleware: []InsertMiddleware{breakLast}})
	if err != nil {
		t.Fatal(err)
	}
	one := []InsertManyParams{{Args: RawArgs{KindName: "k"}}}
	two := append(one, InsertManyParams{Args: RawArgs{KindName: "k"}})

	_, err = c.InsertMany(t.Context(), nil, one)
	checkRefusal(t, err, "queue", 0, ErrInvalidQueue, "job 0: queue: ")
	_, err = c.InsertMany(t.Context(), nil, two)
	checkRefusal(t, err, "queue", 1, ErrInvalidQueue, "job 1: queue: ")
	_, err = c.InsertBulk(t.Context(), one)
	checkRefusal(t, err, "queue", 0, ErrInvalidQueue, "job 0: queue: ")
	_, err = c.InsertBulk(t.Context(), two)
	checkRefusal(t, err, "queue", 1, ErrInvalidQueue, "job 1: queue: ")
	_, err = c.Insert(t.Context(), RawArgs{KindName: "k"}, nil)
	checkRefusal(t, err, "queue", -1, ErrInvalidQueue, "invalid queue name: queue: ")
}

// TestRecheckNilJobIndex: a job an insert middleware replaced with nil is
// refused, naming the job's index in a batch and -1 for Insert.
func TestRecheckNilJobIndex(t *testing.T) {
	drop := InsertMiddlewareFunc(func(ctx context.Context, tx any, jobs []*InsertJob, next func(context.Context) ([]*InsertResult, error)) ([]*InsertResult, error) {
		jobs[0] = nil
		return next(ctx)
	})
	c, err := NewClient(Config{Driver: nopDriver{}, InsertMiddleware: []InsertMiddleware{drop}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.InsertMany(t.Context(), nil, []InsertManyParams{{Args: RawArgs{KindName: "k"}}})
	checkRefusal(t, err, "jobs", 0, ErrInvalidArgs, "job 0: jobs: insert middleware left no job")
	_, err = c.Insert(t.Context(), RawArgs{KindName: "k"}, nil)
	checkRefusal(t, err, "jobs", -1, ErrInvalidArgs, "jobs: insert middleware left no job")
}
