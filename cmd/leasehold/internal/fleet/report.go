package fleet

import (
	"encoding/json"
	"io"
	"sync"

	"github.com/leasehold/leasehold/view"
)

// A worker writes one JSON value per line on its standard output; the
// fleet reads them as they come, so what a worker said before it was
// killed is kept. The counters travel as Reports of these types; a tool
// may add lines of its own types (see Spec.OnLine).
const (
	TypeReport = "report" // periodic counters
	TypeFinal  = "final"  // counters at a graceful stop
)

// Report is a line of counters. A tool's own messages may embed it.
type Report struct {
	Type  string          `json:"type"`
	Stats *view.StatsView `json:"stats,omitempty"`
}

// Emitter writes a worker's lines, one JSON value each, straight to its
// output: no buffering, so that a line written is read even if the worker
// is killed a moment later. It is safe for concurrent use.
type Emitter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

// NewEmitter returns an Emitter writing to w.
func NewEmitter(w io.Writer) *Emitter { return &Emitter{enc: json.NewEncoder(w)} }

// Emit writes v as one line. An error is dropped: the reader is gone, and
// a worker has nobody else to tell.
func (e *Emitter) Emit(v any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	_ = e.enc.Encode(v)
}

// EmitStats writes the counters s as a Report of type typ.
func (e *Emitter) EmitStats(typ string, s view.StatsView) { e.Emit(Report{Type: typ, Stats: &s}) }
