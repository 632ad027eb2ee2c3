package suite

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

// TestPairedRatio checks that a Paired table's ratio is the median of the
// per-run ratios, not the ratio of the medians, and is per operation.
func TestPairedRatio(t *testing.T) {
	tb := &Table{Base: "memmapfs", Paired: true, kind: kindMatrix, Unit: "op", Title: "m"}
	base := Spec{Backend: "memmapfs", Where: Memory, Ops: 10, Case: "stat"}
	ours := Spec{Backend: "mem", Where: Memory, Ops: 20, Ours: true, Case: "stat"}
	// Per run, ours/base per op: 1.0, 2.0, 0.5; per-op medians give 1.5.
	for _, p := range [][2]time.Duration{{100, 200}, {100, 400}, {400, 400}} {
		tb.Record(base, p[0])
		tb.Record(ours, p[1])
	}
	tb.Record(Spec{Backend: "mem", Where: Memory, Ops: 20, Ours: true, Case: "create"}, 1)
	r := tb.row(ours)
	if got := tb.Ratio(r, tb.Baseline(r)); math.Abs(got-1.0) > 1e-9 {
		t.Errorf("paired ratio %v, want 1", got)
	}
	tb.Paired = false
	if got := tb.Ratio(r, tb.Baseline(r)); math.Abs(got-2.0) > 1e-9 {
		t.Errorf("ratio of medians %v, want 2 (20 ns over 10 ns)", got)
	}
	tb.Paired = true
	var buf bytes.Buffer
	tb.WriteMarkdown(&buf)
	out := buf.String()
	for _, want := range []string{"| stat | 10 ns | 20 ns 1.00× |", "| create |  | 0 ns |", "| memmapfs | **mem** |"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}
