package leasehold

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
)

// nopDriver satisfies Config.Driver for validation tests that never reach
// a database.
type nopDriver struct{ driver.Driver }

func TestConfigDefaults(t *testing.T) {
	c, err := NewClient(Config{Driver: nopDriver{}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.cfg
	if cfg.LeaseTTL != DefaultLeaseTTL || cfg.HeartbeatInterval != DefaultLeaseTTL/3 ||
		cfg.LeaseSafetyMargin != DefaultLeaseTTL/6 || cfg.WatcherInterval != DefaultWatcherInterval ||
		cfg.PollInterval != DefaultPollInterval || cfg.ShutdownTimeout != DefaultShutdownTimeout ||
		cfg.Queues[DefaultQueue].MaxWorkers != DefaultMaxWorkers || cfg.DefaultMaxAttempts != DefaultMaxAttempts {
		t.Fatalf("defaults not applied: %+v", cfg)
	}
	if !strings.Contains(c.Owner(), "-") {
		t.Fatalf("owner %q: want host-pid-suffix", c.Owner())
	}
}

func TestConfigRejectsImpossibleSettings(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no driver", Config{}, "Driver is required"},
		{"negative ttl", Config{LeaseTTL: -time.Second}, "LeaseTTL must be positive"},
		{"ttl of a millisecond", Config{LeaseTTL: time.Millisecond}, "below MinLeaseTTL"},
		{"ttl just below the minimum", Config{LeaseTTL: MinLeaseTTL - time.Microsecond}, "below MinLeaseTTL"},
		{"heartbeat not below ttl", Config{LeaseTTL: 10 * time.Second, HeartbeatInterval: 10 * time.Second}, "at most half"},
		{"heartbeat above ttl/2", Config{LeaseTTL: 10 * time.Second, HeartbeatInterval: 6 * time.Second}, "at most half"},
		{"margin eats the renewal", Config{LeaseTTL: 10 * time.Second, HeartbeatInterval: 5 * time.Second, LeaseSafetyMargin: 5 * time.Second}, "below LeaseTTL - LeaseSafetyMargin"},
		{"negative poll", Config{PollInterval: -1}, "PollInterval must be positive"},
		{"negative watcher", Config{WatcherInterval: -time.Minute}, "WatcherInterval must be positive"},
		{"negative shutdown", Config{ShutdownTimeout: -1}, "ShutdownTimeout must be positive"},
		{"bad queue", Config{Queues: map[string]QueueConfig{"bad queue": {}}}, "invalid queue name"},
		{"negative workers", Config{Queues: map[string]QueueConfig{"q": {MaxWorkers: -1}}}, "MaxWorkers"},
		{"negative attempts", Config{DefaultMaxAttempts: -1}, "DefaultMaxAttempts"},
		{"owner with nul", Config{Owner: "w\x00"}, "Owner must be"},
		{"owner with newline", Config{Owner: "w1\nw2"}, "Owner must be"},
		{"owner not utf-8", Config{Owner: "w\xff"}, "Owner must be"},
		{"owner too long", Config{Owner: strings.Repeat("w", MaxOwnerBytes+1)}, "Owner must be"},
		{"flag and reconcile", Config{Queues: map[string]QueueConfig{"q": {FlagStuck: true, Reconcile: &ReconcilePolicy{}}}}, "exclude each other"},
		{"reconcile into a reconciling queue", Config{Queues: map[string]QueueConfig{
			"q": {Reconcile: &ReconcilePolicy{Queue: "r"}}, "r": {Reconcile: &ReconcilePolicy{Queue: "q"}}}}, "reconciles too"},
		{"reconcile into itself", Config{Queues: map[string]QueueConfig{"q": {Reconcile: &ReconcilePolicy{Queue: "q"}}}}, "reconciles too"},
		{"bad reconcile queue", Config{Queues: map[string]QueueConfig{"q": {Reconcile: &ReconcilePolicy{Queue: "bad queue"}}}}, "Reconcile.Queue"},
		{"bad reconcile kind", Config{Queues: map[string]QueueConfig{"q": {Reconcile: &ReconcilePolicy{Kind: "-x"}}}}, "Reconcile.Kind"},
		{"negative reconcile attempts", Config{Queues: map[string]QueueConfig{"q": {Reconcile: &ReconcilePolicy{MaxAttempts: -1}}}}, "Reconcile.MaxAttempts"},
		{"negative reconcile priority", Config{Queues: map[string]QueueConfig{"q": {Reconcile: &ReconcilePolicy{Priority: -1}}}}, "Reconcile.Priority"},
		{"reconcile priority too high", Config{Queues: map[string]QueueConfig{"q": {Reconcile: &ReconcilePolicy{Priority: MaxPriority + 1}}}}, "Reconcile.Priority"},
		{"reconcile priority past int32", Config{Queues: map[string]QueueConfig{"q": {Reconcile: &ReconcilePolicy{Priority: 1<<31 + 3}}}}, "Reconcile.Priority"},
		{"attempts no insert accepts", Config{DefaultMaxAttempts: MaxMaxAttempts + 1}, "DefaultMaxAttempts must be in 1..10000"},
		{"reconcile attempts no insert accepts", Config{Queues: map[string]QueueConfig{"q": {Reconcile: &ReconcilePolicy{MaxAttempts: 1e9}}}}, "Reconcile.MaxAttempts"},
		{"watcher spinning", Config{WatcherInterval: time.Nanosecond}, "WatcherInterval 1ns is below MinInterval"},
		{"heartbeat spinning", Config{HeartbeatInterval: time.Microsecond}, "HeartbeatInterval 1µs is below MinInterval"},
		{"poll spinning", Config{PollInterval: time.Nanosecond}, "PollInterval 1ns is below MinInterval"},
		{"nil insert middleware", Config{InsertMiddleware: []InsertMiddleware{nil}}, "InsertMiddleware[0] is nil"},
		{"nil work middleware", Config{WorkMiddleware: []WorkMiddleware{nil}}, "WorkMiddleware[0] is nil"},
		{"nil insert middleware func", Config{InsertMiddleware: []InsertMiddleware{InsertMiddlewareFunc(nil)}}, "InsertMiddleware[0] is nil"},
		{"nil work middleware func", Config{WorkMiddleware: []WorkMiddleware{WorkMiddlewareFunc(nil)}}, "WorkMiddleware[0] is nil"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name != "no driver" {
				tc.cfg.Driver = nopDriver{}
			}
			_, err := NewClient(tc.cfg)
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewClient = %v; want ErrInvalidConfig mentioning %q", err, tc.want)
			}
		})
	}
}

