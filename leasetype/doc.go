// Package leasetype holds the types that a leasehold client and its drivers
// share: a job as stored (JobRow), its states and attempt outcomes, its
// attempt history, the filters and summaries of the operator API, and the
// schema version error.
//
// Applications do not need to import it: the root package leasehold
// re-exports every type and constant here under the same name
// (leasehold.JobRow is leasetype.JobRow). It exists so that the driver
// service-provider interface (package driver) can name these types
// without importing the client.
package leasetype
