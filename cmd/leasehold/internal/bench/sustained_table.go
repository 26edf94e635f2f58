package bench

// writeSustained prints a sustained run: a row per window, then the
// spans and their ratios.
func writeSustained(p func(string, ...any), s *SustainedResult) {
	p("\nsustained\tt s\tinserted\tcompleted\tbacklog\tp50 ms\tp95 ms\tp99 ms\theap MiB\tRSS MiB\tjobs MB\tattempts MB\tready idx MB\tready entries/scan\tjobs dead\tattempts dead\txmin age\theld\t\n")
	for _, w := range s.Windows {
		held := ""
		if w.Held {
			held = "held"
		}
		p("\t%.0f\t%d\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.2f\t%.0f\t%d\t%d\t%d\t%s\t\n", w.End, w.Inserted,
			w.Completed, w.Backlog, w.Latency.P50, w.Latency.P95, w.Latency.P99, w.HeapMiB, w.RSSMiB,
			mb(w.Server.JobsBytes), mb(w.Server.AttemptsBytes), mb(w.Server.ReadyIndexBytes), w.ReadyEntriesPerScan, w.Server.JobsDead,
			w.Server.AttemptsDead, w.Server.OldestXminAge, held)
	}
	p("\nsustained: %d/s for %.0f s, retention %s, %d jobs inserted, %d completed\t\t\t\t\t\t\t\t\t\t\n",
		s.Rate, s.Seconds, s.Retention, s.Inserted, s.Completed)
	p("span\tfrom s\tto s\tjobs/s\tp50 ms\tp95 ms\tp99 ms\tworst window p99 ms\theap MiB\tRSS MiB\t\n")
	for _, sp := range s.Spans {
		p("%s\t%.0f\t%.0f\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", sp.Name, sp.From, sp.To, sp.JobsPerSec,
			sp.Latency.P50, sp.Latency.P95, sp.Latency.P99, sp.WorstP99, sp.HeapMiB, sp.RSSMiB)
	}
	p("\nsustained ratios\tjobs/s\tp50\tp99\tworst window p99\theap\tRSS\t\n")
	for _, r := range s.Ratios {
		p("%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t\n", r.Name, r.JobsPerSec, r.P50, r.P99, r.WorstP99, r.Heap, r.RSS)
	}
	if h := s.Hold; h != nil {
		p("held transaction\topened %.0f s\tclosed %.0f s\txid %s\tbackend_xmin %s\t\n", h.Opened, h.Closed, h.XID, h.Xmin)
	}
}
