package conformance

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// shrinkBudget bounds the time spent shrinking one failing sequence.
const shrinkBudget = 30 * time.Second

// report shrinks the failing sequence ops of seed and reports it as Go;
// name is the differential test's, to replay it.
func report(t *testing.T, newFS NewFS, base, name string, seed int64, ops []op, d *divergence) {
	t.Helper()
	if d.index >= 0 && d.index < len(ops) {
		ops = ops[:d.index+1]
	}
	fails := func(cand []op) *divergence {
		if d2 := runSequence(t, newFS, base, cand, nil); d2 != nil && d2.sig == d.sig {
			return d2
		}
		return nil
	}
	small := shrink(ops, fails, time.Now().Add(shrinkBudget))
	final := fails(small)
	if final == nil { // flaky: report what was found first
		small, final = ops, d
	}
	t.Errorf("seed %d diverges from os (%s) after %d operations; shrunk to %d (replay: -run '%s' -conformance.seed=%d -v):\n%s\n%s",
		seed, d.sig, len(ops), len(small), name, seed, annotate(t, newFS, base, small), final.diff)
}

// shrink returns a smaller sequence for which fails still finds the
// divergence: delta debugging (ddmin) over the operations, then a pass that
// makes large writes and reads small. It stops at deadline with the
// smallest found so far.
func shrink(ops []op, fails func([]op) *divergence, deadline time.Time) []op {
	n := 2
	for len(ops) >= 2 && time.Now().Before(deadline) {
		chunk := (len(ops) + n - 1) / n
		reduced := false
		for start := 0; start < len(ops) && time.Now().Before(deadline); start += chunk {
			cand := slices.Concat(ops[:start], ops[min(start+chunk, len(ops)):])
			if fails(cand) != nil {
				ops, reduced = cand, true
				n = max(n-1, 2)
				break
			}
		}
		if !reduced {
			if n >= len(ops) {
				break
			}
			n = min(2*n, len(ops))
		}
	}
	for i := range ops {
		if !time.Now().Before(deadline) {
			break
		}
		o := ops[i]
		simpler := o
		if o.N > 64 {
			simpler.N = 3
		}
		if o.Off > 64 {
			simpler.Off = o.Off % 7
		}
		if simpler == o {
			continue
		}
		cand := slices.Clone(ops)
		cand[i] = simpler
		if fails(cand) != nil {
			ops = cand
		}
	}
	return ops
}

// annotate runs ops again and returns them as Go, each with the result of
// os and, where it differs, of the backend.
func annotate(t *testing.T, newFS NewFS, base string, ops []op) string {
	var b strings.Builder
	b.WriteString("\tfsys := newFS(t)\n")
	runSequence(t, newFS, base, ops, func(i int, o op, ran bool, host, back result) {
		if !ran {
			fmt.Fprintf(&b, "\t// skipped: %s\n", o)
			return
		}
		fmt.Fprintf(&b, "\t%s // os: %s", o, summarizeResult(host))
		if !cmp.Equal(host, back) {
			fmt.Fprintf(&b, "; backend: %s  <-- differs", summarizeResult(back))
		}
		b.WriteString("\n")
	})
	return b.String()
}

func summarizeResult(r result) string {
	var parts []string
	if r.Err.Class != classNil {
		parts = append(parts, r.Err.String())
	}
	if r.N != 0 {
		parts = append(parts, fmt.Sprintf("n=%d", r.N))
	}
	if r.Data != "" {
		parts = append(parts, r.Data)
	}
	if r.Name != "" {
		parts = append(parts, "name "+r.Name)
	}
	if r.Info != nil {
		s := fmt.Sprintf("%s %s size %d", r.Info.Name, r.Info.Mode, r.Info.Size)
		if r.Info.Mtime != "" {
			s += " mtime " + r.Info.Mtime
		}
		parts = append(parts, s)
	}
	if r.List != nil {
		parts = append(parts, fmt.Sprintf("%q", r.List))
	}
	if r.Target != "" {
		parts = append(parts, "target "+r.Target)
	}
	if len(parts) == 0 {
		return "ok"
	}
	return strings.Join(parts, ", ")
}
