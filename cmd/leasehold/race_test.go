//go:build race

package main

// raceEnabled builds the binary under test with -race too.
const raceEnabled = true
