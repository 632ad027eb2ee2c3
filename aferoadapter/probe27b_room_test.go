package aferoadapter_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/dirfs"
	"github.com/packfs/packfs/layer/mem"
	"github.com/spf13/afero"
)

// Probes of e8035f5 (the adapter's handle over *mem.FS and mem's handle
// in one allocation, mem.OpenFileRoom).

func probe27bClass(err error) string {
	if errors.Is(err, syscall.ENAMETOOLONG) {
		return "ENAMETOOLONG"
	}
	return class(err) + " " + errOp(err)
}

func probe27bSetup(t *testing.T, fsys afero.Fs) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(afero.WriteFile(fsys, "a", []byte("hello"), 0o644))
	must(fsys.Mkdir("d", 0o755))
	must(afero.WriteFile(fsys, "d/x", []byte("xx"), 0o644))
	must(afero.WriteFile(fsys, "d/y", nil, 0o644))
	l := fsys.(afero.Symlinker)
	must(l.SymlinkIfPossible("a", "ln"))
	must(l.SymlinkIfPossible("d", "lnd"))
	must(l.SymlinkIfPossible("nope", "dang"))
}

// probe27bDescribe runs a short use of an opened handle and describes it.
func probe27bDescribe(f afero.File, name string) string {
	var b strings.Builder
	fi, err := f.Stat()
	if err == nil {
		size := fi.Size()
		if fi.IsDir() {
			size = 0
		}
		fmt.Fprintf(&b, "stat %v %d;", fi.Mode().Type(), size)
	} else {
		fmt.Fprintf(&b, "stat %s;", probe27bClass(err))
	}
	buf := make([]byte, 16)
	n, err := f.Read(buf)
	fmt.Fprintf(&b, "read %q %s;", buf[:n], class(err))
	n, err = f.Write([]byte("W"))
	fmt.Fprintf(&b, "write %d %s;", n, class(err))
	names, err := f.Readdirnames(-1)
	slices.Sort(names)
	fmt.Fprintf(&b, "names %v %s;", names, class(err))
	return b.String()
}

