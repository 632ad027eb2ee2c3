package packreader_test

// Hostile probes of Reader.ReadFileAt (deeeb13) used directly: every
// entry of every directory against ReadFile, Open+ReadAll and Bytes, twice
// (the second through the frames checked by the first, checkedFrame),
// names that are no one element, handles LookupAt never gave, and a Close
// racing readers.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// prfaTree writes a tree whose files straddle the 64 KiB frames of an
// uncompressed pack in every way, with symlinks, a whiteout, holes and
// an empty file, and returns it with its files' contents.
func prfaTree(t *testing.T) (*mem.FS, map[string][]byte) {
	t.Helper()
	m := mem.New()
	files := map[string][]byte{}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(m.MkdirAll("d/sub/deeper", 0o755))
	must(m.MkdirAll("e", 0o755))
	sizes := []int{0, 1, 100, 64<<10 - 1, 64 << 10, 64<<10 + 1, 100 << 10, 200<<10 + 7, 3 << 20}
	for i, size := range sizes {
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(j*31 + i*7 + j>>9)
		}
		for _, dir := range []string{"d", "d/sub/deeper"} {
			name := fmt.Sprintf("%s/f%d", dir, i)
			files[name] = b
			must(m.WriteFile(name, b, 0o644))
		}
	}
	files["top"] = []byte("top")
	must(m.WriteFile("top", files["top"], 0o644))
	f, err := m.OpenFile("d/holes", os.O_CREATE|os.O_WRONLY, 0o644)
	must(err)
	_, err = f.WriteAt([]byte("after the hole"), 1<<20)
	must(err)
	must(f.Close())
	files["d/holes"] = append(make([]byte, 1<<20), "after the hole"...)
	must(m.Symlink("f1", "d/link"))
	must(m.Symlink("sub", "d/dirlink"))
	must(m.Whiteout("d/gone"))
	return m, files
}

func prfaPacks(t *testing.T, m *mem.FS) map[string]*packreader.Reader {
	t.Helper()
	out := map[string]*packreader.Reader{}
	for _, c := range []struct {
		what string
		opts []packwriter.Option
	}{{"v3", nil}, {"v3 zstd", []packwriter.Option{packwriter.WithCompression(1)}}, {"v2", []packwriter.Option{packwriter.WithFormat(2)}}} {
		name := filepath.Join(t.TempDir(), "t.pack")
		if err := packwriter.WriteFile(name, m.Snapshot(), c.opts...); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		mapped, err := packreader.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		ra, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		out[c.what+" mapped"], out[c.what+" ReaderAt"] = mapped, ra
	}
	return out
}

func prfaClass(b []byte, err error) string {
	if err == nil {
		return fmt.Sprintf("=%d bytes %x", len(b), b[:min(len(b), 8)])
	}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"ENOTDIR", syscall.ENOTDIR}, {"EISDIR", syscall.EISDIR}, {"ELOOP", syscall.ELOOP},
		{"ENOENT", fs.ErrNotExist}, {"EINVAL", syscall.EINVAL}, {"ErrInvalid", fs.ErrInvalid}, {"ENAMETOOLONG", syscall.ENAMETOOLONG},
		{"CLOSED", fs.ErrClosed}, {"CORRUPT", packreader.ErrCorrupt},
	} {
		if errors.Is(err, c.err) {
			return "!" + c.name
		}
	}
	return "!other " + err.Error()
}

