package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/packreader"
	"golang.org/x/sys/unix"
)

// storeSrcTree writes a tree of every kind a store holds under dir, with
// a file larger than an import batch, all times diffT0.
func storeSrcTree(t *testing.T, dir string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Join(dir, "etc", "conf.d"), 0o755))
	must(t, os.Mkdir(filepath.Join(dir, "private"), 0o700))
	must(t, os.WriteFile(filepath.Join(dir, "etc", "motd"), []byte("hello\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "etc", "conf.d", "empty"), nil, 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "private", "run.sh"), []byte("#!/bin/sh\n"), 0o755))
	big := make([]byte, importBatchBytes+12345)
	for i := range big {
		big[i] = byte(i * 31 >> 3)
	}
	must(t, os.WriteFile(filepath.Join(dir, "big.bin"), big, 0o640))
	must(t, os.Symlink("etc/motd", filepath.Join(dir, "motd")))
	must(t, os.Chmod(filepath.Join(dir, "etc"), 0o2755))
	setTreeTimes(t, dir)
}

// onlySymlinkTimes checks that diff found nothing but the symlinks'
// times, which a store sets only through symlinks.
func onlySymlinkTimes(t *testing.T, r childResult, links ...string) {
	t.Helper()
	var want []string
	for _, l := range links {
		want = append(want, "mtime "+l+": ")
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	ok := len(lines) == len(want)
	for i := 0; ok && i < len(lines); i++ {
		ok = strings.HasPrefix(lines[i], want[i])
	}
	if !ok {
		t.Fatalf("diff: exit %d\n%s%s\nwant only %q", r.code, r.stdout, r.stderr, want)
	}
}

// TestIssue15StoreRoundTrip: a directory imported into a new store and
// exported again as a pack is the same tree, through checkpoint, flatten
// and verify; a second import refuses to overwrite without --force and
// writes nothing.
func TestIssue15StoreRoundTrip(t *testing.T) {
	tmp := t.TempDir()
	src, dir := filepath.Join(tmp, "src"), filepath.Join(tmp, "store")
	storeSrcTree(t, src)

	if r := runChildWant(t, 0, "store", "import", dir, src); !strings.Contains(r.stdout, "imported 9 entries (4 files,") {
		t.Fatalf("import: %q", r.stdout)
	}
	r := runChildWant(t, 0, "store", "info", dir)
	if !strings.Contains(r.stdout, "generation: 0") || !strings.Contains(r.stdout, "packs:      0") {
		t.Fatalf("info: %q", r.stdout)
	}
	out := filepath.Join(tmp, "out.pack")
	runChildWant(t, 0, "store", "export", dir, out)
	onlySymlinkTimes(t, runChild(t, "diff", src, out), "motd")

	if r := runChildWant(t, 0, "store", "checkpoint", dir); !strings.Contains(r.stdout, "generation 1, 1 packs") {
		t.Fatalf("checkpoint: %q", r.stdout)
	}
	// Again, beside the first copy, and into a path that does not exist yet.
	runChildWant(t, 0, "store", "import", dir, out, "/copies//one/")
	runChildWant(t, 0, "store", "checkpoint", dir)
	if r := runChildWant(t, 0, "store", "flatten", dir); !strings.Contains(r.stdout, "generation 3, 1 packs") {
		t.Fatalf("flatten: %q", r.stdout)
	}
	if r := runChildWant(t, 0, "store", "verify", dir); !strings.Contains(r.stdout, "ok, generation 3, 1 packs") {
		t.Fatalf("verify: %q", r.stdout)
	}
	s, err := packfs.Open(dir, &packfs.Options{ReadOnly: true})
	must(t, err)
	copyFS, err := s.Sub("copies/one")
	must(t, err)
	want := dump(t, os.DirFS(src))
	got := dump(t, copyFS)
	s.Close()
	if len(got) != len(want) {
		t.Fatalf("copy holds %d entries, want %d", len(got), len(want))
	}

	before := runChildWant(t, 0, "store", "info", dir).stdout
	r = runChildWant(t, 1, "store", "import", dir, src)
	if !strings.Contains(r.stderr, "file already exists (--force replaces it)") {
		t.Fatalf("import over existing files: %q", r.stderr)
	}
	if after := runChildWant(t, 0, "store", "info", dir).stdout; after != before {
		t.Fatalf("a refused import changed the store:\n%s\nthen\n%s", before, after)
	}
	// --force replaces, after the arguments as well as before.
	must(t, os.WriteFile(filepath.Join(src, "etc", "motd"), []byte("changed\n"), 0o644))
	setTreeTimes(t, src)
	runChildWant(t, 0, "store", "import", dir, src, "--force")
	runChildWant(t, 0, "store", "export", dir, out)
	r = runChild(t, "diff", src, out)
	if !strings.Contains(r.stdout, "added copies\n") || strings.Contains(r.stdout, " etc/motd") {
		t.Fatalf("diff after a forced import:\n%s", r.stdout)
	}
}

// TestIssue15StoreImportRefuses: an import that cannot be whole writes
// nothing: a kind a store cannot hold, a delta pack's whiteouts, a
// directory where the store has a file. A store it would have created is
// not left behind, nor is a directory that is not a store made one.
func TestIssue15StoreImportRefuses(t *testing.T) {
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	must(t, os.MkdirAll(filepath.Join(src, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "d", "f"), []byte("f"), 0o644))
	must(t, unix.Mkfifo(filepath.Join(src, "d", "pipe"), 0o644))
	dir := filepath.Join(tmp, "new")
	r := runChildWant(t, 1, "store", "import", dir, src)
	if !strings.Contains(r.stderr, "d/pipe: a FIFO") {
		t.Errorf("import of a FIFO: %q", r.stderr)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a refused import left %s: %v", dir, err)
	}
	empty := filepath.Join(tmp, "empty")
	must(t, os.Mkdir(empty, 0o755))
	runChildWant(t, 1, "store", "import", empty, src)
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("a refused import left %d files in an empty directory", len(ents))
	}
	notStore := filepath.Join(tmp, "notstore")
	must(t, os.Mkdir(notStore, 0o755))
	must(t, os.WriteFile(filepath.Join(notStore, "keep"), nil, 0o644))
	r = runChildWant(t, 1, "store", "import", notStore, src)
	if !strings.Contains(r.stderr, "not a store directory") {
		t.Errorf("import into a directory that is not a store: %q", r.stderr)
	}
	must(t, os.Remove(filepath.Join(src, "d", "pipe")))

	// A delta pack: the top pack of a store after a removal.
	store := filepath.Join(tmp, "store")
	s, err := packfs.Open(store, nil)
	must(t, err)
	must(t, s.WriteFile("d", []byte("a file"), 0o644))
	must(t, s.WriteFile("x", nil, 0o644))
	must(t, s.Checkpoint())
	must(t, s.Remove("x"))
	must(t, s.Checkpoint())
	delta := filepath.Join(store, s.Info().Packs[0])
	must(t, s.Close())
	r = runChildWant(t, 1, "store", "import", filepath.Join(tmp, "other"), delta)
	if !strings.Contains(r.stderr, "whiteout") {
		t.Errorf("import of a delta pack: %q", r.stderr)
	}
	before := runChildWant(t, 0, "store", "info", store).stdout
	r = runChildWant(t, 1, "store", "import", "--force", store, src)
	if !strings.Contains(r.stderr, "the store has a regular file where") {
		t.Errorf("import of a directory over a file: %q", r.stderr)
	}
	if after := runChildWant(t, 0, "store", "info", store).stdout; after != before {
		t.Errorf("a refused import changed the store:\n%s\nthen\n%s", before, after)
	}
	// Importing a directory that holds the store skips the store.
	runChildWant(t, 0, "store", "import", store, tmp, "all")
	s, err = packfs.Open(store, &packfs.Options{ReadOnly: true})
	must(t, err)
	defer s.Close()
	if _, err := s.Stat("all/src/d/f"); err != nil {
		t.Error(err)
	}
	if _, err := s.Stat("all/store"); err == nil {
		t.Error("the store imported its own directory")
	}
}

// TestIssue15StoreExportOut: export writes a regular file atomically, or
// through a symlink, or streams to standard output or a FIFO; it refuses
// a device, a directory and the store's own directory, and changes none.
func TestIssue15StoreExportOut(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "store")
	s, err := packfs.Open(dir, nil)
	must(t, err)
	must(t, s.WriteFile("f", []byte("exported\n"), 0o644))
	must(t, s.Close())
	checkPack := func(what string, data []byte) {
		t.Helper()
		r, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		defer r.Close()
		if got, err := r.ReadFile("f"); err != nil || string(got) != "exported\n" {
			t.Fatalf("%s: f = %q, %v", what, got, err)
		}
	}

	r := runChildWant(t, 0, "store", "export", dir, "-")
	checkPack("export to -", []byte(r.stdout))

	target := filepath.Join(tmp, "target.pack")
	link := filepath.Join(tmp, "link.pack")
	must(t, os.Symlink("target.pack", link))
	runChildWant(t, 0, "store", "export", dir, link)
	if fi, err := os.Lstat(link); err != nil || fi.Mode().Type() != os.ModeSymlink {
		t.Fatalf("export through a symlink replaced it: %v %v", fi, err)
	}
	data, err := os.ReadFile(target)
	must(t, err)
	checkPack("export through a symlink", data)

	fifo := filepath.Join(tmp, "fifo")
	must(t, unix.Mkfifo(fifo, 0o644))
	got := make(chan []byte)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- nil
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- b
	}()
	runChildWant(t, 0, "store", "export", dir, fifo)
	checkPack("export to a FIFO", <-got)

	sneaky := filepath.Join(tmp, "sneaky.pack")
	must(t, os.Symlink("store/../store/mine.pack", sneaky))
	null := filepath.Join(tmp, "null")
	must(t, unix.Mknod(null, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
	for _, tc := range []struct{ out, msg string }{
		{null, "is a character device, not a regular file"},
		{tmp, "is a directory, not a regular file"},
		{filepath.Join(dir, "mine.pack"), "is in the store directory"},
		{sneaky, "is in the store directory"},
	} {
		r := runChildWant(t, 1, "store", "export", dir, tc.out)
		if !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("export to %s: %q, want %q", tc.out, r.stderr, tc.msg)
		}
	}
	var st unix.Stat_t
	must(t, unix.Stat(null, &st))
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != unix.Mkdev(1, 3) {
		t.Errorf("the device became mode %o", st.Mode)
	}
	if _, err := os.Stat(filepath.Join(dir, "mine.pack")); !os.IsNotExist(err) {
		t.Errorf("export wrote into the store directory: %v", err)
	}
}

// TestIssue15StoreBesideWriter: with a store open for writing elsewhere,
// info, verify and export run read-only beside it; checkpoint and import
// refuse with a clear message.
func TestIssue15StoreBesideWriter(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "store")
	s, err := packfs.Open(dir, nil)
	must(t, err)
	defer s.Close()
	must(t, s.WriteFile("f", []byte("x"), 0o644))
	must(t, s.Sync())
	runChildWant(t, 0, "store", "info", dir)
	runChildWant(t, 0, "store", "verify", dir)
	runChildWant(t, 0, "store", "export", dir, filepath.Join(tmp, "out.pack"))
	for _, sub := range []string{"checkpoint", "flatten"} {
		if r := runChildWant(t, 1, "store", sub, dir); !strings.Contains(r.stderr, "open for writing elsewhere") {
			t.Errorf("store %s beside a writer: %q", sub, r.stderr)
		}
	}
	if r := runChildWant(t, 1, "store", "import", dir, filepath.Join(tmp, "out.pack")); !strings.Contains(r.stderr, "open for writing elsewhere") {
		t.Errorf("store import beside a writer: %q", r.stderr)
	}
	must(t, s.WriteFile("g", nil, 0o644)) // the writer goes on
}

