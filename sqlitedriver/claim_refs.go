package sqlitedriver

import (
	"strconv"

	"github.com/leasehold/leasehold"
)

// claimRefs encodes the [id, attempt] of the claimed jobs that keep
// accepts (all of them for a nil keep) as a JSON array, and reports
// whether it holds any. The statements that follow a claim skip the jobs
// they cannot change: a batch of fresh jobs then costs one of them, not
// three.
func claimRefs(jobs []*leasehold.JobRow, keep func(*leasehold.JobRow) bool) (string, bool) {
	b := make([]byte, 0, 2+24*len(jobs))
	b = append(b, '[')
	n := 0
	for _, j := range jobs {
		if keep != nil && !keep(j) {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, '[')
		b = strconv.AppendInt(b, j.ID, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(j.Attempt), 10)
		b = append(b, ']')
	}
	return string(append(b, ']')), n > 0
}

// mayHaveOpenAttempt reports whether the claim of j may have taken over a
// lease whose attempt is still open: only a job claimed before can have
// one (attempts are numbered from 1).
func mayHaveOpenAttempt(j *leasehold.JobRow) bool { return j.Attempt > 1 }

// hasHeartbeat reports whether j, as the claim returned it, still carries
// a heartbeat of an earlier lease, which resetHeartbeatSQL clears.
func hasHeartbeat(j *leasehold.JobRow) bool { return !j.HeartbeatAt.IsZero() }
