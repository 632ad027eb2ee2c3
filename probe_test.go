package packfs_test

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// TestIssue13ProbeLongTargetElement: an element of a symlink's target
// longer than NAME_MAX is ENAMETOOLONG when the walk looks it up, as the
// kernel's lookup gives, not ENOENT; in mem, in the union and in a pack.
func TestIssue13ProbeLongTargetElement(t *testing.T) {
	long := strings.Repeat("n", 256)
	build := func(fsys interface {
		layer.SymlinkFS
		MkdirAll(string, fs.FileMode) error
	}) {
		for _, l := range [][2]string{{long, "l"}, {"d/" + long + "/x", "l2"}, {"missing/" + long, "l3"}, {long + "/..", "l4"}} {
			if err := fsys.Symlink(l[0], l[1]); err != nil {
				t.Fatal(err)
			}
		}
		if err := fsys.MkdirAll("d", 0o755); err != nil {
			t.Fatal(err)
		}
	}
	m := mem.New()
	build(m)
	pack := packFS(t, m)
	up := mem.New()
	build(up)
	stacks := map[string]fs.FS{
		"mem":         m,
		"pack":        pack,
		"union/lower": packfs.New(mem.New(), pack),
		"union/upper": packfs.New(up, mem.New().Snapshot()),
	}
	for name, fsys := range stacks {
		for _, c := range []struct {
			name string
			want error
		}{{"l", syscall.ENAMETOOLONG}, {"l2", syscall.ENAMETOOLONG}, {"l3", syscall.ENOENT}, {"l4", syscall.ENAMETOOLONG}} {
			if _, err := fs.Stat(fsys, c.name); !errors.Is(err, c.want) {
				t.Errorf("%s: Stat(%s) = %v, want %v", name, c.name, err, c.want)
			}
		}
		if w, ok := fsys.(layer.OpenFileFS); ok {
			if f, err := w.OpenFile("l", os.O_RDWR|os.O_CREATE, 0o644); !errors.Is(err, syscall.ENAMETOOLONG) {
				t.Errorf("%s: OpenFile(l, O_CREATE) = %v, want ENAMETOOLONG", name, err)
				if err == nil {
					f.Close()
				}
			}
		}
	}
}
