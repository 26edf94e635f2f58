package payments

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// ChargePath is the provider's charge endpoint.
const ChargePath = "/v1/charges"

// Request headers a charge carries besides its JSON body.
const (
	HeaderIdempotencyKey = "Idempotency-Key"     // same key, same charge
	HeaderOwner          = "Leasehold-Owner"     // worker instance making the call
	HeaderJobID          = "Leasehold-Job"       // job id
	HeaderAttempt        = "Leasehold-Attempt"   // attempt of the lease making the call
	HeaderReplayed       = "Idempotent-Replayed" // answer header: an existing charge
)

// ChargeRequest is a charge as the provider receives it.
type ChargeRequest struct {
	IdempotencyKey string `json:"-"`
	PaymentID      string `json:"payment_id"`
	AmountCents    int64  `json:"amount_cents"`
	Currency       string `json:"currency"`
	// Owner, JobID and Attempt say which lease sent the request.
	Owner   string `json:"-"`
	JobID   int64  `json:"-"`
	Attempt int    `json:"-"`
}

// Charge is a charge the provider recorded.
type Charge struct {
	ID             string `json:"id"`
	PaymentID      string `json:"payment_id"`
	AmountCents    int64  `json:"amount_cents"`
	Currency       string `json:"currency"`
	IdempotencyKey string `json:"idempotency_key"`
	// Replayed is set on the answer to a repeated idempotency key: the
	// original charge, not a new one.
	Replayed bool `json:"replayed"`
}

// ProviderConfig configures the stand-in provider. The zero value answers
// at once and never stalls.
type ProviderConfig struct {
	// Addr is the address to listen on; default "127.0.0.1:0" (an
	// ephemeral port of loopback).
	Addr string
	// MinLatency and MaxLatency bound the normal response time (uniform).
	MinLatency, MaxLatency time.Duration
	// Stall decides whether a request stalls: the charge is recorded
	// first, then the answer waits StallFor (or until the caller hangs
	// up). Nil never stalls.
	Stall func(ChargeRequest) bool
	// StallFor is how long a stalled answer waits.
	StallFor time.Duration
	// OnStall, if set, is called when a request starts stalling. It must
	// not block.
	OnStall func(ChargeRequest)
	// LoseWebhook decides which new charges are answered asynchronously:
	// the charge is recorded and the answer is 202 Accepted, the result
	// to come by a webhook that this stand-in never sends (the webhook is
	// lost). Nil answers every charge at once.
	LoseWebhook func(ChargeRequest) bool
	// Seed makes the latencies reproducible.
	Seed uint64
}

// ProviderStats counts what the provider saw.
type ProviderStats struct {
	Requests int // charge requests received
	Charges  int // distinct charges recorded (one per idempotency key)
	Replays  int // requests answered with an existing charge
	Stalls   int // requests that stalled
	Lookups  int // lookups by idempotency key (reconciliation)
	// WebhooksLost counts charges answered 202 whose webhook never came.
	WebhooksLost int
	// ChargedTwice counts payments charged under more than one key.
	ChargedTwice int
}

// Provider is an in-process stand-in for a payment provider: an HTTP
// server (on 127.0.0.1 unless ProviderConfig.Addr says otherwise) that
// records one charge per idempotency key and can stall. Create it with
// StartProvider and stop it with Close.
type Provider struct {
	cfg ProviderConfig
	srv *http.Server
	url string

	mu     sync.Mutex
	rng    *rand.Rand
	byKey  map[string]*Charge
	keysOf map[string]int  // payment id -> charges recorded for it
	madeBy []ChargeRequest // the request that created each charge, in order
	lost   map[string]bool // idempotency keys whose webhook was lost
	stats  ProviderStats
	served sync.WaitGroup
}