// TestIssue15StoreVerifyDamage: verify reports a pack whose content is
// damaged, which opening the store does not read.
func TestIssue15StoreVerifyDamage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s, err := packfs.Open(dir, nil)
	must(t, err)
	must(t, s.WriteFile("f", bytes.Repeat([]byte("data"), 100), 0o644))
	must(t, s.Checkpoint())
	name := s.Info().Packs[0]
	must(t, s.Close())
	p := filepath.Join(dir, name)
	data, err := os.ReadFile(p)
	must(t, err)
	data[100] ^= 0xff
	must(t, os.WriteFile(p, data, 0o644))
	runChildWant(t, 0, "store", "info", dir)
	r := runChildWant(t, 1, "store", "verify", dir)
	if !strings.Contains(r.stderr, name) || !strings.Contains(r.stderr, "corrupt") || r.stdout != "" {
		t.Errorf("verify of a damaged pack: stdout %q, stderr %q", r.stdout, r.stderr)
	}
}

// TestIssue15StoreUsage: a wrong subcommand or argument count exits 2.
func TestIssue15StoreUsage(t *testing.T) {
	if r := runChildWant(t, 0, "store", "help"); !strings.Contains(r.stdout, "import DIR SRC [PATH]") {
		t.Errorf("store help: %q", r.stdout)
	}
	for _, args := range [][]string{{"store"}, {"store", "nope", "x"}, {"store", "info"}, {"store", "export", "x"}, {"store", "info", "-bogus", "x"}} {
		if r := runChildWant(t, 2, args...); r.stderr == "" {
			t.Errorf("packfs %q: no message", args)
		}
	}
	if r := runChildWant(t, 1, "store", "checkpoint", t.TempDir()); !strings.Contains(r.stderr, "not a store directory") {
		t.Errorf("checkpoint of an empty directory: %q", r.stderr)
	}
	_ = syscall.EROFS
}

