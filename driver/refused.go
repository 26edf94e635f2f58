package driver

// Refuser is implemented by drivers that can tell, of a statement that
// failed, whether the database ran it and refused it, and would refuse it
// again (a constraint, a value it cannot store, a trigger that raises, a
// missing table or privilege), from a failure that says nothing about the
// statement: a connection that broke or could not be made, a server
// restarting or shutting down, a timeout or a cancelled context, a lock,
// deadlock or serialization conflict, resources running out.
//
// A client gives up an outcome that keeps failing alone, while the
// database accepts its other writes, only when Refused says the database
// refuses it: after a server restart the pool's dead connections fail one
// statement while a fresh connection serves the next, and an outcome
// given up then would have its job run again once its lease expired.
// Without Refuser every error counts as a refusal for that rule. A driver
// that wraps another implements it by forwarding IsRefused of the wrapped
// one.
type Refuser interface {
	Refused(err error) bool
}

// RefusedOf returns d's Refused, or nil when d does not implement Refuser.
func RefusedOf(d Driver) func(error) bool {
	if r, ok := d.(Refuser); ok {
		return r.Refused
	}
	return nil
}

// IsRefused reports whether d says the database refused err (see
// Refuser), and true when d does not implement Refuser: every error may
// then be a refusal. A driver that wraps another forwards it.
func IsRefused(d Driver, err error) bool {
	f := RefusedOf(d)
	return f == nil || f(err)
}
