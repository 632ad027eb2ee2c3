package ocilayer_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/ocilayer"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// node is what a test compares of one entry.
type node struct {
	Mode   fs.FileMode
	Mtime  time.Time
	Data   string
	Target string
}

// tree lists every entry of fsys but the root, without following symlinks.
// Symlink times are left out: Import cannot set them.
func tree(t *testing.T, fsys fs.FS) map[string]node {
	t.Helper()
	m := map[string]node{}
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || name == "." {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n := node{Mode: fi.Mode(), Mtime: fi.ModTime()}
		switch {
		case fi.Mode().IsRegular():
			b, err := fs.ReadFile(fsys, name)
			if err != nil {
				return err
			}
			n.Data = string(b)
		case fi.Mode()&fs.ModeSymlink != 0:
			n.Target, err = fs.ReadLink(fsys, name)
			if err != nil {
				return err
			}
			n.Mtime = time.Time{}
		}
		m[name] = n
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// contents lists what a union shows: type and data or target per name.
func contents(t *testing.T, fsys fs.FS) map[string]string {
	t.Helper()
	m := map[string]string{}
	for name, n := range tree(t, fsys) {
		switch {
		case n.Mode.IsDir():
			m[name] = "dir"
		case n.Mode&fs.ModeSymlink != 0:
			m[name] = "-> " + n.Target
		default:
			m[name] = n.Data
		}
	}
	return m
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var epoch = time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)

// sampleUpper builds an upper layer with every kind of entry.
func sampleUpper(t *testing.T) *mem.FS {
	t.Helper()
	u := mem.New()
	must(t, u.MkdirAll("etc/app", 0o755))
	must(t, u.WriteFile("etc/app/config", []byte("key = value\n"), 0o640))
	must(t, u.MkdirAll("bin", 0o755))
	must(t, u.WriteFile("bin/tool", []byte("#!/bin/sh\necho hi\n"), 0o755))
	must(t, u.Chmod("bin/tool", 0o755|fs.ModeSetuid))
	must(t, u.WriteFile("empty", nil, 0o600))
	must(t, u.Symlink("../etc/app/config", "bin/config"))
	must(t, u.Whiteout("gone.txt"))
	must(t, u.Whiteout("etc/removed-dir"))
	must(t, u.MkdirAll("var/cache", 0o700))
	must(t, layer.MarkOpaque(u, "var/cache"))
	must(t, u.WriteFile("var/cache/fresh", []byte("fresh"), 0o644))
	must(t, layer.MarkOpaque(u, "."))
	i := 0
	must(t, fs.WalkDir(u, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		i++
		return u.Chtimes(name, time.Time{}, epoch.Add(time.Duration(i)*time.Hour))
	}))
	return u
}

func TestRoundTrip(t *testing.T) {
	u := sampleUpper(t)
	var buf bytes.Buffer
	must(t, ocilayer.Export(&buf, u.Snapshot()))
	got := mem.New()
	must(t, ocilayer.Import(bytes.NewReader(buf.Bytes()), got))
	if diff := cmp.Diff(tree(t, u), tree(t, got)); diff != "" {
		t.Errorf("tree after round trip (-want +got):\n%s", diff)
	}
	for _, dir := range []string{".", "var/cache"} {
		if !layer.IsOpaque(got, dir) {
			t.Errorf("%s is not opaque after the round trip", dir)
		}
	}
	must(t, got.Check())

	// Exporting the same tree again gives the same bytes, and exporting
	// the imported tree the same entries but for symlink times.
	var same, again bytes.Buffer
	must(t, ocilayer.Export(&same, u.Snapshot()))
	if !bytes.Equal(buf.Bytes(), same.Bytes()) {
		t.Error("second export differs from the first")
	}
	// A pack of the upper layer keeps its whiteouts and opaque markers, so
	// it exports the same bytes.
	var pack, fromPack bytes.Buffer
	must(t, packwriter.Write(&pack, u.Snapshot()))
	r, err := packreader.OpenReaderAt(bytes.NewReader(pack.Bytes()), int64(pack.Len()))
	must(t, err)
	defer r.Close()
	must(t, ocilayer.Export(&fromPack, r))
	if !bytes.Equal(buf.Bytes(), fromPack.Bytes()) {
		t.Errorf("export of a pack differs:\n%v\nwant\n%v", members(t, fromPack.Bytes()), members(t, buf.Bytes()))
	}
	must(t, ocilayer.Export(&again, got.Snapshot()))
	if diff := cmp.Diff(members(t, buf.Bytes()), members(t, again.Bytes())); diff != "" {
		t.Errorf("export of the imported tree (-want +got):\n%s", diff)
	}
}

// member is one decoded member of a tar.
type member struct {
	Hdr  tar.Header
	Body string
}

// members decodes a tar, leaving out symlink times.
func members(t *testing.T, b []byte) []member {
	t.Helper()
	var es []member
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return es
		}
		must(t, err)
		body, err := io.ReadAll(tr)
		must(t, err)
		if h.Typeflag == tar.TypeSymlink {
			h.ModTime = time.Time{}
			delete(h.PAXRecords, "mtime")
		}
		es = append(es, member{*h, string(body)})
	}
}

