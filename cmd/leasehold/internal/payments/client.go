package payments

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/leasehold/leasehold"
)

// ErrAwaitingWebhook reports a charge the provider accepted without
// answering its result: it comes later by webhook. The payment stays
// pending until then; if the webhook is lost, only reconciliation (a
// lookup by the idempotency key) finds out that it was charged.
var ErrAwaitingWebhook = errors.New("charge accepted: the result comes by webhook")

// ProviderClient calls a payment provider's charge endpoint.
type ProviderClient struct {
	base string
	http *http.Client
}

// NewProviderClient returns a client for the provider at baseURL. A nil
// hc uses a client without an overall timeout: the caller's context (the
// job's lease) bounds every call.
func NewProviderClient(baseURL string, hc *http.Client) (*ProviderClient, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("payment provider URL %q: want http://host:port", baseURL)
	}
	if hc == nil {
		hc = &http.Client{}
	}
	return &ProviderClient{base: u.String(), http: hc}, nil
}

// Charge asks the provider to charge req. A repeated idempotency key
// returns the original charge (Replayed set). A 4xx answer is a permanent
// error; network errors and 5xx answers can be retried.
func (c *ProviderClient) Charge(ctx context.Context, req ChargeRequest) (*Charge, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode charge: %w", err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+ChargePath, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("charge request: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set(HeaderIdempotencyKey, req.IdempotencyKey)
	hr.Header.Set(HeaderOwner, req.Owner)
	hr.Header.Set(HeaderJobID, strconv.FormatInt(req.JobID, 10))
	hr.Header.Set(HeaderAttempt, strconv.Itoa(req.Attempt))
	resp, err := c.http.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("charge %s: %w", req.PaymentID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusAccepted {
		return nil, fmt.Errorf("charge %s: %w", req.PaymentID, ErrAwaitingWebhook)
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		err := fmt.Errorf("charge %s: provider answered %s: %s", req.PaymentID, resp.Status, bytes.TrimSpace(msg))
		if resp.StatusCode >= 400 && resp.StatusCode < 500 {
			return nil, leasehold.Permanent(err)
		}
		return nil, err
	}
	var ch Charge
	if err := json.NewDecoder(resp.Body).Decode(&ch); err != nil {
		return nil, fmt.Errorf("charge %s: decode answer: %w", req.PaymentID, err)
	}
	return &ch, nil
}
