package payments

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// LookupParam is the query parameter of a lookup by idempotency key:
// GET ChargePath?idempotency_key=K answers the charge recorded for K, or
// 404 when there is none.
const LookupParam = "idempotency_key"

// handleLookup answers the charge recorded for an idempotency key: what a
// reconciler asks when it does not know whether a charge went through.
func (p *Provider) handleLookup(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get(LookupParam)
	if key == "" {
		http.Error(w, "missing "+LookupParam, http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.stats.Lookups++
	c, ok := p.byKey[key]
	var answer Charge
	if ok {
		answer = *c
	}
	p.mu.Unlock()
	if !ok {
		http.Error(w, "no charge for this key", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer)
}

// Lookup asks the provider for the charge recorded under key: the charge,
// or nil when the provider has none.
func (c *ProviderClient) Lookup(ctx context.Context, key string) (*Charge, error) {
	u := c.base + ChargePath + "?" + url.Values{LookupParam: {key}}.Encode()
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("lookup request: %w", err)
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("lookup %s: %w", key, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return nil, nil
	default:
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("lookup %s: provider answered %s: %s", key, resp.Status, msg)
	}
	var ch Charge
	if err := json.NewDecoder(resp.Body).Decode(&ch); err != nil {
		return nil, fmt.Errorf("lookup %s: decode answer: %w", key, err)
	}
	return &ch, nil
}
