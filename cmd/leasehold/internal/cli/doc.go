// Package cli holds the logic behind the leasehold command that is not
// flags and wiring: resolving --db into a driver, parsing bounded
// durations, statuses and run-at times, mapping errors to exit codes and
// one-line messages, and printing results as tables or JSON.
package cli
