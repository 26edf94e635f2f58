package chaos

import "github.com/leasehold/leasehold/cmd/leasehold/internal/fleet"

// A worker process writes one JSON message per line on its standard
// output (see fleet.Emitter): its counters as the fleet's reports, which
// carry its database calls too, and these messages of the harness's own.
const (
	msgRefused = "refused" // a CompleteTx refused by the fence
	msgRenewed = "renewed" // leases a heartbeat renewed
)

// message is one line of a worker's output. Type selects the fields used.
type message struct {
	fleet.Report
	// Calls: with the reports (fleet.TypeReport, fleet.TypeFinal).
	Calls *CallStats `json:"calls,omitempty"`
	// Job and Attempt: refused.
	Job     int64 `json:"job,omitempty"`
	Attempt int   `json:"attempt,omitempty"`
	// AtLeast and Leases: renewed. AtLeast is a database time (Unix µs)
	// read before the heartbeat was sent: each lease in Leases (job id,
	// attempt) was renewed to at least AtLeast + TTL.
	AtLeast int64      `json:"at_least_us,omitempty"`
	Leases  [][2]int64 `json:"leases,omitempty"`
}

// CallStats count a worker's database calls as its driver saw them.
type CallStats struct {
	// OK counts calls that succeeded; LastOK is the worker's local wall
	// time (Unix ns) of the latest success. Orchestrator and workers share
	// a host, so it is compared with the orchestrator's own clock, never
	// with the database's.
	OK     int64 `json:"ok"`
	LastOK int64 `json:"last_ok_unix_ns"`
	// Errors by call: claims, heartbeats, finishes (the completer's and
	// CompleteTx's) and watcher passes.
	ClaimErrors     int64 `json:"claim_errors"`
	HeartbeatErrors int64 `json:"heartbeat_errors"`
	FinishErrors    int64 `json:"finish_errors"`
	RescueErrors    int64 `json:"rescue_errors"`
	// Refused counts CompleteTx calls the fence refused.
	Refused int64 `json:"refused"`
	// ClaimLatency, ProbeLatency and RescueLatency count the durations of
	// the claims, the probes for queues with work and the watcher's
	// passes, in the buckets of latencyBounds.
	ClaimLatency  []int64 `json:"claim_latency,omitempty"`
	ProbeLatency  []int64 `json:"probe_latency,omitempty"`
	RescueLatency []int64 `json:"rescue_latency,omitempty"`
}

// Errors is the total of failed calls.
func (c CallStats) Errors() int64 {
	return c.ClaimErrors + c.HeartbeatErrors + c.FinishErrors + c.RescueErrors
}
