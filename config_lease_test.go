package leasehold

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestConfigTinyLeaseTTLNamed: a LeaseTTL in nanoseconds (an untyped
// constant meant as seconds) is refused with an error about LeaseTTL, not
// about the fields that default to fractions of it.
func TestConfigTinyLeaseTTLNamed(t *testing.T) {
	for _, ttl := range []time.Duration{2, 5, 30} {
		_, err := NewClient(Config{Driver: nopDriver{}, LeaseTTL: ttl})
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "LeaseTTL "+ttl.String()+" is below MinLeaseTTL") {
			t.Errorf("LeaseTTL %v: got %v, want ErrInvalidConfig saying LeaseTTL is below MinLeaseTTL", ttl, err)
		}
	}
}

// TestConfigSafetyMarginFloor: a LeaseSafetyMargin below
// MinLeaseSafetyMargin, shorter than the watchdog can be relied on to
// wake in, is refused; MinLeaseSafetyMargin itself is accepted.
func TestConfigSafetyMarginFloor(t *testing.T) {
	for _, m := range []time.Duration{time.Nanosecond, 20 * time.Microsecond, time.Millisecond, MinLeaseSafetyMargin - 1} {
		_, err := NewClient(Config{Driver: nopDriver{}, LeaseTTL: MinLeaseTTL, LeaseSafetyMargin: m})
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "below MinLeaseSafetyMargin") {
			t.Errorf("LeaseSafetyMargin %v: got %v, want ErrInvalidConfig saying it is below MinLeaseSafetyMargin", m, err)
		}
	}
	if _, err := NewClient(Config{Driver: nopDriver{}, LeaseTTL: MinLeaseTTL, LeaseSafetyMargin: MinLeaseSafetyMargin}); err != nil {
		t.Errorf("LeaseSafetyMargin MinLeaseSafetyMargin: %v, want it accepted", err)
	}
}