func TestExportNames(t *testing.T) {
	var buf bytes.Buffer
	must(t, ocilayer.Export(&buf, sampleUpper(t).Snapshot()))
	var names []string
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		must(t, err)
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: uid/gid %d/%d", h.Name, h.Uid, h.Gid)
		}
		names = append(names, h.Name)
	}
	want := []string{
		".wh..wh..opq",
		"bin/", "bin/config", "bin/tool",
		"empty",
		"etc/", "etc/app/", "etc/app/config", "etc/.wh.removed-dir",
		".wh.gone.txt",
		"var/", "var/cache/", "var/cache/.wh..wh..opq", "var/cache/fresh",
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
}

func TestImportGzip(t *testing.T) {
	u := sampleUpper(t)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	must(t, ocilayer.Export(zw, u.Snapshot()))
	must(t, zw.Close())
	got := mem.New()
	must(t, ocilayer.Import(&buf, got))
	if diff := cmp.Diff(tree(t, u), tree(t, got)); diff != "" {
		t.Errorf("tree after gzip round trip (-want +got):\n%s", diff)
	}
}

// entry is one member of a test tar.
type entry struct {
	hdr  tar.Header
	body string
}

func file(name, body string) entry {
	return entry{tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(body))}, body}
}

func dir(name string) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755}}
}

func symlink(name, target string) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777}}
}

func hardlink(name, target string) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeLink, Name: name, Linkname: target}}
}

