package aferoadapter_test

import (
	"os"
	"strings"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/dirfs"
	"github.com/packfs/packfs/layer/mem"
	"github.com/spf13/afero"
)

// probeStacks are the stacks the scripted probes run over: each returns
// the adapter and, for the union, a settle that moves its state down.
func probeStacks() map[string]func(t *testing.T) stack {
	return map[string]func(t *testing.T) stack{
		"mem": func(t *testing.T) stack { return stack{fs: aferoadapter.New(mem.New())} },
		"union": func(t *testing.T) stack {
			u := packfs.New(mem.New(), mem.New().Snapshot())
			s := stack{fs: aferoadapter.New(u)}
			s.settle = func() (afero.Fs, error) {
				var err error
				if u, err = settle(u); err != nil {
					return nil, err
				}
				return aferoadapter.New(u), nil
			}
			return s
		},
		"store": func(t *testing.T) stack {
			dir := t.TempDir()
			s, err := packfs.Open(dir, &packfs.Options{Sync: packfs.SyncNone})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Chmod(".", 0o755); err != nil {
				t.Fatal(err)
			}
			return stack{fs: aferoadapter.New(s), close: func() { s.Close() }}
		},
		"dirfs": func(t *testing.T) stack {
			dir := seqDir(t) // tmpfs where there is one, as the host side
			t.Cleanup(func() { os.RemoveAll(dir) })
			os.Chmod(dir, 0o755)
			d, err := dirfs.New(dir)
			if err != nil {
				t.Fatal(err)
			}
			return stack{fs: aferoadapter.New(d), close: func() { d.Close() }}
		},
	}
}

// runScript applies setup and then probe calls to the kernel and to every
// stack (the union settling between the two), comparing each call's result
// and the trees at the end.
func runScript(t *testing.T, setup, probe []call) {
	t.Helper()
	for name, mk := range probeStacks() {
		t.Run(name, func(t *testing.T) {
			base := seqDir(t) // tmpfs, whose offset limits mem follows
			t.Cleanup(func() { os.RemoveAll(base) })
			hfs, err := newHostFsIn(base)
			if err != nil {
				t.Fatal(err)
			}
			host := &side{fs: hfs}
			st := mk(t)
			if st.close != nil {
				defer st.close()
			}
			back := &side{fs: st.fs}
			defer host.close()
			defer back.close()
			run := func(calls []call, what string) {
				for i, c := range calls {
					h, _ := host.apply(c, false)
					b, perr := back.apply(c, true)
					if h != b || perr != "" {
						t.Errorf("%s %d %.200v:\n  Linux:   %.200s\n  adapter: %.200s %s", what, i, c, h, b, perr)
					}
				}
			}
			run(setup, "setup")
			if st.settle != nil {
				host.close()
				back.close()
				host.files, back.files = [3]afero.File{}, [3]afero.File{}
				if back.fs, err = st.settle(); err != nil {
					t.Fatal(err)
				}
			}
			run(probe, "probe")
			if err := hfs.checkSandbox(); err != nil {
				t.Fatal(err)
			}
			h := tree(t, host.fs)
			b, err := treeOf(back.fs)
			if err != nil || strings.Join(h, "\n") != strings.Join(b, "\n") {
				t.Errorf("trees differ:\n  Linux:   %.2000q\n  adapter: %.2000q %v", h, b, err)
			}
		})
	}
}

func mk(p string) call         { return call{op: "Mkdir", p1: p, perm: 0o755} }
func mkall(p string) call      { return call{op: "MkdirAll", p1: p, perm: 0o755} }
func wf(p, data string) call   { return call{op: "WriteFile", p1: p, data: data, perm: 0o644} }
func ln(target, p string) call { return call{op: "Symlink", p1: target, p2: p} }
func op(o, p string) call      { return call{op: o, p1: p, perm: 0o644} }
func mv(a, b string) call      { return call{op: "Rename", p1: a, p2: b} }

// TestIssue13ProbeDotDotAfterLinks drives ".." after symlinked
// directories, chains of links through directories and targets with ".."
// through Rename, Remove, RemoveAll and MkdirAll.
func TestIssue13ProbeDotDotAfterLinks(t *testing.T) {
	setup := []call{
		mkall("/x/y/z"), mkall("/p/q"), wf("/x/y/z/f", "F"), wf("/p/q/g", "G"),
		ln("x/y", "/l1"),         // l1 -> x/y
		ln("../p/q", "/x/l2"),    // x/l2 -> ../p/q
		ln("l1/z", "/l3"),        // chain through a link
		ln("../../p", "/x/y/up"), // x/y/up -> ../../p
		ln("l3/../..", "/l4"),    // .. after a chain
	}
	probe := []call{
		op("Stat", "/l1/.."), op("Stat", "/l3/.."), op("Stat", "/l4"), op("Lstat", "/l4/."),
		op("ReadDir", "/l1/../y/z/../"), op("ReadFile", "/x/l2/../q/g"),
		op("ReadFile", "/x/y/up/q/g"), op("ReadFile", "/l3/../up/q/../q/g"),
		mkall("/l1/../n1/n2"), mkall("/l3/../../m1"), mkall("/x/l2/../r/s"),
		mv("/l1/../y/z/f", "/x/l2/../f2"), mv("/l3/../up/q/f2", "/l1/f3"),
		op("Remove", "/l1/../y/f3"), op("Remove", "/l3/.."), op("Remove", "/l4/"),
		mv("/l1/..", "/moved"), mv("/l1", "/l1/.."), mv("/x/l2/..", "/x/l2/../qq"),
		op("RemoveAll", "/l3/../../y/n1/.."), op("RemoveAll", "/x/l2/../q"),
		op("Stat", "/l1"), op("Lstat", "/l1"), op("ReadDir", "/"),
	}
	runScript(t, setup, probe)
}

