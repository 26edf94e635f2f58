// Package driver is the service-provider interface between a leasehold
// client and a database: the Driver interface that pgdriver (PostgreSQL)
// and sqlitedriver (SQLite) implement, and the params and results of its
// methods. Applications never call it; they pass a driver to
// leasehold.Config and use the client.
//
// Every method takes a context and, where it has inputs, a pointer to a
// params struct (or a slice of them), so that fields can be added without
// breaking implementations. The conformance suite in package drivertest
// checks every rule stated here, each under the name of the invariant it
// guards (see docs/design.md).
package driver
