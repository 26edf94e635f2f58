package leasehold_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// quoteMarker introduces a Go block of README.md that quotes a region of a
// file: the line after it opens the fence.
var quoteMarker = regexp.MustCompile(`^<!-- quoted from ([\w.]+), region (\w+)(?:\W.*)?-->$`)

// quote is one quoted block of the README.
type quote struct {
	file, region string
	line         int // of the marker, from 1
	text         []string
}

// readmeQuotes returns the Go blocks of readme marked as quotes.
func readmeQuotes(readme string) ([]quote, error) {
	lines := strings.Split(readme, "\n")
	var qs []quote
	for i := 0; i < len(lines); i++ {
		m := quoteMarker.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			continue
		}
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "```go" {
			return nil, fmt.Errorf("README.md:%d: quote marker not followed by a ```go fence", i+1)
		}
		q := quote{file: m[1], region: m[2], line: i + 1}
		j := i + 2
		for ; j < len(lines) && strings.TrimSpace(lines[j]) != "```"; j++ {
			q.text = append(q.text, lines[j])
		}
		if j == len(lines) {
			return nil, fmt.Errorf("README.md:%d: unterminated code block", i+1)
		}
		qs = append(qs, q)
		i = j
	}
	return qs, nil
}

// fileRegion returns the lines of src between "// README:begin name" and
// "// README:end name".
func fileRegion(src, name string) ([]string, error) {
	lines := strings.Split(src, "\n")
	begin, end := -1, -1
	for i, l := range lines {
		switch strings.TrimSpace(l) {
		case "// README:begin " + name:
			begin = i
		case "// README:end " + name:
			end = i
		}
	}
	if begin < 0 || end < begin {
		return nil, fmt.Errorf("no region %q (// README:begin %[1]s ... // README:end %[1]s)", name)
	}
	return lines[begin+1 : end], nil
}

// trimRight drops trailing whitespace from each line, and blank lines at
// both ends.
func trimRight(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimRight(l, " \t\r")
	}
	for len(out) > 0 && out[0] == "" {
		out = out[1:]
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// firstDiff returns the index of the first line where a and b differ, or
// -1 when they are equal.
func firstDiff(a, b []string) int {
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return -1
}

// TestReadmeQuotesExamples keeps the README's library example identical to
// the example file that go vet compiles and go test runs.
func TestReadmeQuotesExamples(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	qs, err := readmeQuotes(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) == 0 {
		t.Fatal("README.md quotes no example (<!-- quoted from example_test.go, region library -->)")
	}
	for _, q := range qs {
		src, err := os.ReadFile(q.file)
		if err != nil {
			t.Fatalf("README.md:%d: %v", q.line, err)
		}
		region, err := fileRegion(string(src), q.region)
		if err != nil {
			t.Fatalf("README.md:%d: %s: %v", q.line, q.file, err)
		}
		got, want := trimRight(q.text), trimRight(region)
		if i := firstDiff(got, want); i >= 0 {
			line := func(ls []string) string {
				if i < len(ls) {
					return fmt.Sprintf("%q", ls[i])
				}
				return "(end of block)"
			}
			t.Errorf("README.md:%d: the block differs from region %s of %s at its line %d:\n README: %s\n %s: %s\ncopy the region into the README",
				q.line, q.region, q.file, i+1, line(got), q.file, line(want))
		}
	}
}
