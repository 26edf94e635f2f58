package leasehold

import "testing"

// TestCheckpointNoDataStoredEmpty: a checkpoint recorded with no data (nil,
// a nil map or pointer) is stored as {}, as CheckpointRow.Data says, not as
// null, which a reconciler decoding into a map would read as a nil map.
func TestCheckpointNoDataStoredEmpty(t *testing.T) {
	for _, data := range []any{nil, map[string]int(nil), (*struct{ N int })(nil)} {
		b, err := checkpointData("step", data, DefaultMaxPayloadBytes)
		if err != nil || string(b) != "{}" {
			t.Errorf("checkpointData(%#v) = %s, %v; want {}", data, b, err)
		}
	}
	if b, err := checkpointData("step", []int{}, DefaultMaxPayloadBytes); err != nil || string(b) != "[]" {
		t.Errorf("checkpointData([]int{}) = %s, %v; want [] kept", b, err)
	}
}
