package main

import (
	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/netfault"
)

// chaosProxyCommand is the TCP fault proxy of the chaos harness's
// network faults as a process of its own, which the harness starts inside
// a network namespace and drives through its standard input and output.
func (a *app) chaosProxyCommand() *cobra.Command {
	var listen, upstream string
	cmd := &cobra.Command{
		Use:    "proxy",
		Short:  "Run the chaos harness's TCP fault proxy (started by leasehold chaos)",
		Hidden: true,
		Args:   argNames(),
		RunE: a.runE(func(cmd *cobra.Command, _ []string) error {
			return netfault.ServeProcess(cmd.Context(), listen, upstream, a.stdin, a.stdout)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&listen, "listen", "127.0.0.1:0", "address to listen on")
	fl.StringVar(&upstream, "upstream", "", "TCP address (host:port) of the server to forward to")
	_ = cmd.MarkFlagRequired("upstream")
	return cmd
}