// TestConfigAcceptsMinLeaseTTL: a TTL of MinLeaseTTL, with the default
// heartbeat and margin, is accepted.
func TestConfigAcceptsMinLeaseTTL(t *testing.T) {
	if _, err := NewClient(Config{Driver: nopDriver{}, LeaseTTL: MinLeaseTTL}); err != nil {
		t.Fatalf("NewClient with LeaseTTL MinLeaseTTL = %v, want it accepted", err)
	}
}

type sizedArgs struct {
	Data string `json:"data"`
}

func (sizedArgs) Kind() string { return "sized" }

type badKind struct{}

func (badKind) Kind() string { return "" }

type unencodable struct {
	C chan int `json:"c"`
}

func (unencodable) Kind() string { return "unencodable" }

func TestInsertValidation(t *testing.T) {
	c, err := NewClient(Config{Driver: nopDriver{}, MaxPayloadBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args Args
		opts *InsertOpts
		want error
	}{
		{"empty kind", badKind{}, nil, ErrInvalidKind},
		{"nil args", nil, nil, ErrInvalidArgs},
		{"unencodable", unencodable{}, nil, ErrInvalidArgs},
		{"too large", sizedArgs{Data: strings.Repeat("x", 100)}, nil, ErrPayloadTooLarge},
		{"raw not object", RawArgs{KindName: "k", JSON: []byte(`[1]`)}, nil, ErrInvalidArgs},
		{"bad queue", sizedArgs{}, &InsertOpts{Queue: "no spaces"}, ErrInvalidQueue},
		{"negative priority", sizedArgs{}, &InsertOpts{Priority: -1}, ErrInvalidArgs},
		{"negative attempts", sizedArgs{}, &InsertOpts{MaxAttempts: -3}, ErrInvalidArgs},
		{"run at and in", sizedArgs{}, &InsertOpts{RunAt: time.Now(), RunIn: time.Second}, ErrInvalidArgs},
		{"negative run in", sizedArgs{}, &InsertOpts{RunIn: -time.Second}, ErrInvalidArgs},
		{"bad metadata", sizedArgs{}, &InsertOpts{Metadata: []byte(`{`)}, ErrInvalidArgs},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.buildInsert(tc.args, tc.opts); !errors.Is(err, tc.want) {
				t.Fatalf("buildInsert = %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := c.buildInsert(sizedArgs{Data: "ok"}, nil); err != nil {
		t.Fatalf("valid insert rejected: %v", err)
	}
}

func TestExponentialBackoff(t *testing.T) {
	b := &ExponentialBackoff{Base: time.Second, Max: time.Minute}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 7: time.Minute, 100: time.Minute} {
		if got := b.NextRetry(&JobRow{Attempt: n}, nil); got != want {
			t.Errorf("attempt %d: %v, want %v", n, got, want)
		}
	}
	if got := b.NextRetry(&JobRow{Attempt: 5, FreeAttempts: 3}, nil); got != 2*time.Second {
		t.Errorf("free attempts are not charged: got %v, want 2s", got)
	}
	j := DefaultRetryPolicy()
	for range 100 {
		if d := j.NextRetry(&JobRow{Attempt: 3}, nil); d > 4*time.Second || d < 3200*time.Millisecond {
			t.Fatalf("jittered delay %v outside [3.2s, 4s]", d)
		}
	}
	for _, b := range []*ExponentialBackoff{
		{Base: time.Second, Max: time.Minute, Jitter: 5},   // jitter past 1: up to the whole delay, no more
		{Base: time.Second, Max: -time.Minute, Jitter: 0},  // a negative Max: no delay
		{Base: -time.Second, Max: -time.Second, Jitter: 1}, // both negative
	} {
		for range 100 {
			if d := b.NextRetry(&JobRow{Attempt: 3}, nil); d < 0 || d > 4*time.Second {
				t.Fatalf("%+v: delay %v outside [0, 4s]", *b, d)
			}
		}
	}
}

// TestExponentialBackoffNoWrap: once Base * 2^(n-1) passes Max the delay
// is Max at every later attempt, also where the doubling passes 2^63 and
// would wrap to a value below Max (a Base of 33.286 s wraps to 16h29m at
// the 35th charged attempt).
func TestExponentialBackoffNoWrap(t *testing.T) {
	for _, b := range []*ExponentialBackoff{
		{Base: 33286 * time.Millisecond, Max: 24 * time.Hour},
		{Base: 3531 * time.Second, Max: 168 * time.Hour},
		{Base: 1, Max: time.Duration(1<<63 - 1)},
	} {
		over := false
		for n := 1; n <= 100; n++ {
			d := b.NextRetry(&JobRow{Attempt: n, MaxAttempts: 100}, nil)
			if over && d != b.Max {
				t.Errorf("%+v: charged attempt %d waits %v after earlier ones waited Max", *b, n, d)
			}
			over = over || d == b.Max
			if d < 0 || d > b.Max {
				t.Errorf("%+v: charged attempt %d waits %v, outside [0, Max]", *b, n, d)
			}
		}
		if !over {
			t.Errorf("%+v: never reached Max in 100 attempts", *b)
		}
	}
}

// TestClientQueues: Queues names the configured queues, sorted, and the
// default one when the config names none.
func TestClientQueues(t *testing.T) {
	for _, tc := range []struct {
		queues map[string]QueueConfig
		want   []string
	}{
		{nil, []string{DefaultQueue}},
		{map[string]QueueConfig{"mail": {}, "billing": {MaxWorkers: 3}}, []string{"billing", "mail"}},
	} {
		c, err := NewClient(Config{Driver: nopDriver{}, Queues: tc.queues})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Queues(); !slices.Equal(got, tc.want) {
			t.Errorf("Queues() of %v = %v, want %v", tc.queues, got, tc.want)
		}
	}
}

// TestValidateOwner: the exported check refuses what Config refuses, with
// an *InvalidInputError matching ErrInvalidConfig, and accepts the rest.
func TestValidateOwner(t *testing.T) {
	for _, o := range []string{"w\x00", "w1\nw2", "w\xff", strings.Repeat("x", MaxOwnerBytes+1)} {
		err := ValidateOwner(o)
		var bad *InvalidInputError
		if !errors.Is(err, ErrInvalidConfig) || !errors.As(err, &bad) || bad.Field != "owner" {
			t.Errorf("ValidateOwner(%q) = %v, want an *InvalidInputError matching ErrInvalidConfig", o, err)
		}
	}
	for _, o := range []string{"", "host-1-abc", strings.Repeat("x", MaxOwnerBytes)} {
		if err := ValidateOwner(o); err != nil {
			t.Errorf("ValidateOwner(%q) = %v, want nil", o, err)
		}
	}
}
