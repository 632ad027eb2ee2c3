package dirfs_test

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/packfs/packfs/dirfs"
	"github.com/packfs/packfs/internal/testsize"
)

// Every test over modes also runs with each lookup walked one element at a
// time, the way taken when openat2 keeps failing with EAGAIN.
func init() {
	modes = append(modes, struct {
		name string
		opts []dirfs.Option
	}{"walk", []dirfs.Option{dirfs.WalkAlways()}})
}

// TestRenamesElsewhere resolves symlinks that climb with ".." while another
// goroutine renames a file outside the root without pause. The kernel fails
// such an openat2 with EAGAIN whenever a rename anywhere on the system ran
// during the lookup, most tries here, and a chain of 40 links on every try:
// the FS must still answer as Linux does.
func TestRenamesElsewhere(t *testing.T) {
	fsys := newFS(t)
	must(t, fsys.WriteFile("file", []byte("end"), 0o644))
	must(t, fsys.Mkdir("d", 0o755))
	must(t, fsys.Symlink("../d/loop", "d/loop"))
	must(t, fsys.Mkdir("c", 0o755))
	prev := "../file"
	for i := 39; i >= 0; i-- {
		name := "c/l" + itoa(i)
		must(t, fsys.Symlink(prev, name))
		prev = "l" + itoa(i)
	}
	other := t.TempDir()
	must(t, os.WriteFile(filepath.Join(other, "a"), nil, 0o644))
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a, b := filepath.Join(other, "a"), filepath.Join(other, "b")
		for !stop.Load() {
			os.Rename(a, b)
			os.Rename(b, a)
		}
	}()
	defer func() { stop.Store(true); wg.Wait() }()
	// Until the walk has answered 20 times (it is taken after 8 EAGAINs
	// in a row), or for a bounded number of tries on a machine where the
	// renames rarely overlap the lookups.
	tries, want := 20000, int64(20)
	switch {
	case !testsize.Short() && raceEnabled:
		tries, want = 40000, 100
	case !testsize.Short():
		tries, want = 200000, 200
	}
	start := dirfs.Walks()
	i := 0
	for ; i < tries && dirfs.Walks()-start < want; i++ {
		if _, err := fsys.Stat("d/loop"); !errors.Is(err, syscall.ELOOP) {
			t.Fatalf("try %d: Stat(d/loop) = %v, want ELOOP", i, err)
		}
		if err := fsys.Chmod("d/loop", 0o644); !errors.Is(err, syscall.ELOOP) {
			t.Fatalf("try %d: Chmod(d/loop) = %v, want ELOOP", i, err)
		}
		got, err := fsys.ReadFile("c/l00")
		if err != nil || string(got) != "end" {
			t.Fatalf("try %d: ReadFile(c/l00) = %q, %v, want end", i, got, err)
		}
	}
	t.Logf("%d tries, %d answered by the walk", i, dirfs.Walks()-start)
}

func itoa(i int) string {
	return string(rune('0'+i/10)) + string(rune('0'+i%10))
}