// StartProvider listens on cfg.Addr (default an ephemeral port of
// 127.0.0.1) and serves.
func StartProvider(cfg ProviderConfig) (*Provider, error) {
	ln, err := net.Listen("tcp", cmp.Or(cfg.Addr, "127.0.0.1:0"))
	if err != nil {
		return nil, fmt.Errorf("payment provider: listen: %w", err)
	}
	p := &Provider{
		cfg:   cfg,
		url:   "http://" + ln.Addr().String(),
		rng:   rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		byKey: map[string]*Charge{}, keysOf: map[string]int{}, lost: map[string]bool{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+ChargePath, p.handleCharge)
	mux.HandleFunc("GET "+ChargePath, p.handleLookup)
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	p.served.Add(1)
	go func() {
		defer p.served.Done()
		_ = p.srv.Serve(ln)
	}()
	return p, nil
}

// URL is the provider's base URL.
func (p *Provider) URL() string { return p.url }

// Stats returns a snapshot of the counters.
func (p *Provider) Stats() ProviderStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Close stops the server, abandoning stalled answers.
func (p *Provider) Close() error {
	err := p.srv.Close()
	p.served.Wait()
	if err != nil {
		return fmt.Errorf("payment provider: close: %w", err)
	}
	return nil
}

func (p *Provider) handleCharge(w http.ResponseWriter, r *http.Request) {
	req, err := decodeCharge(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	charge, delay, stall := p.record(req)
	if stall && p.cfg.OnStall != nil {
		p.cfg.OnStall(req)
	}
	if !wait(r.Context(), delay) {
		return // the caller hung up (or died) while we stalled
	}
	w.Header().Set("Content-Type", "application/json")
	if p.WebhookLost(req.IdempotencyKey) {
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(map[string]string{"status": "pending", "payment_id": req.PaymentID})
		return
	}
	if charge.Replayed {
		w.Header().Set(HeaderReplayed, "true")
	}
	_ = json.NewEncoder(w).Encode(charge)
}

// record stores the charge of a new key, or finds the original one, and
// decides the answer's delay.
func (p *Provider) record(req ChargeRequest) (Charge, time.Duration, bool) {
	stall := p.cfg.Stall != nil && p.cfg.Stall(req)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Requests++
	c, seen := p.byKey[req.IdempotencyKey]
	if seen {
		p.stats.Replays++
	} else {
		p.stats.Charges++
		if p.keysOf[req.PaymentID]++; p.keysOf[req.PaymentID] == 2 {
			p.stats.ChargedTwice++
		}
		p.madeBy = append(p.madeBy, req)
		if p.cfg.LoseWebhook != nil && p.cfg.LoseWebhook(req) {
			p.lost[req.IdempotencyKey] = true
			p.stats.WebhooksLost++
		}
		c = &Charge{
			ID: "ch_" + strconv.Itoa(p.stats.Charges), PaymentID: req.PaymentID, AmountCents: req.AmountCents,
			Currency: req.Currency, IdempotencyKey: req.IdempotencyKey,
		}
		p.byKey[req.IdempotencyKey] = c
	}
	answer := *c
	answer.Replayed = seen
	if stall {
		p.stats.Stalls++
		return answer, p.cfg.StallFor, true
	}
	return answer, p.latency(), false
}

// Made returns, for each charge recorded, the request that created it:
// which lease (owner, job, attempt) made the charge.
func (p *Provider) Made() []ChargeRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]ChargeRequest(nil), p.madeBy...)
}

// WebhookLost reports whether the provider lost the webhook of the charge
// of key: it answers it 202, and never tells the result.
func (p *Provider) WebhookLost(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lost[key]
}

// latency draws a normal response time; p.mu is held.
func (p *Provider) latency() time.Duration {
	lo, hi := p.cfg.MinLatency, p.cfg.MaxLatency
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(p.rng.Int64N(int64(hi-lo)))
}

// wait sleeps d unless ctx ends first; it reports whether d passed.
func wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

var errNoKey = errors.New("missing " + HeaderIdempotencyKey + " header")

func decodeCharge(r *http.Request) (ChargeRequest, error) {
	var req ChargeRequest
	if err := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<16)).Decode(&req); err != nil {
		return req, fmt.Errorf("bad charge body: %w", err)
	}
	req.IdempotencyKey = r.Header.Get(HeaderIdempotencyKey)
	if req.IdempotencyKey == "" {
		return req, errNoKey
	}
	if req.PaymentID == "" || req.AmountCents <= 0 {
		return req, errors.New("payment_id and a positive amount_cents are required")
	}
	req.Owner = r.Header.Get(HeaderOwner)
	req.JobID, _ = strconv.ParseInt(r.Header.Get(HeaderJobID), 10, 64)
	req.Attempt, _ = strconv.Atoi(r.Header.Get(HeaderAttempt))
	return req, nil
}