// TestIssue13ProbeLongNames drives names at and past 255 bytes, direct
// and through symlink targets. (Paths near 4,096 bytes are left to
// TestIssue14PathMax*: the host side's names carry its directory's
// prefix, so the kernel's limit falls elsewhere there.)
func TestIssue13ProbeLongNames(t *testing.T) {
	n255 := strings.Repeat("n", 255)
	n256 := strings.Repeat("n", 256)
	setup := []call{wf("/"+n255, "N"), mk("/d"), ln(n256, "/l"), ln("d/"+n256+"/..", "/l2"), ln(n255, "/l3")}
	probe := []call{
		op("Stat", "/"+n255), op("Stat", "/"+n256), wf("/"+n256, "x"), mk("/d/" + n256),
		mk("/" + n255 + "/"), mv("/"+n255, "/d/"+n256), mv("/"+n255, "/d/"+n255),
		op("Stat", "/l"), op("Lstat", "/l"), op("Readlink", "/l"), op("Stat", "/l2"), op("Stat", "/l/"),
		op("Stat", "/l3"), wf("/l", "x"), mk("/l2/x"), mkall("/l2/x"), op("Remove", "/l2/.."),
		op("Stat", "/d/"+n256+"/../"+n255), op("Stat", "/missing/"+n256),
		ln(n255, "/"+n256), op("Readlink", "/"+n256),
	}
	runScript(t, setup, probe)
}

// TestIssue14ProbeSelfRenames renames entries onto themselves, through
// symlink aliases, into themselves and over whiteouts.
func TestIssue14ProbeSelfRenames(t *testing.T) {
	setup := []call{
		mkall("/d/e"), wf("/a", "A"), wf("/d/f", "F"), ln(".", "/self"), ln("d", "/dl"),
		ln("e", "/d/el"),
	}
	probe := []call{
		mv("/a", "/a"), mv("/a", "/self/a"), mv("/self/a", "/a"), mv("/self/self/a", "/./a"),
		mv("/d", "/self/d"), mv("/d", "/d/e"), mv("/d", "/d/e/x"), mv("/d", "/dl/x"),
		mv("/dl", "/dl"), mv("/dl/f", "/d/f"), mv("/d/el", "/dl/el"), mv("/d/e", "/d/el/x"),
		mv("/d/e", "/d/el/"), mv("/d/el", "/d/e/"),
		op("Remove", "/d/f"), mv("/a", "/d/f"), mv("/d/f", "/d/f"), op("ReadFile", "/d/f"),
		op("Remove", "/d/f"), mk("/d/f"), mv("/d/e", "/d/f"), op("ReadDir", "/d"),
		mv("/self", "/self"), mv("/self/", "/self"), mv("/self", "/self/"),
		op("ReadDir", "/"),
	}
	runScript(t, setup, probe)
}

// TestIssue13ProbeOffsets drives huge and negative offsets through
// handles on every stack.
func TestIssue13ProbeOffsets(t *testing.T) {
	const big = int64(1) << 62
	setup := []call{wf("/a", "hello")}
	h := func(o string, off int64, data string, whence int) call {
		return call{op: o, off: off, data: data, n: 4, h: whence}
	}
	var probe []call
	for _, off := range []int64{-1, -1 << 63, big, 1<<63 - 1, 1<<63 - 2, 1 << 40} {
		for w := range 3 {
			probe = append(probe, call{op: "OpenFile", p1: "/a", flag: os.O_RDWR, h: w},
				h("Seek", off, "", w), h("Write", 0, "xy", w), h("Read", 0, "", w),
				h("ReadAt", off, "", w), h("WriteAt", off, "xy", w), h("Truncate", off, "", w),
				h("FStat", 0, "", w), h("Truncate", 5, "", w))
		}
	}
	runScript(t, setup, probe)
}

// TestIssue13ProbeRenameLongNewName: Rename of a missing name to a new
// name over NAME_MAX is ENOENT, as the kernel looks the old name up
// first; of an existing one, ENAMETOOLONG.
func TestIssue13ProbeRenameLongNewName(t *testing.T) {
	long := strings.Repeat("n", 256)
	runScript(t, []call{mk("/d"), wf("/f", "F")}, []call{
		mv("/x", "/d/"+long), mv("/x", "/"+long), mv("/f", "/d/"+long), mv("/d/x", "/d/"+long+"/"),
		mv("/d", "/"+long), mv("/x/y", "/"+long), mv("/"+long, "/x"),
	})
}
