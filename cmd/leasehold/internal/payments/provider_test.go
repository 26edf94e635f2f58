package payments

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
)

func newTestProvider(t *testing.T, cfg ProviderConfig) (*Provider, *ProviderClient) {
	t.Helper()
	p, err := StartProvider(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	c, err := NewProviderClient(p.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return p, c
}

// TestProviderIdempotency: concurrent and repeated charges with one key
// record one charge and all get it back.
func TestProviderIdempotency(t *testing.T) {
	p, c := newTestProvider(t, ProviderConfig{MaxLatency: 5 * time.Millisecond})
	req := ChargeRequest{IdempotencyKey: "k-1", PaymentID: "p-1", AmountCents: 100, Currency: "EUR"}
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		ids = map[string]int{}
	)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ch, err := c.Charge(context.Background(), req)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			ids[ch.ID]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(ids) != 1 {
		t.Errorf("charge ids = %v, want one", ids)
	}
	other := req
	other.IdempotencyKey, other.PaymentID = "k-2", "p-2"
	if _, err := c.Charge(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.Requests != 21 || s.Charges != 2 || s.Replays != 19 {
		t.Errorf("stats = %+v, want 21 requests, 2 charges, 19 replays", s)
	}
}

// TestProviderStall: a stalled charge is recorded at once, reported, and
// answered after StallFor unless the caller gives up.
func TestProviderStall(t *testing.T) {
	stalled := make(chan ChargeRequest, 1)
	p, c := newTestProvider(t, ProviderConfig{
		Stall: func(r ChargeRequest) bool { return r.PaymentID == "slow" }, StallFor: time.Hour,
		OnStall: func(r ChargeRequest) { stalled <- r },
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Charge(ctx, ChargeRequest{IdempotencyKey: "k", PaymentID: "slow", AmountCents: 1, Owner: "w1", JobID: 7, Attempt: 2})
		errc <- err
	}()
	r := <-stalled
	if r.Owner != "w1" || r.JobID != 7 || r.Attempt != 2 {
		t.Errorf("stalled request = %+v", r)
	}
	if s := p.Stats(); s.Charges != 1 || s.Stalls != 1 {
		t.Errorf("stats during the stall = %+v", s)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("charge abandoned by its caller = %v", err)
	}
}

func TestProviderRejectsBadCharges(t *testing.T) {
	_, c := newTestProvider(t, ProviderConfig{})
	_, err := c.Charge(context.Background(), ChargeRequest{PaymentID: "p", AmountCents: 1})
	var perm *leasehold.PermanentError
	if !errors.As(err, &perm) {
		t.Errorf("charge without an idempotency key = %v, want a permanent error", err)
	}
	if _, err := NewProviderClient("ftp://x", nil); err == nil {
		t.Error("NewProviderClient accepted ftp://")
	}
}
