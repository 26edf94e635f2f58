package web

// MaxShownAttempts is maxShownAttempts, for the tests of package web_test.
const MaxShownAttempts = maxShownAttempts