// TestProbe27bOpenFlagsDifferential: every flag combination on decorated
// names, through symlinks, against Linux; the adapter's Name() is the
// name as passed, and after Close every method fails with ErrClosed.
func TestProbe27bOpenFlagsDifferential(t *testing.T) {
	host, err := newHostFsIn(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ad := aferoadapter.New(mem.New())
	probe27bSetup(t, host)
	probe27bSetup(t, ad)
	long255 := strings.Repeat("n", 255)
	long256 := strings.Repeat("n", 256)
	names := []string{"", ".", "/", "a", "a/", "a/.", "a/..", "//a", "/a", "./a", "d", "d/", "d/.", "d/..",
		"d/x", "d//x", "d/x/", "ln", "ln/", "lnd", "lnd/", "lnd/x", "dang", "dang/", "new", "d/new", "new/",
		long255, "d/" + long255, long256, "d/" + long256}
	extras := []int{os.O_CREATE, os.O_EXCL, os.O_TRUNC, os.O_APPEND, syscall.O_NOFOLLOW, syscall.O_DIRECTORY}
	mismatches := 0
	for _, acc := range []int{os.O_RDONLY, os.O_WRONLY, os.O_RDWR} {
		for mask := range 1 << len(extras) {
			flag := acc
			for i, e := range extras {
				if mask&(1<<i) != 0 {
					flag |= e
				}
			}
			if flag&os.O_CREATE != 0 && flag&syscall.O_DIRECTORY != 0 {
				continue // TestProbe27bCreateDirectory
			}
			for _, name := range names {
				if name == "/" && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0 {
					// the host's "/" is the sandbox directory with a
					// trailing slash (EISDIR), not a root (EEXIST)
					continue
				}
				if flag&syscall.O_NOFOLLOW != 0 && flag&syscall.O_DIRECTORY != 0 &&
					(name == "ln" || name == "lnd" || name == "dang") {
					continue // TestProbe27bNoFollowDirectorySymlink
				}
				hf, herr := host.OpenFile(name, flag, 0o644)
				af, aerr := ad.OpenFile(name, flag, 0o644)
				hc, ac := probe27bClass(herr), probe27bClass(aerr)
				what := fmt.Sprintf("OpenFile(%q, %#o)", name, flag)
				if hc != ac {
					t.Errorf("%s: host %s (%v), adapter %s (%v)", what, hc, herr, ac, aerr)
					mismatches++
				}
				var pe *fs.PathError
				if aerr != nil && errors.As(aerr, &pe) && pe.Path != name {
					t.Errorf("%s: error path %q, want %q", what, pe.Path, name)
				}
				if af != nil {
					if af.Name() != name {
						t.Errorf("%s: Name() = %q, want as passed", what, af.Name())
					}
				}
				if hf != nil && af != nil {
					hd, ad := probe27bDescribe(hf, name), probe27bDescribe(af, name)
					if hd != ad {
						t.Errorf("%s: host %s\n adapter %s", what, hd, ad)
						mismatches++
					}
				}
				if hf != nil {
					hf.Close()
				}
				if af != nil {
					if err := af.Close(); err != nil {
						t.Errorf("%s: Close: %v", what, err)
					}
					probe27bAfterClose(t, what, af, flag&os.O_APPEND != 0)
				}
				// keep the trees alike: restore what the opens changed
				for _, fsys := range []afero.Fs{host, ad} {
					fsys.Remove("new")
					fsys.Remove("d/new")
					fsys.Remove(long255)
					fsys.Remove("d/" + long255)
					afero.WriteFile(fsys, "a", []byte("hello"), 0o644)
					afero.WriteFile(fsys, "d/x", []byte("xx"), 0o644)
				}
				if mismatches > 20 {
					t.Fatal("too many mismatches")
				}
			}
		}
	}
}

// probe27bAfterClose: every method of a closed handle fails with an error
// wrapping fs.ErrClosed.
func probe27bAfterClose(t *testing.T, what string, f afero.File, appendMode bool) {
	t.Helper()
	check := func(m string, err error) {
		t.Helper()
		if !errors.Is(err, fs.ErrClosed) {
			t.Errorf("%s: %s after Close: %v, want ErrClosed", what, m, err)
		}
	}
	buf := make([]byte, 4)
	_, err := f.Read(buf)
	check("Read", err)
	_, err = f.ReadAt(buf, 0)
	check("ReadAt", err)
	_, err = f.Write([]byte("z"))
	check("Write", err)
	if !appendMode { // TestProbe27bWriteAtAppendAfterClose
		_, err = f.WriteAt([]byte("z"), 0)
		check("WriteAt", err)
	}
	_, err = f.WriteString("z")
	check("WriteString", err)
	_, err = f.Seek(0, io.SeekStart)
	check("Seek", err)
	check("Truncate", f.Truncate(0))
	check("Sync", f.Sync())
	_, err = f.Stat()
	check("Stat", err)
	_, err = f.Readdir(-1)
	check("Readdir", err)
	_, err = f.Readdirnames(-1)
	check("Readdirnames", err)
	check("Close", f.Close())
}

// TestProbe27bClosedEmptyBuffers: zero-length Read/Write/ReadAt/WriteAt on
// a closed handle, compared with os (which fails them with ErrClosed).
func TestProbe27bClosedEmptyBuffers(t *testing.T) {
	host, err := newHostFsIn(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ad := aferoadapter.New(mem.New())
	for _, fsys := range []afero.Fs{host, ad} {
		afero.WriteFile(fsys, "a", []byte("hello"), 0o644)
	}
	var out [2]string
	for i, fsys := range []afero.Fs{host, ad} {
		f, err := fsys.OpenFile("a", os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		_, e1 := f.Read(nil)
		_, e2 := f.Write(nil)
		_, e3 := f.ReadAt(nil, 0)
		_, e4 := f.WriteAt(nil, 0)
		_, e5 := f.WriteString("")
		_, e6 := f.Readdir(0)
		_, e7 := f.Readdirnames(0)
		out[i] = fmt.Sprint(class(e1), class(e2), class(e3), class(e4), class(e5), class(e6), class(e7))
	}
	if out[0] != out[1] {
		t.Errorf("zero-length calls on a closed handle (Read Write ReadAt WriteAt WriteString Readdir(0) Readdirnames(0)):\n host    %s\n adapter %s", out[0], out[1])
	}
}

// TestProbe27bClosedHandleIsolation: a closed handle's calls never affect
// another handle or the file, and handles from many opens are distinct.
func TestProbe27bClosedHandleIsolation(t *testing.T) {
	ad := aferoadapter.New(mem.New())
	if err := afero.WriteFile(ad, "f", []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	var hs []afero.File
	for range 50 {
		f, err := ad.OpenFile("f", os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, f)
	}
	for i, f := range hs {
		if i%2 == 0 {
			f.Close()
		}
	}
	for i, f := range hs {
		if i%2 == 0 {
			f.Truncate(0)
			f.WriteAt([]byte("XXXX"), 0)
			f.Seek(5, io.SeekStart)
			f.Write([]byte("Y"))
		}
	}
	b, err := afero.ReadFile(ad, "f")
	if err != nil || string(b) != "0123456789" {
		t.Fatalf("file after closed handles' writes: %q, %v", b, err)
	}
	for i, f := range hs {
		if i%2 == 1 {
			if _, err := f.Seek(int64(i%10), io.SeekStart); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 1)
			if _, err := f.Read(buf); err != nil || buf[0] != byte('0'+i%10) {
				t.Fatalf("handle %d: %q, %v", i, buf, err)
			}
			f.Close()
		}
	}
}

// TestProbe27bStatAfterRemoveRename: a handle's Stat after its file is
// removed or renamed, and Readdir of opened directories, against Linux.
func TestProbe27bStatAfterRemoveRename(t *testing.T) {
	host, err := newHostFsIn(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ad := aferoadapter.New(mem.New())
	var outs [2][]string
	for k, fsys := range []afero.Fs{host, ad} {
		probe27bSetup(t, fsys)
		add := func(s string, a ...any) { outs[k] = append(outs[k], fmt.Sprintf(s, a...)) }
		f1, err := fsys.OpenFile("a", os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		f2, err := fsys.Open("d/x")
		if err != nil {
			t.Fatal(err)
		}
		d, err := fsys.Open("d")
		if err != nil {
			t.Fatal(err)
		}
		dl, err := fsys.Open("lnd/")
		if err != nil {
			t.Fatal(err)
		}
		add("remove %s", class(fsys.Remove("a")))
		add("rename %s", class(fsys.Rename("d/x", "d/z")))
		fi, err := f1.Stat()
		add("stat1 %s %v %v", class(err), fi != nil && fi.Size() == 5, fi != nil && fi.Name() == "a")
		n, err := f1.Write([]byte("more"))
		add("write1 %d %s", n, class(err))
		fi, err = f1.Stat()
		add("stat1b %s %d", class(err), fi.Size())
		fi, err = f2.Stat()
		add("stat2 %s %d", class(err), fi.Size())
		infos, err := d.Readdir(-1)
		var ns []string
		for _, fi := range infos {
			ns = append(ns, fmt.Sprint(fi.Name(), fi.Mode().Type(), fi.Size()))
		}
		slices.Sort(ns)
		add("readdir %v %s", ns, class(err))
		names, err := dl.Readdirnames(1)
		add("readdirnames1 %d %s", len(names), class(err))
		names2, err := dl.Readdirnames(-1)
		all := append(names, names2...)
		slices.Sort(all)
		add("readdirnames %v %s", all, class(err))
		names, err = dl.Readdirnames(1)
		add("readdirnames end %v %s", names, class(err))
		if _, err := dl.Seek(0, io.SeekStart); err != nil {
			add("seek %s", class(err))
		}
		names, err = dl.Readdirnames(-1)
		slices.Sort(names)
		add("readdirnames after seek %v %s", names, class(err))
		for _, f := range []afero.File{f1, f2, d, dl} {
			f.Close()
		}
	}
	if !slices.Equal(outs[0], outs[1]) {
		t.Errorf("host:\n %s\nadapter:\n %s", strings.Join(outs[0], "\n "), strings.Join(outs[1], "\n "))
	}
}

// TestProbe27bConcurrentHandles: many goroutines opening, writing,
// reading, seeking, truncating, syncing and closing handles of the same
// and different files; afterwards each file's size is within what was
// written and every handle is independent (each Close once fine, twice
// ErrClosed).
func TestProbe27bConcurrentHandles(t *testing.T) {
	ad := aferoadapter.New(mem.New())
	if err := ad.MkdirAll("dir/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	files := []string{"shared", "dir/f1", "dir/sub/f2", "/shared", "dir/../shared"}
	var wg sync.WaitGroup
	errc := make(chan error, 64)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 3))
			own := fmt.Sprintf("own%d", w)
			ownData := []byte{}
			for it := range 200 {
				name := files[rng.IntN(len(files))]
				mine := rng.IntN(3) == 0
				if mine {
					name = own
				}
				f, err := ad.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
				if err != nil {
					errc <- err
					return
				}
				if f.Name() != name {
					errc <- fmt.Errorf("Name %q want %q", f.Name(), name)
					return
				}
				if mine {
					// own file: exact model
					switch rng.IntN(4) {
					case 0:
						b := []byte(fmt.Sprint(it))
						off := rng.IntN(len(ownData) + 1)
						if _, err := f.WriteAt(b, int64(off)); err != nil {
							errc <- err
							return
						}
						if off+len(b) > len(ownData) {
							ownData = append(ownData, make([]byte, off+len(b)-len(ownData))...)
						}
						copy(ownData[off:], b)
					case 1:
						n := rng.IntN(len(ownData) + 2)
						if err := f.Truncate(int64(n)); err != nil {
							errc <- err
							return
						}
						if n <= len(ownData) {
							ownData = ownData[:n]
						} else {
							ownData = append(ownData, make([]byte, n-len(ownData))...)
						}
					default:
						got, err := io.ReadAll(f)
						if err != nil || string(got) != string(ownData) {
							errc <- fmt.Errorf("%s: read %q, %v; want %q", own, got, err, ownData)
							return
						}
					}
				} else {
					switch rng.IntN(5) {
					case 0:
						f.Write([]byte("abc"))
					case 1:
						f.Seek(int64(rng.IntN(10)), io.SeekStart)
						f.Read(make([]byte, 5))
					case 2:
						f.Truncate(int64(rng.IntN(20)))
					case 3:
						f.Sync()
						f.Stat()
					case 4:
						f.WriteAt([]byte("zz"), int64(rng.IntN(30)))
					}
				}
				if err := f.Close(); err != nil {
					errc <- err
					return
				}
				if err := f.Close(); !errors.Is(err, fs.ErrClosed) {
					errc <- fmt.Errorf("second Close: %v", err)
					return
				}
				if _, err := f.Write([]byte("q")); !errors.Is(err, fs.ErrClosed) {
					errc <- fmt.Errorf("Write after Close: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}

// TestProbe27bManyHandlesInterleaved: handles of one file interleaving
// writes, reads, seeks, appends and truncates, against Linux.
func TestProbe27bManyHandlesInterleaved(t *testing.T) {
	host, err := newHostFsIn(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ad := aferoadapter.New(mem.New())
	for seed := range uint64(20) {
		var outs [2][]string
		for k, fsys := range []afero.Fs{host, ad} {
			fsys.Remove("f")
			rng := rand.New(rand.NewPCG(seed, 5))
			var hs [6]afero.File
			flags := []int{os.O_RDWR | os.O_CREATE, os.O_RDONLY, os.O_WRONLY | os.O_APPEND, os.O_RDWR | os.O_APPEND, os.O_WRONLY, os.O_RDWR}
			for i := range hs {
				f, err := fsys.OpenFile("f", flags[i], 0o644)
				if err != nil {
					t.Fatal(err)
				}
				hs[i] = f
			}
			for range 200 {
				i := rng.IntN(len(hs))
				f := hs[i]
				var s string
				switch op := rng.IntN(8); op {
				case 0:
					n, err := f.Write([]byte(fmt.Sprint(rng.IntN(1000))))
					s = fmt.Sprint("w", i, n, class(err))
				case 1:
					b := make([]byte, rng.IntN(8))
					n, err := f.Read(b)
					s = fmt.Sprintf("r%d %q %s", i, b[:n], class(err))
				case 2:
					off, err := f.Seek(int64(rng.IntN(20))-5, rng.IntN(3))
					s = fmt.Sprint("s", i, off, class(err))
				case 3:
					s = fmt.Sprint("t", i, class(f.Truncate(int64(rng.IntN(15)))))
				case 4:
					b := make([]byte, rng.IntN(8))
					n, err := f.ReadAt(b, int64(rng.IntN(20)))
					s = fmt.Sprintf("ra%d %q %s", i, b[:n], class(err))
				case 5:
					n, err := f.WriteAt([]byte("AB"), int64(rng.IntN(20)))
					s = fmt.Sprint("wa", i, n, class(err))
				case 6:
					fi, err := f.Stat()
					sz := int64(-1)
					if err == nil {
						sz = fi.Size()
					}
					s = fmt.Sprint("st", i, sz, class(err), class(f.Sync()))
				case 7:
					if rng.IntN(10) == 0 {
						s = fmt.Sprint("c", i, class(f.Close()))
					}
				}
				outs[k] = append(outs[k], s)
			}
			for _, f := range hs {
				f.Close()
			}
			b, err := afero.ReadFile(fsys, "f")
			outs[k] = append(outs[k], fmt.Sprintf("final %q %s", b, class(err)))
		}
		for j := range outs[0] {
			if outs[0][j] != outs[1][j] {
				t.Fatalf("seed %d step %d: host %s, adapter %s\n host so far %v", seed, j, outs[0][j], outs[1][j], outs[0][:j+1])
			}
		}
	}
}

// TestProbe27bWriteAtAppendAfterClose: WriteAt on a closed O_APPEND handle
// fails as os.File.WriteAt does: os's checkValid only refuses a nil
// *File, so a closed O_APPEND file gives the O_APPEND error, not
// ErrClosed; mem matches it (checked for read-only and writable handles).
func TestProbe27bWriteAtAppendAfterClose(t *testing.T) {
	host, err := newHostFsIn(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ad := aferoadapter.New(mem.New())
	for _, flag := range []int{os.O_WRONLY | os.O_CREATE | os.O_APPEND, os.O_RDONLY | os.O_APPEND} {
		var out [2]string
		for i, fsys := range []afero.Fs{host, ad} {
			f, err := fsys.OpenFile("a", flag, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
			_, err = f.WriteAt([]byte("z"), 0)
			out[i] = fmt.Sprintf("%s (%v)", class(err), err)
		}
		if out[0] != out[1] {
			t.Errorf("WriteAt on a closed O_APPEND handle (%#o): host %s, adapter %s", flag, out[0], out[1])
		}
	}
}

// TestProbe27bCreateDirectory: O_CREAT|O_DIRECTORY is EINVAL on Linux
// (since 6.4, build_open_flags) whatever the name names.
func TestProbe27bCreateDirectory(t *testing.T) {
	host, err := newHostFsIn(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	probe27bSetup(t, host)
	for _, b := range probe27bBackends(t) {
		ad := b.fs
		probe27bSetup(t, ad)
		var diffs []string
		for _, acc := range []int{os.O_RDONLY, os.O_WRONLY, os.O_RDWR} {
			for _, name := range []string{"a", "d", "d/", ".", "new", "ln", "lnd"} {
				flag := acc | os.O_CREATE | syscall.O_DIRECTORY
				hf, herr := host.OpenFile(name, flag, 0o644)
				af, aerr := ad.OpenFile(name, flag, 0o644)
				for _, f := range []afero.File{hf, af} {
					if f != nil {
						f.Close()
					}
				}
				if class(herr) != class(aerr) {
					diffs = append(diffs, fmt.Sprintf("OpenFile(%q, %#o): host %s, adapter %s", name, flag, class(herr), class(aerr)))
				}
			}
		}
		if len(diffs) > 0 {
			t.Errorf("%s: %d of 21 differ:\n%s", b.name, len(diffs), strings.Join(diffs, "\n"))
		}
	}
}

// TestProbe27bNoFollowDirectorySymlink: O_NOFOLLOW|O_DIRECTORY on a final
// symlink is ENOTDIR on Linux (do_open checks LOOKUP_DIRECTORY before
// may_open's ELOOP for a symlink), whatever the link points to.
func TestProbe27bNoFollowDirectorySymlink(t *testing.T) {
	host, err := newHostFsIn(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	probe27bSetup(t, host)
	for _, b := range probe27bBackends(t) {
		ad := b.fs
		probe27bSetup(t, ad)
		for _, name := range []string{"ln", "lnd", "dang"} {
			for _, flag := range []int{os.O_RDONLY, os.O_RDWR | os.O_TRUNC} {
				flag |= syscall.O_NOFOLLOW | syscall.O_DIRECTORY
				hf, herr := host.OpenFile(name, flag, 0)
				af, aerr := ad.OpenFile(name, flag, 0)
				for _, f := range []afero.File{hf, af} {
					if f != nil {
						f.Close()
					}
				}
				if class(herr) != class(aerr) {
					t.Errorf("%s: OpenFile(%q, %#o): host %s, adapter %s", b.name, name, flag, class(herr), class(aerr))
				}
			}
		}
	}
}

// probe27bBackends are the writable backends the two tests above run
// over, each through the adapter.
func probe27bBackends(t *testing.T) []struct {
	name string
	fs   afero.Fs
} {
	s, err := packfs.Open(t.TempDir(), &packfs.Options{Sync: packfs.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	d, err := dirfs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return []struct {
		name string
		fs   afero.Fs
	}{
		{"mem", aferoadapter.New(mem.New())},
		{"union", aferoadapter.New(packfs.New(mem.New()))},
		{"store", aferoadapter.New(s)},
		{"dirfs", aferoadapter.New(d)},
	}
}
