package pgctl_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasehold/leasehold/internal/pgctl"
)

// TestStartServer starts a throwaway server with a setting and an access
// rule of its own, queries it over its socket, and stops it: its
// temporary directory must be gone.
func TestStartServer(t *testing.T) {
	if _, err := pgctl.Find("initdb"); err != nil {
		t.Skipf("skipping: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := pgctl.StartServer(ctx, pgctl.ServerOptions{Port: 5443, Settings: []string{"max_connections = 37"},
		HBA: []string{"host all all 10.213.253.0/24 trust"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Stop(context.Background()) }()
	conn, err := pgx.Connect(ctx, s.URL(""))
	if err != nil {
		t.Fatal(err)
	}
	var maxConns, port string
	err = conn.QueryRow(ctx, "SELECT current_setting('max_connections'), current_setting('port')").Scan(&maxConns, &port)
	_ = conn.Close(ctx)
	if err != nil || maxConns != "37" || port != "5443" {
		t.Fatalf("max_connections %q, port %q, %v", maxConns, port, err)
	}
	hba, err := os.ReadFile(s.DataDir + "/pg_hba.conf")
	if err != nil || !strings.HasPrefix(string(hba), "host all all 10.213.253.0/24 trust\n") {
		t.Fatalf("pg_hba.conf does not start with the rule: %v\n%.200s", err, hba)
	}
	b, err := os.ReadFile(s.DataDir + "/postmaster.pid")
	if err != nil {
		t.Fatal(err)
	}
	postmaster, _ := strconv.Atoi(strings.TrimSpace(strings.Split(string(b), "\n")[0]))
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if alive(postmaster) {
		t.Fatalf("postmaster %d still runs after Stop", postmaster)
	}
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Fatalf("server directory %s left behind: %v", s.Dir, err)
	}
}
