// Package view is the operator's view of leasehold's jobs, leases,
// attempts and queues: the shapes the leasehold command prints with --json
// and the dashboard renders. Each view is built from the root package's
// values by a New… function, with "now" taken from the database clock;
// nothing here reads a database, so a view is the same whoever renders it.
// Times are written in UTC, whatever the location a driver read them in.
//
// The JSON names of the fields are a stable contract: scripts and pages
// read them. A field may be added; none is renamed, retyped or removed.
package view
