package leasehold

import (
	"os"
	"strings"
	"testing"
	"time"
)

// The documented span of the default retry schedule: the sum of the
// DefaultMaxAttempts-1 delays at their shortest (full jitter) and longest
// (no jitter).
const (
	documentedRetryMin = 6*time.Hour + 30*time.Minute + 36*time.Second
	documentedRetryMax = 8*time.Hour + 8*time.Minute + 15*time.Second
)

// defaultRetrySpan returns the bounds of the total wait of a job that
// fails every one of its DefaultMaxAttempts attempts under
// DefaultRetryPolicy: each delay d*(1 - Jitter*r), r in [0, 1), lies in
// (d*(1-Jitter), d].
func defaultRetrySpan() (lo, hi time.Duration) {
	p := DefaultRetryPolicy()
	exact := *p
	exact.Jitter = 0
	for n := 1; n < DefaultMaxAttempts; n++ {
		d := exact.NextRetry(&JobRow{Attempt: n}, nil)
		hi += d
		lo += time.Duration(float64(d) * (1 - p.Jitter))
	}
	return lo, hi
}

func TestDefaultRetrySpanMatchesDocs(t *testing.T) {
	lo, hi := defaultRetrySpan()
	if lo != documentedRetryMin || hi != documentedRetryMax {
		t.Fatalf("default retry schedule spans %v to %v; the docs say %v to %v", lo, hi, documentedRetryMin, documentedRetryMax)
	}
	for _, file := range []string{"README.md", "retry.go"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(strings.ReplaceAll(string(b), "//", "")), " ")
		want := "between " + lo.String() + " and " + hi.String()
		if !strings.Contains(text, want) {
			t.Errorf("%s does not state the default retry span %q", file, want)
		}
	}
}

func TestDefaultRetryDelaysStayInDocumentedBounds(t *testing.T) {
	p := DefaultRetryPolicy()
	exact := *p
	exact.Jitter = 0
	var sumLo, sumHi time.Duration
	for n := 1; n < DefaultMaxAttempts; n++ {
		row := &JobRow{Attempt: n}
		d := exact.NextRetry(row, nil)
		least, most := d, time.Duration(0)
		for range 2000 {
			got := p.NextRetry(row, nil)
			// One nanosecond of slack for the float rounding of d*(1-Jitter*r).
			if got > d || float64(got) < float64(d)*(1-p.Jitter)-1 {
				t.Fatalf("attempt %d: delay %v outside (%v, %v]", n, got, time.Duration(float64(d)*(1-p.Jitter)), d)
			}
			least, most = min(least, got), max(most, got)
		}
		sumLo += least
		sumHi += most
	}
	if sumLo < documentedRetryMin-time.Microsecond || sumHi > documentedRetryMax {
		t.Fatalf("sampled delays add up to %v..%v, outside the documented %v..%v", sumLo, sumHi, documentedRetryMin, documentedRetryMax)
	}
}
