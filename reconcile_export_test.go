package leasehold

// WaitingTxResolutions returns, for the tests of package leasehold_test,
// how many leases of c hold resolutions made in transactions that wait for
// their handler's return, and c's count of them (held, which also counts
// the adds under way).
func WaitingTxResolutions(c *Client) (leases int, held int64) {
	c.resolutions.mu.Lock()
	defer c.resolutions.mu.Unlock()
	return len(c.resolutions.m), c.resolutions.held.Load()
}
