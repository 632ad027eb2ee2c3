package packfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
	"github.com/packfs/packfs/vfs/vfstest"
)

// ownerDump is the tree of fsys with each entry's owner, and the mtimes
// of symlinks that the owner tests set (before 2000; others come from
// the clock).
func ownerDump(t testing.TB, fsys fs.FS) string {
	t.Helper()
	var b strings.Builder
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		uid, gid, _ := layer.OwnerOf(fi)
		fmt.Fprintf(&b, "%s %v %d:%d", p, fi.Mode(), int32(uid), int32(gid))
		if fi.Mode()&fs.ModeSymlink != 0 && fi.ModTime().Year() < 2000 {
			fmt.Fprintf(&b, " %d", fi.ModTime().UnixNano())
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func lowerPack(t *testing.T, build func(m *mem.FS)) *packreader.Reader {
	t.Helper()
	m := mem.New()
	build(m)
	var buf bytes.Buffer
	if err := packwriter.Write(&buf, m); err != nil {
		t.Fatal(err)
	}
	r, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestIssue16UnionCopyUpKeepsOwner: a change to a lower entry copies it
// up with its owner, and Lchown and Lchtimes of a lower symlink change
// the copy, not the target.
func TestIssue16UnionCopyUpKeepsOwner(t *testing.T) {
	r := lowerPack(t, func(m *mem.FS) {
		mustDo(t, m.MkdirAll("d", 0o755))
		mustDo(t, m.WriteFile("d/f", []byte("x"), 0o644))
		mustDo(t, m.Symlink("f", "d/l"))
		mustDo(t, m.Lchown("d", 3, 4))
		mustDo(t, m.Lchown("d/f", 5, 6))
		mustDo(t, m.Lchown("d/l", 7, 8))
	})
	u := packfs.New(mem.New(), r)
	before := ownerDump(t, u)
	mustDo(t, u.Chmod("d/f", 0o600))
	after := ownerDump(t, u)
	if want := strings.Replace(before, "d/f -rw-r--r--", "d/f -rw-------", 1); after != want {
		t.Fatalf("copy-up changed owners:\n%s\nwant\n%s", after, want)
	}
	t1 := time.Unix(12345, 0)
	mustDo(t, u.Lchown("d/l", 9, -1))
	mustDo(t, u.Lchtimes("d/l", t1, t1))
	got := ownerDump(t, u)
	if !strings.Contains(got, "d/l Lrwxrwxrwx 9:8 12345000000000\n") || !strings.Contains(got, "d/f -rw------- 5:6\n") {
		t.Fatalf("after Lchown and Lchtimes of d/l:\n%s", got)
	}
	mustDo(t, u.Chown("d/l", -1, 10))
	if got := ownerDump(t, u); !strings.Contains(got, "d/f -rw------- 5:10\n") || !strings.Contains(got, "d/l Lrwxrwxrwx 9:8") {
		t.Fatalf("after Chown of d/l:\n%s", got)
	}
}

// ownerWorkload makes owner and symlink-time changes on s, checkpointing
// now and then; unit is called after each change that reaches the log
// and ack after each acknowledged sync.
func ownerWorkload(s *packfs.Store, unit, ack func()) error {
	r := rand.New(rand.NewPCG(16, 17))
	suid := fs.ModeSetuid | fs.ModeSetgid | 0o755
	for _, n := range []string{"a", "b", "c"} {
		if err := s.WriteFile(n, []byte(n), 0o755); err != nil {
			return err
		}
		unit()
		if err := s.Chmod(n, suid); err != nil {
			return err
		}
		unit()
		if err := s.Symlink(n, "l"+n); err != nil {
			return err
		}
		unit()
	}
	for i := range 60 {
		n := []string{"a", "b", "c", "la", "lb", "lc", "."}[r.IntN(7)]
		id := func() int { return []int{-1, 0, 1000, 65534}[r.IntN(4)] }
		var err error
		switch r.IntN(4) {
		case 0:
			err = s.Chown(n, id(), id())
		case 1:
			err = s.Lchown(n, id(), id())
		case 2:
			t := time.Unix(int64(1000+i), 0)
			err = s.Lchtimes(n, t, t)
		default:
			err = s.Chmod(n, suid)
		}
		if err != nil {
			return err
		}
		unit()
		switch r.IntN(8) {
		case 0:
			if err = s.Sync(); err == nil {
				ack()
			}
		case 1:
			err = s.Checkpoint()
		}
		if err != nil {
			return err
		}
	}
	if err := s.Close(); err != nil {
		return err
	}
	ack()
	return nil
}

// TestIssue16StoreOwnersDurable: owners and a symlink's own times survive
// a reopen (replay), a checkpoint (into the pack's attribute table) and
// a flatten.
func TestIssue16StoreOwnersDurable(t *testing.T) {
	m := vfstest.NewMemFS()
	s, err := packfs.Open("", &packfs.Options{FS: m, CheckpointBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	var want string
	if err := ownerWorkload(s, func() { want = "" }, func() {}); err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"replay", "checkpoint", "flatten"} {
		s, err := packfs.Open("", &packfs.Options{FS: m, CheckpointBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		got := ownerDump(t, s)
		if want == "" {
			want = got
			if !strings.Contains(got, "65534") || !strings.Contains(got, "1000") {
				t.Fatalf("the workload gave no owners:\n%s", got)
			}
		} else if got != want {
			t.Fatalf("after %s:\n%s\nwant\n%s", step, got, want)
		}
		switch step {
		case "replay":
			err = s.Checkpoint()
		case "checkpoint":
			err = s.Flatten()
		}
		mustDo(t, err)
		mustDo(t, s.Close())
	}
}

// TestIssue16StoreOwnersCrash crashes the store at every file-system
// operation of ownerWorkload: the reopened store holds the owners and
// link times of some prefix of the changes, one that includes every
// acknowledged one.
func TestIssue16StoreOwnersCrash(t *testing.T) {
	m := vfstest.NewMemFS()
	s, err := packfs.Open("", &packfs.Options{FS: m})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string][]int{}
	n := 0
	record := func() {
		d := ownerDump(t, s)
		seen[d] = append(seen[d], n)
		n++
	}
	record()
	if err := ownerWorkload(s, record, func() {}); err != nil {
		t.Fatal(err)
	}
	total := m.Count()
	stride := 1
	if raceEnabled || testsize.Short() {
		stride = 7
	}
	for k := 0; k <= total; k += stride {
		m := vfstest.NewMemFS()
		m.CrashAt(k)
		units, acked := 0, 0
		if s, err := packfs.Open("", &packfs.Options{FS: m, CheckpointBytes: -1}); err == nil {
			ownerWorkload(s, func() { units++ }, func() { acked = units })
		}
		rec := m.Recover(vfstest.Torn{Keep: 0.5, Rand: rand.New(rand.NewPCG(uint64(k), 3))})
		s, err := packfs.Open("", &packfs.Options{FS: rec})
		if err != nil {
			t.Fatalf("crash at %d of %d: reopen: %v", k, total, err)
		}
		got := ownerDump(t, s)
		at, ok := seen[got]
		if !ok {
			t.Fatalf("crash at %d of %d: the recovered tree is no state of the workload:\n%s", k, total, got)
		}
		if at[len(at)-1] < acked {
			t.Fatalf("crash at %d of %d: recovered state %v, but %d units were acknowledged", k, total, at, acked)
		}
		mustDo(t, s.Close())
	}
}

// TestIssue16CopyUpDirSetuid: a lower directory's setuid bit survives
// its copy-up (the differential with setuid bits found it dropped, since
// a copy kept only the bits Mkdir can give and setgid).
func TestIssue16CopyUpDirSetuid(t *testing.T) {
	mode := fs.ModeSetuid | fs.ModeSetgid | 0o744
	r := lowerPack(t, func(m *mem.FS) {
		mustDo(t, m.Mkdir("d", 0o755))
		mustDo(t, m.Chmod("d", mode))
	})
	u := packfs.New(mem.New(), r)
	mustDo(t, u.WriteFile("d/f", nil, 0o644))
	fi, err := u.Stat("d")
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode() &^ fs.ModeDir; got != mode {
		t.Errorf("d after copy-up: %v, want %v", got, mode)
	}
}

// TestIssue16HandleChown: Chown and Chmod through an open file of the
// store reach the file whatever its name, are logged while it has one
// (they survive a reopen), and reach a removed file without touching
// the name's new file.
func TestIssue16HandleChown(t *testing.T) {
	m := vfstest.NewMemFS()
	s, err := packfs.Open("", &packfs.Options{FS: m})
	if err != nil {
		t.Fatal(err)
	}
	mustDo(t, s.WriteFile("f", []byte("x"), 0o644))
	f, err := s.OpenFile("f", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustDo(t, s.Rename("f", "g"))
	mustDo(t, f.(layer.ChownFile).Chown(5, 6))
	mustDo(t, f.(layer.ChmodFile).Chmod(0o600))
	mustDo(t, f.Close())
	mustDo(t, s.Close())
	s, err = packfs.Open("", &packfs.Options{FS: m})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := ownerDump(t, s); !strings.Contains(got, "g -rw------- 5:6\n") {
		t.Fatalf("after reopen:\n%s", got)
	}
	h, err := s.OpenFile("g", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	mustDo(t, s.Remove("g"))
	mustDo(t, s.WriteFile("g", nil, 0o644))
	mustDo(t, h.(layer.ChownFile).Chown(7, -1))
	fi, err := h.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if u, g, _ := layer.OwnerOf(fi); u != 7 || g != 6 {
		t.Errorf("the removed file: %d:%d, want 7:6", u, g)
	}
	if got := ownerDump(t, s); !strings.Contains(got, "g -rw-r--r-- -1:-1\n") {
		t.Errorf("the new g changed:\n%s", got)
	}
}

// TestIssue16TxOwners: Lchown, Chown and Lchtimes in a transaction are
// all or nothing: a failing one leaves the owners and times as they
// were, a committed one lasts through a reopen.
func TestIssue16TxOwners(t *testing.T) {
	m := vfstest.NewMemFS()
	s, err := packfs.Open("", &packfs.Options{FS: m})
	if err != nil {
		t.Fatal(err)
	}
	mustDo(t, s.WriteFile("f", nil, 0o644))
	mustDo(t, s.Symlink("f", "l"))
	t1 := time.Unix(4321, 0)
	change := func(tx *packfs.Tx) error {
		if err := tx.Lchown("l", 1, 2); err != nil {
			return err
		}
		if err := tx.Chown("l", 3, 4); err != nil {
			return err
		}
		return tx.Lchtimes("l", t1, t1)
	}
	before := ownerDump(t, s)
	err = s.Update(func(tx *packfs.Tx) error {
		if err := change(tx); err != nil {
			return err
		}
		return errTx
	})
	if !errors.Is(err, errTx) {
		t.Fatal(err)
	}
	if got := ownerDump(t, s); got != before {
		t.Fatalf("a failed transaction changed owners:\n%s\nwant\n%s", got, before)
	}
	mustDo(t, s.Update(change))
	want := ownerDump(t, s)
	if !strings.Contains(want, "f -rw-r--r-- 3:4\n") || !strings.Contains(want, "l Lrwxrwxrwx 1:2 4321000000000\n") {
		t.Fatalf("after the transaction:\n%s", want)
	}
	mustDo(t, s.Close())
	s, err = packfs.Open("", &packfs.Options{FS: m})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := ownerDump(t, s); got != want {
		t.Fatalf("after reopen:\n%s\nwant\n%s", got, want)
	}
}

// TestIssue16StoreRootModeBits: the root's setuid, setgid and sticky
// bits survive what gives the store a fresh upper layer: a checkpoint, a
// reopen from the manifest alone, and an undone transaction. A root of
// 0o755 with them lost them, as the crash test found after a checkpoint
// whose log held no later change; readers running beside the
// checkpoints never see them go.
func TestIssue16StoreRootModeBits(t *testing.T) {
	for _, mode := range []fs.FileMode{
		fs.ModeSetuid | fs.ModeSetgid | 0o755,
		fs.ModeSetgid | 0o755,
		fs.ModeSticky | 0o755,
		fs.ModeSticky | 0o700,
	} {
		t.Run(mode.String(), func(t *testing.T) {
			want := fs.ModeDir | mode
			check := func(s *packfs.Store, step string) {
				t.Helper()
				fi, err := s.Stat(".")
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode() != want {
					t.Fatalf("after %s: the root is %v, want %v", step, fi.Mode(), want)
				}
			}
			m := vfstest.NewMemFS()
			s, err := packfs.Open("", &packfs.Options{FS: m, CheckpointBytes: -1})
			if err != nil {
				t.Fatal(err)
			}
			mustDo(t, s.WriteFile("f", []byte("x"), 0o644))
			mustDo(t, s.Chmod(".", mode))
			check(s, "chmod")
			undone := func(step string) {
				t.Helper()
				err := s.Update(func(tx *packfs.Tx) error {
					if err := tx.Chmod("f", 0o600); err != nil {
						return err
					}
					return errTx
				})
				if !errors.Is(err, errTx) {
					t.Fatal(err)
				}
				check(s, step)
			}
			undone("an undone transaction")

			stop := make(chan struct{})
			bad := make(chan fs.FileMode, 1)
			done := make(chan struct{})
			defer func() {
				select {
				case <-done:
				default:
					close(stop)
					<-done
				}
			}()
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					default:
					}
					if fi, err := s.Stat("."); err == nil && fi.Mode() != want {
						select {
						case bad <- fi.Mode():
						default:
						}
					}
				}
			}()
			for range 20 {
				mustDo(t, s.Checkpoint())
			}
			close(stop)
			<-done
			select {
			case got := <-bad:
				t.Fatalf("a reader beside a checkpoint saw the root as %v, want %v", got, want)
			default:
			}
			check(s, "checkpoint")
			mustDo(t, s.Close())

			s, err = packfs.Open("", &packfs.Options{FS: m, CheckpointBytes: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			check(s, "reopen")
			undone("an undone transaction after the reopen")
			mustDo(t, s.Flatten())
			check(s, "flatten")
		})
	}
}
