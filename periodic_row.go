package leasehold

import "github.com/leasehold/leasehold/leasetype"

// PeriodicRow is one schedule as the database records it: its spec, kind
// and queue, its last slot and that slot's job, and its next slot (see
// Client.ListPeriodic).
type PeriodicRow = leasetype.PeriodicRow
