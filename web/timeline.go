package web

import (
	"time"

	"github.com/leasehold/leasehold/view"
)

// The lease timeline's geometry, in SVG user units.
const (
	tlLabel  = 170 // width of the label column
	tlWidth  = 900 // whole drawing
	tlRow    = 36  // height of one attempt's row
	tlBar    = 18  // height of a bar
	tlTop    = 26  // room for the axis labels
	tlMinBar = 2   // the narrowest bar drawn
)

// tipText is how many characters of an attempt's error and resolution its
// bar's tooltip shows: a tooltip has no room for the up to
// leasehold.MaxErrorText of an error, which the history table below shows
// whole.
const tipText = 200

// timeline is one job's attempt history drawn to scale: one bar per
// attempt, from claim to end.
type timeline struct {
	Width, Height int
	Ticks         []tick
	Bars          []bar
	// Span is the time the drawing covers.
	Span string
}

// tick is one label of the time axis.
type tick struct {
	X     float64
	Label string
	// Anchor aligns the label: start, middle or end (the axis's ends stay
	// inside the drawing).
	Anchor string
}

// bar is one attempt.
type bar struct {
	view.AttemptView
	// ErrorTip and ResolutionTip are the error and the resolution cut to
	// tipText characters, for the tooltip.
	ErrorTip, ResolutionTip string
	Y, TextY, MidY, BottomY float64
	// X, W are the held part: from the claim to the last heartbeat (or to
	// the end, or to now while a lease not yet expired runs).
	X, W float64
	// TailX, TailW is the rest: the unrenewed end of an expired or lost
	// lease, or of a current lease expired and not yet rescued, up to now
	// (hatched), or the time a running lease is granted for (outlined);
	// TailW is 0 when there is none.
	TailX, TailW float64
	TailClass    string
	// HeartbeatX is the last renewal's mark, or negative when none.
	HeartbeatX float64
	// FenceX marks where the lease ended and every later write by its
	// owner is refused by the fence; negative for an attempt that ended
	// by its own write.
	FenceX float64
	// ExpiryX marks where the current lease expired when it has and
	// nobody (the watcher or a claim taking it over) has ended it yet;
	// negative otherwise.
	ExpiryX float64
	// Holds is set for the attempt holding the job's lease, the one
	// whose owner the jobs list's owner filter finds the job by.
	Holds bool
	// TakenOverBy names the next attempt's owner when the lease expired or
	// was lost and another claim took the job.
	TakenOverBy string
	// EndX is where the bar ends, for the takeover's connector.
	EndX, NextX, NextY float64
}

// leaseEnded reports whether an outcome is a lease that ran out rather
// than a write by its owner.
func leaseEnded(outcome string) bool {
	return outcome == "lease_expired" || outcome == "lease_lost"
}

// newTimeline draws the attempts of job j (those the page shows); now is
// the database clock.
func newTimeline(j view.JobInfoView, now time.Time) *timeline {
	if len(j.Attempts) == 0 {
		return nil
	}
	start, end := span(j, now)
	scale := float64(tlWidth-tlLabel-10) / float64(end.Sub(start))
	x := func(t time.Time) float64 { return tlLabel + float64(t.Sub(start))*scale }
	tl := &timeline{Width: tlWidth, Height: tlTop + tlRow*len(j.Attempts) + 4, Span: ago(end.Sub(start))}
	for i := range 5 {
		d := end.Sub(start) * time.Duration(i) / 4
		tl.Ticks = append(tl.Ticks, tick{X: x(start.Add(d)), Label: "+" + ago(d), Anchor: [...]string{"start", "middle", "middle", "middle", "end"}[i]})
	}
	for i, a := range j.Attempts {
		tl.Bars = append(tl.Bars, newBar(j, i, a, now, x))
	}
	for i := range tl.Bars[:len(tl.Bars)-1] {
		b, next := &tl.Bars[i], tl.Bars[i+1]
		if leaseEnded(b.Outcome) {
			b.TakenOverBy, b.NextX, b.NextY = next.Owner, next.X, next.MidY
		}
	}
	return tl
}

// span returns the times the drawing covers: the first claim to the last
// end, or to now (or the running lease's end) while the job runs.
func span(j view.JobInfoView, now time.Time) (time.Time, time.Time) {
	start, end := j.Attempts[0].ClaimedAt, j.Attempts[0].ClaimedAt
	for _, a := range j.Attempts {
		e := now
		if a.EndedAt != nil {
			e = *a.EndedAt
		}
		end = later(end, e)
	}
	if j.Lease != nil {
		end = later(end, j.Lease.Until)
	}
	if !end.After(start) {
		end = start.Add(time.Millisecond)
	}
	return start, end
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// newBar places attempt i (a) of j.
func newBar(j view.JobInfoView, i int, a view.AttemptView, now time.Time, x func(time.Time) float64) bar {
	y := float64(tlTop + i*tlRow)
	b := bar{AttemptView: a, ErrorTip: short(tipText, a.Error), ResolutionTip: short(tipText, a.Resolution), Y: y, TextY: y + tlBar - 4, MidY: y + tlBar/2, BottomY: y + tlBar, HeartbeatX: -1, FenceX: -1, ExpiryX: -1}
	b.X = x(a.ClaimedAt)
	end := now
	if a.EndedAt != nil {
		end = *a.EndedAt
	}
	b.EndX = x(end)
	held := end
	current := a.EndedAt == nil && j.Lease != nil && j.Attempt == a.Attempt
	b.Holds = current && j.Lease.Owner == a.Owner
	switch {
	case current && j.Lease.Until.After(now):
		b.TailX, b.TailW, b.TailClass = b.EndX, x(j.Lease.Until)-b.EndX, "granted"
	case current:
		// Expired, and not yet rescued by the watcher or taken over by
		// a claim: nobody renewed it after its last heartbeat, and no
		// fence has ended it yet.
		held = lastRenewal(a)
		b.TailX, b.TailW, b.TailClass = x(held), b.EndX-x(held), "unrenewed"
		b.ExpiryX = x(j.Lease.Until)
	case leaseEnded(a.Outcome):
		held = lastRenewal(a)
		b.TailX, b.TailW, b.TailClass = x(held), b.EndX-x(held), "unrenewed"
		b.FenceX = b.EndX
	}
	b.W = max(x(held)-b.X, tlMinBar)
	if b.TailW < 0 {
		b.TailW = 0
	}
	if a.HeartbeatAt != nil {
		b.HeartbeatX = x(*a.HeartbeatAt)
	}
	return b
}

// lastRenewal returns when a's lease was last renewed: its last
// heartbeat, or its claim when it had none.
func lastRenewal(a view.AttemptView) time.Time {
	if a.HeartbeatAt != nil {
		return *a.HeartbeatAt
	}
	return a.ClaimedAt
}