// TestIssue15StoreImportDamaged: a source whose large file cannot be read
// fails the import with a message naming it, and leaves no part of it in
// the store, under its name or a temporary one.
func TestIssue15StoreImportDamaged(t *testing.T) {
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	must(t, os.Mkdir(src, 0o755))
	must(t, os.WriteFile(filepath.Join(src, "a"), []byte("small"), 0o644))
	big := bytes.Repeat([]byte{7}, importBatchBytes+1)
	big[0] = 1
	must(t, os.WriteFile(filepath.Join(src, "big"), big, 0o644))
	pack := filepath.Join(tmp, "src.pack")
	runOK(t, "pack", src, pack)
	data, err := os.ReadFile(pack)
	must(t, err)
	i := bytes.Index(data, big[:64])
	if i < 0 {
		t.Fatal("big's content not found in the pack")
	}
	data[i+len(big)/2] ^= 0xff
	must(t, os.WriteFile(pack, data, 0o644))

	dir := filepath.Join(tmp, "store")
	s, err := packfs.Open(dir, nil)
	must(t, err)
	must(t, s.Close())
	r := runChildWant(t, 1, "store", "import", dir, pack)
	if !strings.Contains(r.stderr, "big") || !strings.Contains(r.stderr, "corrupt") {
		t.Fatalf("import of a damaged pack: %q", r.stderr)
	}
	s, err = packfs.Open(dir, &packfs.Options{ReadOnly: true})
	must(t, err)
	defer s.Close()
	ents, err := s.ReadDir(".")
	must(t, err)
	for _, e := range ents {
		if e.Name() != "a" {
			t.Errorf("the failed import left %q", e.Name())
		}
	}
}
