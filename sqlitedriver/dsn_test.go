package sqlitedriver

import "testing"

// TestOpenMapsTheFile checks that Open's connection reads the database
// file through a memory map of MmapSize bytes.
func TestOpenMapsTheFile(t *testing.T) {
	d := openTest(t)
	var got int64
	if err := d.DB().QueryRowContext(testCtx(t), "PRAGMA mmap_size").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != MmapSize {
		t.Errorf("mmap_size = %d, want %d", got, MmapSize)
	}
}
