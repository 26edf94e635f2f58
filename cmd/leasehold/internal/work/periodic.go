package work

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/leasehold/leasehold"
)

// PeriodicMetadata is the metadata of the jobs of a schedule given with
// ParsePeriodic: the schedule's name and the job's slot.
type PeriodicMetadata struct {
	Periodic string    `json:"periodic"`
	Slot     time.Time `json:"slot"`
}

// ParsePeriodic parses a schedule given as NAME=SPEC:KIND, where SPEC is
// a cron expression (five or six fields, a descriptor such as @hourly or
// @every 10s, optionally after CRON_TZ=Zone, a named zone rather than
// Local, which leasehold.Cron refuses) read in UTC, and KIND the kind
// of its jobs (a name leasehold.ValidateKind accepts), inserted into
// queue with empty arguments and PeriodicMetadata. A cron expression has
// no colon, so the first colon after the = ends it.
func ParsePeriodic(s, queue string) (leasehold.PeriodicJob, error) {
	name, rest, ok := strings.Cut(s, "=")
	spec, kind, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || name == "" || spec == "" || kind == "" {
		return leasehold.PeriodicJob{}, fmt.Errorf("%q: want NAME=SPEC:KIND, such as tick=@every 1s:leasehold.sleep", s)
	}
	if err := leasehold.ValidatePeriodicName(name); err != nil {
		return leasehold.PeriodicJob{}, err
	}
	if err := leasehold.ValidateKind(kind); err != nil {
		return leasehold.PeriodicJob{}, kindError(err)
	}
	sched, err := leasehold.Cron(spec, nil)
	if err != nil {
		return leasehold.PeriodicJob{}, err
	}
	return leasehold.PeriodicJob{Name: name, Schedule: sched, Args: func(slot time.Time) (leasehold.Args, *leasehold.InsertOpts) {
		return leasehold.RawArgs{KindName: kind}, &leasehold.InsertOpts{Queue: queue, Metadata: periodicMetadata(name, slot)}
	}}, nil
}

// kindError returns err, the refusal of a schedule's kind by
// leasehold.ValidateKind, with a reason that says it is the kind.
func kindError(err error) error {
	var bad *leasehold.InvalidInputError
	if !errors.As(err, &bad) {
		return fmt.Errorf("kind: %w", err)
	}
	named := *bad
	named.Reason = "kind " + bad.Reason
	return &named
}

// periodicMetadata is the metadata of the job of a slot of the schedule
// name.
func periodicMetadata(name string, slot time.Time) []byte {
	md, _ := json.Marshal(PeriodicMetadata{Periodic: name, Slot: slot.UTC()}) // cannot fail
	return md
}

// periodicNames returns the names of jobs, for the log.
func periodicNames(jobs []leasehold.PeriodicJob) []string {
	names := make([]string, len(jobs))
	for i, j := range jobs {
		names[i] = j.Name
	}
	return names
}
