// Package netfault is a TCP proxy that stands between some worker
// processes and their database, and injects the network faults a real
// network produces: replies delayed by D, a stall (bytes are accepted but
// nothing is forwarded until the stall ends, then everything held arrives
// at once, late), and a cut (every connection is closed and new ones are
// refused, as in a partition that resets connections). The mode changes at
// run time and applies to the connections already open.
package netfault
