package work

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
)

// TestScanNameLimit: checkScan refuses a reconcile queue whose scan
// schedule name, leasehold.demo.scan:QUEUE, is over the library's periodic
// name limit, and takes one at the limit; periodicNameMax is that limit.
func TestScanNameLimit(t *testing.T) {
	if err := leasehold.ValidatePeriodicName(strings.Repeat("a", periodicNameMax)); err != nil {
		t.Errorf("a periodic name of periodicNameMax (%d) bytes refused: %v", periodicNameMax, err)
	}
	if err := leasehold.ValidatePeriodicName(strings.Repeat("a", periodicNameMax+1)); err == nil {
		t.Errorf("a periodic name of periodicNameMax+1 (%d) bytes taken: periodicNameMax is not the library's limit", periodicNameMax+1)
	}
	fits := strings.Repeat("r", periodicNameMax-len(ScanName("")))
	if err := checkScan(Options{ReconcileInto: fits, ScanEvery: time.Second}); err != nil {
		t.Errorf("checkScan with a scan name of %d bytes = %v", len(ScanName(fits)), err)
	}
	err := checkScan(Options{ReconcileInto: fits + "r", ScanEvery: time.Second})
	if !errors.Is(err, leasehold.ErrInvalidPeriodic) || !strings.HasPrefix(err.Error(), "--reconcile-into: with --scan-every") {
		t.Errorf("checkScan with a scan name of %d bytes = %v, want an ErrInvalidPeriodic on --reconcile-into", len(ScanName(fits))+1, err)
	}
	if err := checkScan(Options{ReconcileInto: fits + "r"}); err != nil {
		t.Errorf("checkScan without --scan-every = %v: the scan's name does not matter", err)
	}
}
