// Package engine runs a leasehold client's leases: the producer claims
// jobs into free worker slots, the executor runs their handlers and
// decides each attempt's outcome, the heartbeater renews every lease (and
// its watchdog gives up the ones it could not renew in time), and the
// completer writes the fenced outcomes in batches. The set of running
// leases (Leases) ties them together.
//
// Each part takes its dependencies explicitly, in a Config: the narrow
// slice of the driver it calls, the lease set, a clock, an event sink and
// a logger. None of them knows the client. Each is a service.Service
// (Start, Stop), and the client stops them in the order its shutdown
// contract needs: producer, executor, completer, heartbeater. See
// docs/design.md for the path of one job through these parts.
package engine