// TestProbeReadFileAtEveryEntry: ReadFileAt of every entry of every
// directory, through the handles LookupAt gives, reads what ReadFile,
// Open+ReadAll and Bytes read for a regular file (a copy, non-nil when
// empty), twice; for anything else it fails as OpenAt does, naming path,
// with nil bytes: a directory EISDIR, a symlink ELOOP (not followed), a
// whiteout EINVAL, a missing name ENOENT.
func TestProbeReadFileAtEveryEntry(t *testing.T) {
	m, files := prfaTree(t)
	for what, r := range prfaPacks(t, m) {
		var walk func(dir any, p string)
		walk = func(dir any, p string) {
			list, err := r.ReadDir(p)
			if err != nil {
				t.Fatalf("%s: ReadDir(%s): %v", what, p, err)
			}
			names := []string{"missing"}
			for _, e := range list {
				names = append(names, e.Name())
			}
			for _, name := range names {
				full := name
				if p != "." {
					full = p + "/" + name
				}
				fi, lerr := r.Lstat(full)
				for pass := range 2 {
					got, err := r.ReadFileAt(dir, name, full)
					var want string
					switch {
					case lerr != nil:
						want = "!ENOENT"
					case fi.Mode().IsRegular():
						want = prfaClass(files[full], nil)
						rf, rerr := r.ReadFile(full)
						bs, berr := r.Bytes(full)
						if rerr != nil || berr != nil || !bytes.Equal(rf, files[full]) || !bytes.Equal(bs, files[full]) {
							t.Errorf("%s: ReadFile(%s)/Bytes = %v/%v", what, full, rerr, berr)
						}
						if f, err := r.Open(full); err == nil {
							b, err := io.ReadAll(f)
							f.Close()
							if err != nil || !bytes.Equal(b, files[full]) {
								t.Errorf("%s: Open+ReadAll(%s): %d bytes, %v", what, full, len(b), err)
							}
						}
					case fi.IsDir():
						want = "!EISDIR"
					case fi.Mode()&fs.ModeSymlink != 0:
						want = "!ELOOP"
					default:
						want = "!EINVAL"
					}
					if c := prfaClass(got, err); c != want {
						t.Errorf("%s pass %d: ReadFileAt(%s) = %s, want %s", what, pass, full, c, want)
					}
					if err == nil && !bytes.Equal(got, files[full]) {
						t.Errorf("%s pass %d: ReadFileAt(%s) read wrong bytes", what, pass, full)
					}
					if err == nil && got == nil {
						t.Errorf("%s: ReadFileAt(%s) = nil for an empty file, want []byte{}", what, full)
					}
					if err == nil && len(got) > 0 {
						got[0] ^= 0xff // a copy: the next pass reads it unchanged
					}
					var pe *fs.PathError
					if err != nil && (got != nil || !errors.As(err, &pe) || pe.Path != full) {
						t.Errorf("%s: ReadFileAt(%s) = %v, %v; want nil and a PathError naming the path", what, full, got, err)
					}
				}
				if lerr == nil && fi.IsDir() {
					e, err := r.LookupAt(dir, name)
					if err != nil || e.Dir == nil {
						t.Fatalf("%s: LookupAt(%s) = %v, %v", what, full, e, err)
					}
					walk(e.Dir, full)
				}
			}
		}
		walk(nil, ".")
		r.Close()
	}
}

// TestProbeReadFileAtOddNamesAndHandles: names that are no one element
// ("", ".", "..", with a slash, over NAME_MAX) read nothing and fail with
// nil bytes; handles LookupAt never gave (record numbers of files, out of
// range, of another type) fail or read one of the pack's files exactly,
// and never panic.
func TestProbeReadFileAtOddNamesAndHandles(t *testing.T) {
	m, files := prfaTree(t)
	for what, r := range prfaPacks(t, m) {
		d, err := r.LookupAt(nil, "d")
		if err != nil {
			t.Fatal(err)
		}
		for _, dir := range []any{nil, d.Dir} {
			for _, name := range []string{"", ".", "..", "/", "sub/deeper/f1", "f1/", "/f1", "./f1", "f1/.", strings.Repeat("x", 256), "f1\x00", "d/f1"} {
				b, err := r.ReadFileAt(dir, name, "p")
				if err == nil || b != nil {
					t.Errorf("%s: ReadFileAt(%v, %q) = %d bytes, %v; want nil and an error", what, dir, name, len(b), err)
				}
			}
		}
		// handles of any record number, and of other types
		valid := map[string]bool{}
		for _, b := range files {
			valid[string(b)] = true
		}
		handles := []any{uint64(1 << 62), ^uint64(0), int(1), "d", struct{}{}}
		for i := range uint64(80) {
			handles = append(handles, i)
		}
		for _, h := range handles {
			for _, name := range []string{"f1", "f2", "f3", "f8", "holes", "top", "link"} {
				b, err := r.ReadFileAt(h, name, "p")
				if err == nil && !valid[string(b)] {
					t.Errorf("%s: ReadFileAt(%v, %q) read %d bytes that are no file's", what, h, name, len(b))
				}
			}
		}
		r.Close()
	}
}

// TestProbeReadFileAtCloseRacing: readers call ReadFileAt (small files,
// files over frames, the 3 MiB one) while the pack is closed: each read
// gives the file's exact bytes or ErrClosed, and nothing faults.
func TestProbeReadFileAtCloseRacing(t *testing.T) {
	m, files := prfaTree(t)
	for what, r := range prfaPacks(t, m) {
		d, err := r.LookupAt(nil, "d")
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		started := make(chan struct{}, 4)
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				names := []string{"f1", "f3", "f4", "f6", "f7", "holes", "f8"}
				for k := 0; ; k++ {
					name := names[(k+i)%len(names)]
					b, err := r.ReadFileAt(d.Dir, name, "d/"+name)
					if k == 0 {
						started <- struct{}{}
					}
					switch {
					case errors.Is(err, fs.ErrClosed):
						return
					case err != nil:
						t.Errorf("%s: ReadFileAt(d/%s) beside Close: %v", what, name, err)
						return
					case !bytes.Equal(b, files[path.Join("d", name)]):
						t.Errorf("%s: ReadFileAt(d/%s) beside Close read wrong bytes", what, name)
						return
					}
				}
			}()
		}
		for range 4 {
			<-started
		}
		time.Sleep(2 * time.Millisecond)
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: readers hang after Close", what)
		}
	}
}
