package packfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer/mem"
)

// probeState is what a reader sees of one name: missing, or its info and
// contents.
type probeState struct {
	missing bool
	fi      fs.FileInfo
	data    []byte
}

// watchOp runs op once on a fresh union over copyUpLower's pack (after
// prep) while readers look at names through the live union and through
// Snapshot(), and reports every state ok refuses.
func watchOp(t *testing.T, prep func(u *packfs.FS) error, op func(u *packfs.FS) error, names []string, ok func(name string, s probeState) string) {
	t.Helper()
	lower := copyUpLower(t)
	for round := range 6 {
		u := packfs.New(mem.New(), lower)
		if prep != nil {
			must(t, prep(u))
		}
		var stop atomic.Bool
		var bad atomic.Int64
		var first sync.Once
		look := func(fsys fs.FS, how string) {
			for _, name := range names {
				var s probeState
				fi, err := fs.Stat(fsys, name)
				if errors.Is(err, fs.ErrNotExist) {
					s.missing = true
				} else if err != nil {
					bad.Add(1)
					first.Do(func() { t.Errorf("round %d %s: Stat(%s): %v", round, how, name, err) })
					continue
				} else {
					s.fi = fi
					if how == "snapshot" && !fi.IsDir() {
						if s.data, err = fs.ReadFile(fsys, name); err != nil {
							bad.Add(1)
							first.Do(func() { t.Errorf("round %d %s: ReadFile(%s): %v", round, how, name, err) })
							continue
						}
						if int64(len(s.data)) != fi.Size() {
							bad.Add(1)
							first.Do(func() {
								t.Errorf("round %d %s: %s: %d bytes read, Stat says %d", round, how, name, len(s.data), fi.Size())
							})
						}
					}
				}
				if msg := ok(name, s); msg != "" {
					bad.Add(1)
					first.Do(func() { t.Errorf("round %d %s: %s: %s", round, how, name, msg) })
				}
			}
		}
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(2)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					look(u, "live")
				}
			}()
			go func() {
				defer wg.Done()
				for !stop.Load() {
					snap, err := u.Snapshot()
					if err != nil {
						t.Error(err)
						return
					}
					look(snap, "snapshot")
				}
			}()
		}
		time.Sleep(time.Millisecond)
		err := op(u)
		stop.Store(true)
		wg.Wait()
		must(t, err)
		snap, err := u.Snapshot()
		must(t, err)
		look(snap, "snapshot")
		if n := bad.Load(); n > 0 {
			t.Errorf("round %d: %d bad reads", round, n)
			return
		}
	}
}

var (
	probeOld  = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	probeNew  = time.Date(2011, 2, 3, 4, 5, 6, 0, time.UTC)
	probeFull = bytes.Repeat([]byte("0123456789abcdef"), copyUpSize/16)
)

// whole reports what is wrong with s as the lower d/big, unchanged but for
// what allow lets through.
func whole(s probeState, modes []fs.FileMode, mtimes []time.Time) string {
	switch {
	case s.missing:
		return "missing"
	case s.fi.Size() != copyUpSize:
		return fmt.Sprintf("size %d", s.fi.Size())
	case s.data != nil && !bytes.Equal(s.data, probeFull):
		return "contents differ"
	}
	modeOK, mtimeOK := false, false
	for _, m := range modes {
		modeOK = modeOK || s.fi.Mode() == m
	}
	for _, m := range mtimes {
		mtimeOK = mtimeOK || s.fi.ModTime().Equal(m)
	}
	if !modeOK || !mtimeOK {
		return fmt.Sprintf("mode %v mtime %v", s.fi.Mode(), s.fi.ModTime())
	}
	return ""
}

// dirSame reports what is wrong with s as the lower directory d.
func dirSame(s probeState) string {
	if s.missing || s.fi.Mode() != fs.ModeDir|0o750 || !s.fi.ModTime().Equal(probeOld.Add(time.Hour)) {
		return fmt.Sprintf("directory d: %+v", s)
	}
	return ""
}

// TestIssue14ProbeAttrCopyUp: Chmod and Chtimes of a lower file copy it up
// with its new attribute in one step: readers never see a short copy, the
// other attribute changed, or its directory changed.
func TestIssue14ProbeAttrCopyUp(t *testing.T) {
	t.Run("Chmod", func(t *testing.T) {
		watchOp(t, nil, func(u *packfs.FS) error { return u.Chmod("d/big", 0o600) }, []string{"d/big", "d"},
			func(name string, s probeState) string {
				if name == "d" {
					return dirSame(s)
				}
				return whole(s, []fs.FileMode{0o640, 0o600}, []time.Time{probeOld})
			})
	})
	t.Run("Chtimes", func(t *testing.T) {
		watchOp(t, nil, func(u *packfs.FS) error { return u.Chtimes("d/big", probeNew, probeNew) }, []string{"d/big", "d"},
			func(name string, s probeState) string {
				if name == "d" {
					return dirSame(s)
				}
				return whole(s, []fs.FileMode{0o640}, []time.Time{probeOld, probeNew})
			})
	})
}

