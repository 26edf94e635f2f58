package demo

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// screen prints the story: event lines, and a status line that a
// terminal redraws in place (plain lines, only when changed, otherwise).
type screen struct {
	mu     sync.Mutex
	w      io.Writer
	tty    bool
	start  time.Time
	status string // the status line shown under the events (terminal)
	last   string // the last status printed (plain output)
}

func newScreen(w io.Writer, tty bool) *screen {
	return &screen{w: w, tty: tty, start: time.Now()}
}

const clearLine = "\r\033[K"

func (s *screen) stamp() string {
	return fmt.Sprintf("[%5.1fs]", time.Since(s.start).Seconds())
}

// Line prints a line without a time stamp.
func (s *screen) Line(format string, args ...any) {
	s.print(fmt.Sprintf(format, args...))
}

// Event prints a time-stamped line.
func (s *screen) Event(format string, args ...any) {
	s.print(s.stamp() + " " + fmt.Sprintf(format, args...))
}

func (s *screen) print(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tty && s.status != "" {
		fmt.Fprint(s.w, clearLine+line+"\n"+s.status)
		return
	}
	fmt.Fprintln(s.w, line)
}

// Status shows the progress line.
func (s *screen) Status(format string, args ...any) {
	body := fmt.Sprintf(format, args...)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tty {
		s.status = fitWidth(s.stamp() + " " + body)
		fmt.Fprint(s.w, clearLine+s.status)
		return
	}
	if body != s.last {
		s.last = body
		fmt.Fprintln(s.w, s.stamp()+" "+body)
	}
}

// EndStatus leaves the last status line on screen and stops redrawing.
func (s *screen) EndStatus() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tty && s.status != "" {
		fmt.Fprintln(s.w)
		s.status = ""
	}
}

// statusWidth keeps the redrawn line on one row of a terminal: a wrapped
// line could not be redrawn in place.
const statusWidth = 79

func fitWidth(s string) string {
	r := []rune(s)
	if len(r) <= statusWidth {
		return s
	}
	return string(r[:statusWidth-1]) + "…"
}

// plural returns "1 job" or "2 jobs".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// idList renders ids as "5, 7, 9".
func idList(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	return strings.Join(parts, ", ")
}

// jobList renders ids as "job 5" or "jobs 5, 7".
func jobList(ids []int64) string {
	if len(ids) == 1 {
		return "job " + idList(ids)
	}
	return "jobs " + idList(ids)
}
