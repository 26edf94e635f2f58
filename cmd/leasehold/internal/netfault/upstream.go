package netfault

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// PostgresUpstream returns a Dialer to the server a PostgreSQL URL names
// (its first host): a Unix socket when the host is a directory, else TCP.
func PostgresUpstream(rawURL string) (Dialer, string, error) {
	cfg, err := pgconn.ParseConfig(rawURL)
	if err != nil {
		return nil, "", fmt.Errorf("netfault: %w", err)
	}
	network, addr := "tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	if strings.HasPrefix(cfg.Host, "/") {
		network, addr = "unix", fmt.Sprintf("%s/.s.PGSQL.%d", cfg.Host, cfg.Port)
	}
	return dialer(network, addr), addr, nil
}

// TCPUpstream returns a Dialer to a TCP address (host:port).
func TCPUpstream(addr string) Dialer { return dialer("tcp", addr) }

func dialer(network, addr string) Dialer {
	var d net.Dialer
	return func(ctx context.Context) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}
}
