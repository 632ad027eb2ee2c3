package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/packfs/packfs/internal/testsize"

	"github.com/google/go-cmp/cmp"
	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/layer/mem"
)

func runOK(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("packfs %s: exit %d, stderr: %s", strings.Join(args, " "), code, errb.String())
	}
	return out.String()
}

type entry struct {
	Path    string
	Mode    fs.FileMode
	ModTime time.Time
	Data    string
	Target  string
}

func dump(t *testing.T, fsys fs.FS) []entry {
	t.Helper()
	var out []entry
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		fi, err := fs.Lstat(fsys, p)
		if err != nil {
			return err
		}
		e := entry{Path: p, Mode: fi.Mode(), ModTime: fi.ModTime().UTC()}
		switch fi.Mode().Type() {
		case 0:
			data, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			e.Data = string(data)
		case fs.ModeSymlink:
			e.ModTime = time.Time{}
			if e.Target, err = fs.ReadLink(fsys, p); err != nil {
				return err
			}
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRoundTrip packs each conformance tree from a host directory, unpacks
// it and compares the trees: pack → unpack is byte-identical.
func TestRoundTrip(t *testing.T) {
	for _, tree := range conformance.Trees() {
		t.Run(tree.Name, func(t *testing.T) {
			if raceEnabled && (tree.Name == "wide" || tree.Name == "sizes") && !testsize.Short() {
				t.Skip("large tree: run without -race")
			}
			m := mem.New()
			if err := conformance.Populate(m, tree); err != nil {
				t.Fatal(err)
			}
			tmp := t.TempDir()
			src, dst, pack := filepath.Join(tmp, "src"), filepath.Join(tmp, "dst"), filepath.Join(tmp, "t.pack")
			if err := unpack(m.Snapshot(), src, unpackOptions{bad: func(err error) { t.Error(err) }}); err != nil {
				t.Fatal(err)
			}
			runOK(t, "pack", src, pack)
			runOK(t, "verify", pack)
			runOK(t, "unpack", pack, dst)
			want := dump(t, m.Snapshot())
			if diff := cmp.Diff(want, dump(t, os.DirFS(src))); diff != "" {
				t.Fatalf("host copy differs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, dump(t, os.DirFS(dst))); diff != "" {
				t.Fatalf("unpacked tree differs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCommands(t *testing.T) {
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	must(t, os.MkdirAll(filepath.Join(src, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "d", "a.txt"), []byte("same\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "b.txt"), []byte("same\n"), 0o644))
	must(t, os.Symlink("d/a.txt", filepath.Join(src, "ln")))
	pack := filepath.Join(tmp, "p.pack")
	runOK(t, "pack", src, pack)

	if got := runOK(t, "ls", pack); got != "b.txt\nd\nln\n" {
		t.Errorf("ls = %q", got)
	}
	if got := runOK(t, "ls", pack, "d"); got != "a.txt\n" {
		t.Errorf("ls d = %q", got)
	}
	if got := runOK(t, "ls", "-l", pack); !strings.Contains(got, "ln -> d/a.txt") || !strings.Contains(got, "-rw-r--r--") {
		t.Errorf("ls -l = %q", got)
	}
	if got := runOK(t, "cat", pack, "ln"); got != "same\n" {
		t.Errorf("cat ln = %q", got)
	}
	if got := runOK(t, "info", pack); !strings.Contains(got, "dedup savings: 5 bytes") || !strings.Contains(got, "entries:       5") {
		t.Errorf("info = %q", got)
	}
	if got := runOK(t, "verify", pack); !strings.Contains(got, "ok") {
		t.Errorf("verify = %q", got)
	}
	for _, c := range []string{"pack", "unpack", "ls", "cat", "verify", "info"} {
		if got := runOK(t, c, "--help"); !strings.Contains(got, "usage: packfs "+c) {
			t.Errorf("%s --help = %q", c, got)
		}
	}
	runOK(t, "--help")

	// Failures: non-zero exit, message on stderr, nothing on stdout.
	data, err := os.ReadFile(pack)
	must(t, err)
	data[len(data)/2] ^= 0xff
	bad := filepath.Join(tmp, "bad.pack")
	must(t, os.WriteFile(bad, data, 0o644))
	for _, args := range [][]string{
		{},
		{"nope"},
		{"cat", pack, "missing"},
		{"cat", pack},
		{"ls", pack, "missing"},
		{"verify", bad},
		{"info", filepath.Join(tmp, "absent.pack")},
		{"pack", filepath.Join(tmp, "absent"), filepath.Join(tmp, "x.pack")},
		{"unpack", pack, src}, // existing files
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code == 0 || errb.Len() == 0 || out.Len() != 0 {
			t.Errorf("packfs %q: exit %d, stdout %q, stderr %q; want failure on stderr", args, code, out.String(), errb.String())
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