// TestIssue14ProbeTruncateCopyUp: truncating a lower file shows readers
// the lower file whole or the truncated one, never a short copy of the
// lower with its old mtime.
func TestIssue14ProbeTruncateCopyUp(t *testing.T) {
	check := func(size int64) func(string, probeState) string {
		return func(name string, s probeState) string {
			if !s.missing && s.fi.Size() == size && (s.data == nil || bytes.Equal(s.data, probeFull[:size])) {
				return ""
			}
			return whole(s, []fs.FileMode{0o640}, []time.Time{probeOld})
		}
	}
	t.Run("O_TRUNC", func(t *testing.T) {
		watchOp(t, nil, func(u *packfs.FS) error {
			f, err := u.OpenFile("d/big", os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				return err
			}
			return f.Close()
		}, []string{"d/big"}, check(0))
	})
	t.Run("Truncate", func(t *testing.T) {
		watchOp(t, nil, func(u *packfs.FS) error {
			f, err := u.OpenFile("d/big", os.O_RDWR, 0)
			if err != nil {
				return err
			}
			if err := f.Truncate(10); err != nil {
				return err
			}
			return f.Close()
		}, []string{"d/big"}, check(10))
	})
}

// TestIssue14ProbeRenameDirCopyUp: renaming a lower directory shows
// snapshot readers exactly one of the old and new names, whole.
func TestIssue14ProbeRenameDirCopyUp(t *testing.T) {
	lower := copyUpLower(t)
	for round := range 6 {
		u := packfs.New(mem.New(), lower)
		var stop atomic.Bool
		var bad atomic.Int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			for !stop.Load() {
				snap, err := u.Snapshot()
				if err != nil {
					t.Error(err)
					return
				}
				a, errA := fs.Stat(snap, "d/big")
				b, errB := fs.Stat(snap, "e/big")
				switch {
				case errA == nil && errB == nil, errA != nil && errB != nil:
					if bad.Add(1) == 1 {
						t.Errorf("round %d: d/big %v, e/big %v: want exactly one", round, errA, errB)
					}
				case errA == nil && a.Size() != copyUpSize, errB == nil && b.Size() != copyUpSize:
					if bad.Add(1) == 1 {
						t.Errorf("round %d: a short file during the rename", round)
					}
				}
			}
		}()
		time.Sleep(time.Millisecond)
		err := u.Rename("d", "e")
		stop.Store(true)
		<-done
		must(t, err)
		if bad.Load() > 0 {
			return
		}
	}
}

// TestIssue14ProbeShadowRemoval: removing an upper file that shadows a
// lower one, and creating a file over a whiteout, never shows readers the
// lower file.
func TestIssue14ProbeShadowRemoval(t *testing.T) {
	notLower := func(allowed ...string) func(string, probeState) string {
		return func(name string, s probeState) string {
			if s.missing {
				return ""
			}
			if s.fi.Size() == copyUpSize {
				return "the lower file shows through"
			}
			for _, a := range allowed {
				if s.data == nil || string(s.data) == a {
					return ""
				}
			}
			return fmt.Sprintf("contents %q", s.data)
		}
	}
	t.Run("Remove", func(t *testing.T) {
		watchOp(t, func(u *packfs.FS) error { return u.WriteFile("d/big", []byte("upper"), 0o644) },
			func(u *packfs.FS) error { return u.Remove("d/big") }, []string{"d/big"}, notLower("upper"))
	})
	t.Run("CreateOverWhiteout", func(t *testing.T) {
		watchOp(t, func(u *packfs.FS) error { return u.Remove("d/big") },
			func(u *packfs.FS) error { return u.WriteFile("d/big", []byte("new"), 0o644) }, []string{"d/big"}, notLower("", "new"))
	})
	t.Run("RemoveAll", func(t *testing.T) {
		watchOp(t, func(u *packfs.FS) error { return u.WriteFile("d/x", []byte("upper"), 0o644) },
			func(u *packfs.FS) error { return u.RemoveAll("d") }, []string{"d/big", "d/x"}, func(name string, s probeState) string {
				if name == "d/big" && !s.missing {
					return whole(s, []fs.FileMode{0o640}, []time.Time{probeOld})
				}
				return ""
			})
	})
}

// TestIssue14ProbeOpaqueRecreate: a lower directory removed and made
// again (by Mkdir or by MkdirAll of a chain through it) is opaque from the
// instant it shows: readers never see the lower's entries in it.
func TestIssue14ProbeOpaqueRecreate(t *testing.T) {
	hidden := func(name string, s probeState) string {
		switch {
		case name == "d/big" && !s.missing:
			return "the removed lower file shows through"
		case name == "d" && !s.missing && s.fi.Mode() != fs.ModeDir|0o700:
			return fmt.Sprintf("directory d with mode %v", s.fi.Mode())
		}
		return ""
	}
	for _, c := range []struct {
		name string
		op   func(u *packfs.FS) error
	}{
		{"Mkdir", func(u *packfs.FS) error { return u.Mkdir("d", 0o700) }},
		{"MkdirAll", func(u *packfs.FS) error { return u.MkdirAll("d/e/f/g", 0o700) }},
		{"WriteFileAfterMkdir", func(u *packfs.FS) error {
			if err := u.Mkdir("d", 0o700); err != nil {
				return err
			}
			return u.WriteFile("d/other", []byte("x"), 0o644)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			watchOp(t, func(u *packfs.FS) error { return u.RemoveAll("d") }, c.op, []string{"d", "d/big"}, hidden)
		})
	}
}
