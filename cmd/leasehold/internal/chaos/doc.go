// Package chaos is the chaos harness of leasehold: the logic behind
// `leasehold chaos`. It enqueues payment jobs (internal/payments) in a
// fresh database namespace, runs K worker processes (`leasehold chaos
// worker`) that charge each payment through a stand-in provider with the
// job's idempotency key and record it in a ledger table in the same
// transaction as the fenced completion, and meanwhile injects faults on a
// schedule it prints: SIGKILL of workers (restarted at once), SIGSTOP of a
// worker mid-charge for longer than the lease TTL (then SIGCONT), and on
// PostgreSQL `pg_ctl restart -m immediate`, pg_terminate_backend of a
// worker's sessions, network faults between some workers and the
// database (a proxy that stalls, delays or cuts their traffic:
// internal/netfault) and a failover to a standby (`--failover`). Once every job is finished it checks the invariants
// of the lease contract against the database, the ledger and the workers'
// reports, prints them as figures, and fails naming each broken one. The
// worker processes and the kills and freezes are internal/fleet's, which
// the demo plays as a script.
//
// Built with the chaos_unfenced tag, the workers complete jobs without the
// fence whenever the fence refuses them; the harness must then fail. A test
// proves it, so the checks cannot pass vacuously.
package chaos
