package chaos

import (
	"strings"
	"testing"
)

// TestJudgeSessions checks the rule on where sessions come from with rows
// written by hand, so that its pass in a real run means something.
func TestJudgeSessions(t *testing.T) {
	const proxy, workerHost, root = "10.213.1.11", "10.213.1.12", "10.213.1.1"
	proxied := map[string]bool{"w1": true, "w1.old": true}
	running := map[string]bool{"w1": true, "w2": true}
	cases := []struct {
		name  string
		rows  []session
		wrong string // part of the single complaint, "" for none
	}{
		{"every session where it belongs", []session{{"w1", proxy}, {"w1", proxy}, {"w1.old", proxy}, {"w2", root}}, ""},
		{"a proxied worker around the proxy", []session{{"w1", proxy}, {"w1", root}, {"w2", root}}, "proxied worker w1 has a session from 10.213.1.1"},
		{"an earlier process of a proxied slot around it", []session{{"w1", proxy}, {"w1.old", "local"}, {"w2", root}}, "proxied worker w1.old"},
		{"a direct worker through the proxy", []session{{"w1", proxy}, {"w2", proxy}}, "direct worker w2 has a session from 10.213.1.11"},
		{"a direct worker in the worker host", []session{{"w1", proxy}, {"w2", workerHost}}, "direct worker w2 has a session from 10.213.1.12"},
		{"a running worker without a session", []session{{"w2", root}}, "worker w1 has no session"},
	}
	for _, c := range cases {
		got := judgeSessions("start", c.rows, running, proxied, proxy, workerHost)
		switch {
		case c.wrong == "" && !got.OK():
			t.Errorf("%s: %v, want no complaint", c.name, got.Wrong)
		case c.wrong != "" && (len(got.Wrong) != 1 || !strings.Contains(got.Wrong[0], c.wrong)):
			t.Errorf("%s: %v, want one complaint with %q", c.name, got.Wrong, c.wrong)
		}
	}
	ok := judgeSessions("end", cases[0].rows, running, proxied, proxy, workerHost)
	if ok.ProxiedWorkers != 1 || ok.ProxiedSessions != 3 || ok.DirectWorkers != 1 || ok.DirectSessions != 1 ||
		strings.Join(ok.DirectFrom, ",") != root {
		t.Errorf("counts %+v", ok)
	}
}
