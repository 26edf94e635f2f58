//go:build race

package chaos_test

// raceEnabled builds the orchestrator under test with -race too.
const raceEnabled = true
