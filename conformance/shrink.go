package conformance

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
)

// shrinkBudget bounds the time spent shrinking one failing sequence.
const shrinkBudget = 30 * time.Second

// upTo returns ops up to the one after which d was found.
func upTo(ops []op, d *divergence) []op {
	if d.index >= 0 && d.index < len(ops) {
		return ops[:d.index+1]
	}
	return ops
}

// shrinkFailure returns a smaller sequence than ops that run finds
// diverging as d does, and its divergence; or ops and d if the divergence
// does not come again.
func shrinkFailure(run replay, ops []op, d *divergence) ([]op, *divergence) {
	fails := func(cand []op) *divergence {
		if d2 := run(cand, nil); d2 != nil && d2.sig == d.sig {
			return d2
		}
		return nil
	}
	small := shrink(ops, fails, time.Now().Add(shrinkBudget))
	final := fails(small)
	if final == nil { // flaky: report what was found first
		return ops, d
	}
	return small, final
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
func annotate(run replay, ops []op) string {
	var b strings.Builder
	run(ops, annotateTo(&b))
	return b.String()
}

// annotateTo returns a tracer that writes each operation to b as a line
// of Go, as annotate does.
func annotateTo(b *strings.Builder) tracer {
	return func(i int, o op, ran bool, host, back result) {
		if !ran {
			fmt.Fprintf(b, "\t// skipped: %s\n", o)
			return
		}
		fmt.Fprintf(b, "\t%s // os: %s", o, summarizeResult(host))
		if !cmp.Equal(host, back) {
			fmt.Fprintf(b, "; backend: %s  <-- differs", summarizeResult(back))
		}
		b.WriteString("\n")
	}
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
