package web_test

import (
	"strings"
	"testing"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/web"
)

// TestBasicUserNoClientCanSend: Check (and so New) refuses a basic-auth
// user holding a colon, where RFC 7617 ends the user, or a control
// character, which it does not allow: no client could log in as either.
func TestBasicUserNoClientCanSend(t *testing.T) {
	for _, tc := range []struct{ user, want string }{
		{"ops:team", "colon"}, {":", "colon"}, {"ops\nteam", "U+000A"}, {"ops\x7f", "U+007F"}, {"ops\u0085", "U+0085"},
	} {
		err := web.Options{BasicUser: tc.user, BasicPassword: testPassword}.Check()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "BasicUser") {
			t.Errorf("Check of BasicUser %q = %v, want an error naming BasicUser and %s", tc.user, err, tc.want)
		}
	}
	c, err := leasehold.NewClient(leasehold.Config{Driver: sqlitetestOpen(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := web.New(c, web.Options{BasicUser: "ops:team", BasicPassword: testPassword}); err == nil {
		t.Errorf("New accepted BasicUser %q", "ops:team")
	}
	for _, user := range []string{"ops", "ops team", "opérateur", "ops@example.com"} {
		if err := (web.Options{BasicUser: user, BasicPassword: testPassword}).Check(); err != nil {
			t.Errorf("Check of BasicUser %q = %v, want nil", user, err)
		}
	}
}
