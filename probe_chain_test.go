package packfs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/layer/mem"
)

// TestIssue14ProbeLinkChainAcrossLayers: a chain of symlinks whose links
// alternate between the lower pack and the upper layer resolves through
// 40 links and fails with ELOOP at 41, as on Linux, through the union and
// through the adapter with a decorated name.
func TestIssue14ProbeLinkChainAcrossLayers(t *testing.T) {
	const hops = 41
	lowerMem, upper := mem.New(), mem.New()
	must(t, lowerMem.Mkdir("d", 0o755))
	must(t, lowerMem.WriteFile("d/end", []byte("E"), 0o644))
	for i := range hops {
		target := fmt.Sprintf("l%02d", i+1)
		if i == hops-1 {
			target = "d/end"
		}
		where := lowerMem
		if i%2 == 1 {
			where = upper
		}
		must(t, where.Symlink(target, fmt.Sprintf("l%02d", i)))
	}
	u := packfs.New(upper, packFS(t, lowerMem.Snapshot()))
	a := aferoadapter.New(u)
	for _, c := range []struct {
		name string
		want error
	}{{"l01", nil}, {"l00", syscall.ELOOP}} {
		_, err := fs.Stat(u, c.name)
		_, aerr := a.Stat("/./" + c.name + "/")
		for how, err := range map[string]error{"union": err, "adapter": aerr} {
			if c.want == nil && err != nil && !(how == "adapter" && errors.Is(err, syscall.ENOTDIR)) || c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("%s: Stat(%s) = %v, want %v", how, c.name, err, c.want)
			}
		}
	}
	if b, err := fs.ReadFile(u, "l01"); err != nil || string(b) != "E" {
		t.Errorf("ReadFile(l01) = %q, %v", b, err)
	}
}