func tarOf(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := e.hdr
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// stackLayer is an OCI layer over the base of TestStacking.
func stackLayer(t *testing.T) []byte {
	return tarOf(t,
		file(".wh.c.txt", ""),         // delete a lower file
		file("a/.wh.gone", ""),        // delete a lower file in a merged dir
		dir("b/"),                     //
		file("b/.wh..wh..opq", ""),    // hide all of the lower b
		file("b/new", "new"),          //
		file("/e/f", "f"),             // absolute name, implied parent
		symlink("l", "e/f"),           //
		hardlink("e/g", "e/f"),        // copied
		file("a/keep", "overwritten"), // replace a lower file
		file(".wh.d", ""),             // delete a lower directory
	)
}

func TestStacking(t *testing.T) {
	base := mem.New()
	must(t, base.MkdirAll("a", 0o755))
	must(t, base.WriteFile("a/keep", []byte("keep"), 0o644))
	must(t, base.WriteFile("a/gone", []byte("gone"), 0o644))
	must(t, base.WriteFile("a/other", []byte("other"), 0o644))
	must(t, base.MkdirAll("b/sub", 0o755))
	must(t, base.WriteFile("b/old", []byte("old"), 0o644))
	must(t, base.WriteFile("b/sub/deep", []byte("deep"), 0o644))
	must(t, base.WriteFile("c.txt", []byte("c"), 0o644))
	must(t, base.MkdirAll("d", 0o755))
	must(t, base.WriteFile("d/x", []byte("x"), 0o644))

	var pack bytes.Buffer
	must(t, packwriter.Write(&pack, base.Snapshot()))
	r, err := packreader.OpenReaderAt(bytes.NewReader(pack.Bytes()), int64(pack.Len()))
	must(t, err)
	defer r.Close()

	want := map[string]string{
		"a":       "dir",
		"a/keep":  "overwritten",
		"a/other": "other",
		"b":       "dir",
		"b/new":   "new",
		"e":       "dir",
		"e/f":     "f",
		"e/g":     "f",
		"l":       "-> e/f",
	}
	for _, lower := range []struct {
		name string
		fsys fs.FS
	}{{"mem", base.Snapshot()}, {"pack", r}} {
		t.Run(lower.name, func(t *testing.T) {
			upper := mem.New()
			must(t, ocilayer.Import(bytes.NewReader(stackLayer(t)), upper))
			u := packfs.New(upper, lower.fsys)
			if diff := cmp.Diff(want, contents(t, u)); diff != "" {
				t.Errorf("union (-want +got):\n%s", diff)
			}
			// The imported layer itself, compacted into a pack, stacks the
			// same way: packs carry whiteouts and opaque directories.
			var delta bytes.Buffer
			must(t, packwriter.Write(&delta, upper.Snapshot()))
			dr, err := packreader.OpenReaderAt(bytes.NewReader(delta.Bytes()), int64(delta.Len()))
			must(t, err)
			defer dr.Close()
			u2 := packfs.New(mem.New(), dr, lower.fsys)
			if diff := cmp.Diff(want, contents(t, u2)); diff != "" {
				t.Errorf("union over a delta pack (-want +got):\n%s", diff)
			}
		})
	}
}

func TestImportSemantics(t *testing.T) {
	t.Run("whiteout of an entry of the same tar keeps it", func(t *testing.T) {
		dst := mem.New()
		must(t, ocilayer.Import(bytes.NewReader(tarOf(t, file("x", "x"), file(".wh.x", ""))), dst))
		if b, err := dst.ReadFile("x"); err != nil || string(b) != "x" {
			t.Errorf("x = %q, %v; want kept", b, err)
		}
	})
	t.Run("whiteout of a directory of the same tar makes it opaque", func(t *testing.T) {
		dst := mem.New()
		must(t, ocilayer.Import(bytes.NewReader(tarOf(t, file("d/x", "x"), file(".wh.d", ""))), dst))
		if !layer.IsOpaque(dst, "d") {
			t.Error("d not opaque")
		}
		if _, err := dst.Stat("d/x"); err != nil {
			t.Error(err)
		}
	})
	t.Run("directory over a whiteout is opaque", func(t *testing.T) {
		dst := mem.New()
		must(t, ocilayer.Import(bytes.NewReader(tarOf(t, file(".wh.d", ""), file("d/x", "x"))), dst))
		if !layer.IsOpaque(dst, "d") {
			t.Error("d not opaque")
		}
	})
	t.Run("whiteout replaces what dst held", func(t *testing.T) {
		dst := mem.New()
		must(t, dst.MkdirAll("d/e", 0o755))
		must(t, dst.WriteFile("d/e/f", nil, 0o644))
		must(t, ocilayer.Import(bytes.NewReader(tarOf(t, file(".wh.d", ""))), dst))
		fi, err := dst.Lstat("d")
		if err != nil || !layer.IsWhiteout(fi.Mode()) {
			t.Errorf("d: %v, %v; want a whiteout", fi, err)
		}
	})
	t.Run("opaque removes earlier contents of dst only", func(t *testing.T) {
		dst := mem.New()
		must(t, dst.MkdirAll("d", 0o755))
		must(t, dst.WriteFile("d/old", nil, 0o644))
		must(t, ocilayer.Import(bytes.NewReader(tarOf(t, file("d/new", "n"), file("d/.wh..wh..opq", ""))), dst))
		want := map[string]string{"d": "dir", "d/new": "n", "d/.wh..wh..opq": ""}
		if diff := cmp.Diff(want, contents(t, dst)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("overlayfs whiteout device", func(t *testing.T) {
		dst := mem.New()
		must(t, ocilayer.Import(bytes.NewReader(tarOf(t, entry{hdr: tar.Header{Typeflag: tar.TypeChar, Name: "x"}})), dst))
		if fi, err := dst.Lstat("x"); err != nil || !layer.IsWhiteout(fi.Mode()) {
			t.Errorf("x: %v, %v; want a whiteout", fi, err)
		}
	})
	t.Run("directory mode and time set after its contents", func(t *testing.T) {
		dst := mem.New()
		d := dir("d/")
		d.hdr.Mode = 0o555
		d.hdr.ModTime = epoch
		must(t, ocilayer.Import(bytes.NewReader(tarOf(t, d, file("d/x", "x"))), dst))
		fi, err := dst.Stat("d")
		must(t, err)
		if fi.Mode() != fs.ModeDir|0o555 || !fi.ModTime().Equal(epoch.Truncate(time.Second)) {
			t.Errorf("d: %v %v; want dr-xr-xr-x %v", fi.Mode(), fi.ModTime(), epoch)
		}
	})
	t.Run("empty input is an empty layer", func(t *testing.T) {
		must(t, ocilayer.Import(bytes.NewReader(nil), mem.New()))
	})
}

func TestImportInvalid(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []entry
	}{
		{"dotdot", []entry{file("../x", "")}},
		{"dotdot inside", []entry{file("a/../../x", "")}},
		{"absolute dotdot", []entry{file("/../x", "")}},
		{"dotdot whiteout", []entry{file("../.wh.x", "")}},
		{"whiteout of dot", []entry{file(".wh..", "")}},
		{"whiteout of dotdot", []entry{file("a/.wh...", "")}},
		{"fifo", []entry{{hdr: tar.Header{Typeflag: tar.TypeFifo, Name: "p"}}}},
		{"block device", []entry{{hdr: tar.Header{Typeflag: tar.TypeBlock, Name: "b", Devmajor: 8}}}},
		{"char device", []entry{{hdr: tar.Header{Typeflag: tar.TypeChar, Name: "null", Devmajor: 1, Devminor: 3}}}},
		{"hard link escaping", []entry{hardlink("x", "../etc/passwd")}},
		{"hard link to nothing", []entry{hardlink("x", "y")}},
		{"hard link to a directory", []entry{dir("d/"), hardlink("x", "d")}},
		{"hard link to itself", []entry{file("x", "x"), hardlink("x", "x")}},
		{"below a file", []entry{file("f", ""), file("f/x", "")}},
		{"below a symlink", []entry{symlink("l", "/etc"), file("l/passwd", "")}},
		{"root as a file", []entry{file(".", "")}},
		{"whiteout as a directory", []entry{dir(".wh.x/")}},
		{"whiteout as a parent", []entry{file("a/.wh.x/y", "")}},
		{"opaque as a parent", []entry{file(".wh..wh..opq/y", "")}},
		{"empty symlink", []entry{symlink("l", "")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := mem.New()
			err := ocilayer.Import(bytes.NewReader(tarOf(t, tc.entries...)), dst)
			if !errors.Is(err, ocilayer.ErrInvalid) {
				t.Fatalf("Import = %v; want ErrInvalid", err)
			}
			var pe *fs.PathError
			if !errors.As(err, &pe) {
				t.Errorf("%v is not an *fs.PathError", err)
			}
			must(t, dst.Check())
		})
	}
}

// sparseTar is a tar holding a 1 TiB GNU sparse file (PAX format 1.0, all
// hole) s and a hard link h to it. archive/tar writes no sparse files, so
// the PAX header is patched in by hand.
func sparseTar(t testing.TB) []byte {
	var recs string
	for _, kv := range [][2]string{
		{"GNU.sparse.major", "1"}, {"GNU.sparse.minor", "0"},
		{"GNU.sparse.name", "s"}, {"GNU.sparse.realsize", "1099511627776"},
	} {
		rec := " " + kv[0] + "=" + kv[1] + "\n"
		n := len(rec) + 2 // every record here is under 100 bytes
		recs += fmt.Sprint(n) + rec
	}
	b := tarOf(t,
		file("PaxHeaders/s", recs),
		file("GNUSparseFile.0/s", "0\n"+strings.Repeat("\x00", 510)), // an empty sparse map
		hardlink("h", "s"),
	)
	hdr := b[:512]
	hdr[156] = tar.TypeXHeader
	copy(hdr[148:156], "        ")
	var sum int
	for _, c := range hdr {
		sum += int(c)
	}
	copy(hdr[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return b
}

func TestImportSparse(t *testing.T) {
	dst := mem.New()
	err := ocilayer.Import(bytes.NewReader(sparseTar(t)), dst)
	if !errors.Is(err, ocilayer.ErrInvalid) || !strings.Contains(err.Error(), "sparse") {
		t.Fatalf("Import = %v; want ErrInvalid for a sparse file", err)
	}
	if _, err := dst.Lstat("s"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("s: %v; want not imported", err)
	}
}

func TestImportTruncated(t *testing.T) {
	b := tarOf(t, file("x", "hello, world"))
	err := ocilayer.Import(bytes.NewReader(b[:512+5]), mem.New())
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("Import of a truncated tar = %v; want io.ErrUnexpectedEOF", err)
	}
}

func FuzzImport(f *testing.F) {
	f.Add(tarOf(f, file("a/b", "b"), file("a/.wh.c", ""), file(".wh..wh..opq", ""), symlink("l", "a/b"), hardlink("h", "a/b")))
	f.Add([]byte{0x1f, 0x8b})
	f.Add(sparseTar(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		dst := mem.New()
		_ = ocilayer.Import(bytes.NewReader(data), dst)
		if err := dst.Check(); err != nil {
			t.Fatal(err)
		}
		// Whatever was imported exports again, unless sparse files make
		// it too big to read in a fuzz run.
		var size int64
		fs.WalkDir(dst, ".", func(name string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if fi, err := d.Info(); err == nil {
					size += fi.Size()
				}
			}
			return nil
		})
		if size > 1<<20 {
			return
		}
		if err := ocilayer.Export(io.Discard, dst.Snapshot()); err != nil {
			t.Fatal(err)
		}
	})
}
