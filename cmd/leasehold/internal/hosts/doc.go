// Package hosts measures leasehold with its workers on many "hosts" of one
// machine: it builds network namespaces (internal/netns), each with its own
// address and a veth link to the root namespace, starts a PostgreSQL
// server of its own (internal/pgctl) listening on the bridge address, and
// for each process count of the sweep inserts no-op jobs, starts that many
// `leasehold work` processes spread round-robin over the namespaces
// (fleet), and measures how fast they drain the jobs. It checks that each
// job was completed exactly once (one attempt per job in the history, a
// completed one, and as many handler runs across the workers as jobs),
// that every worker's connections came from its namespace's address, and
// measures the bare-SQL ceiling of the same server (the bench's ceiling
// phase) before the first step and after each, each step compared with
// the mean of the two around it. It prints a table and draws a chart.
// The server lives in a directory named by the bridge and the port
// (serverDir), so that a run stops the server an interrupted run left
// there before it starts its own.
// Figures are printed, never asserted.
package hosts
