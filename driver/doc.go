// Package driver is the service-provider interface between a leasehold
// client and a database: the Driver interface that pgdriver (PostgreSQL)
// and sqlitedriver (SQLite) implement, and the params and results of its
// methods. Applications never call it; they pass a driver to
// leasehold.Config and use the client.
//
// Every method but Close and FinishLinger takes a context. A method with
// several inputs takes them, beside the caller's transaction where it has
// one (tx), in a pointer to a params struct (or a slice of them), so that
// fields can be added without breaking implementations; one whose only
// input is a job id, a queue or periodic name, a duration, a callback or
// a slice of lease references (GetJob, CancelJob, DeleteJob, ListAttempts,
// Checkpoints, PauseQueue, ResumeQueue, PeriodicDelete, Throughput,
// Listen, EndedAttempts) takes it as a plain argument. The conformance
// suite in package drivertest checks every rule stated here, each under
// the name of the invariant it guards (see docs/design.md).
package driver
