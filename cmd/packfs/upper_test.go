package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// treeAt describes every entry under dir, as seen through the kernel:
// type and permissions, and a file's contents or a symlink's target.
func treeAt(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		line := rel + " " + fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			line += " -> " + target
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += " " + string(data)
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// upperSource makes a pack of a small tree over a host directory, the
// SOURCE a.pack:dir of the tests below, and the same tree merged in a
// host directory, where the same programs run for comparison.
func upperSource(t *testing.T) (source, model string) {
	t.Helper()
	write := func(root string, files map[string]string) {
		for name, data := range files {
			p := filepath.Join(root, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	packed := map[string]string{"a": "a", "b": "b", "d/x": "x", "d/sub/y": "y", "keep/k": "k", "repl/old": "old"}
	hosted := map[string]string{"h/f": "host", "hostonly": "host only"}
	src := filepath.Join(t.TempDir(), "src")
	write(src, packed)
	if err := os.Symlink("a", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	pack := filepath.Join(t.TempDir(), "a.pack")
	runChildWant(t, 0, "pack", src, pack)
	host := filepath.Join(t.TempDir(), "host")
	write(host, hosted)
	model = filepath.Join(t.TempDir(), "model")
	write(model, packed)
	write(model, hosted)
	if err := os.Symlink("a", filepath.Join(model, "link")); err != nil {
		t.Fatal(err)
	}
	return pack + ":" + host, model
}

// lowerChanges removes, renames and replaces names of the lowers under
// root, as a shell user would, fsyncing what it writes.
func lowerChanges(t *testing.T, root string) {
	t.Helper()
	p := func(name string) string { return filepath.Join(root, name) }
	steps := []func() error{
		func() error { return os.Remove(p("a")) },
		func() error { return os.Rename(p("b"), p("keep/k")) },
		func() error { return os.Rename(p("d"), p("moved")) },
		func() error { return os.Remove(p("h/f")) },
		func() error { return os.Remove(p("h")) },
		func() error { return os.RemoveAll(p("repl")) },
		func() error { return os.Mkdir(p("repl"), 0o750) },
		func() error { return os.Rename(p("hostonly"), p("moved/sub/y")) },
		func() error {
			f, err := os.Create(p("repl/new"))
			if err != nil {
				return err
			}
			defer f.Close()
			if _, err := f.WriteString("new"); err != nil {
				return err
			}
			return f.Sync()
		},
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if err := os.Remove(p("a")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("rm of a removed lower name: %v, want ENOENT", err)
	}
	if err := os.Remove(p("moved")); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Fatalf("rmdir of a lower directory with contents: %v, want ENOTEMPTY", err)
	}
}

// TestIssue17MountUpperLowerNames: through a real mount with --upper,
// removing, renaming over and away, rmdir and replacing names that live
// only in the lowers (a pack over a host directory) work as on a host
// directory; they survive an unmount and a mount over the same SOURCE,
// one with -checkpoint, and a SIGKILL after an fsync; a mount over
// another SOURCE, or over none, is refused; the lowers never change.
func TestIssue17MountUpperLowerNames(t *testing.T) {
	source, model := upperSource(t)
	pack := strings.Split(source, ":")[0]
	packBefore, err := os.ReadFile(pack)
	if err != nil {
		t.Fatal(err)
	}
	hostBefore := treeAt(t, strings.Split(source, ":")[1])
	upper := filepath.Join(t.TempDir(), "upper")
	mnt := filepath.Join(t.TempDir(), "mnt")

	cmd, log := startMount(t, mnt, source, mnt, "--upper", upper)
	if got, want := treeAt(t, mnt), treeAt(t, model); got != want {
		t.Fatalf("the mount before any change:\n%s\nwant:\n%s", got, want)
	}
	lowerChanges(t, mnt)
	lowerChanges(t, model)
	want := treeAt(t, model)
	if got := treeAt(t, mnt); got != want {
		t.Fatalf("after the changes:\n%s\nwant:\n%s", got, want)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}

	cmd, log = startMount(t, mnt, source, mnt, "--upper", upper, "-checkpoint")
	if got := treeAt(t, mnt); got != want {
		t.Fatalf("mounted again:\n%s\nwant:\n%s", got, want)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}

	// After the checkpoint: more changes of lower names, fsync'd, then
	// SIGKILL.
	cmd, _ = startMount(t, mnt, source, mnt, "--upper", upper)
	if got := treeAt(t, mnt); got != want {
		t.Fatalf("mounted after a checkpoint:\n%s\nwant:\n%s", got, want)
	}
	for _, root := range []string{mnt, model} {
		if err := os.Rename(filepath.Join(root, "moved/x"), filepath.Join(root, "x2")); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(filepath.Join(root, "keep")); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(root, "link")); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(filepath.Join(mnt, "x2"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil { // a commit of everything before it
		t.Fatal(err)
	}
	f.Close()
	want = treeAt(t, model)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	syscall.Unmount(mnt, syscall.MNT_DETACH)

	cmd, log = startMount(t, mnt, source, mnt, "--upper", upper)
	if got := treeAt(t, mnt); got != want {
		t.Fatalf("mounted after SIGKILL:\n%s\nwant:\n%s", got, want)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}

	// Another SOURCE, or none: refused, saying why.
	other := filepath.Join(t.TempDir(), "other.pack")
	runChildWant(t, 0, "pack", model, other)
	for _, args := range [][]string{
		{"mount", "--upper", upper, other, mnt},
		{"mount", "--upper", upper, pack, mnt},
		{"mount", upper, mnt},
	} {
		r := runChild(t, args...)
		if r.code == 0 || !strings.Contains(r.stderr, "lower") {
			t.Errorf("packfs %s: exit %d, stderr %q; want a refusal naming the lowers", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if isMountpoint(t, mnt) {
		t.Fatalf("%s mounted by a refused mount", mnt)
	}

	if after, err := os.ReadFile(pack); err != nil || string(after) != string(packBefore) {
		t.Errorf("the lower pack changed: %v", err)
	}
	if got := treeAt(t, strings.Split(source, ":")[1]); got != hostBefore {
		t.Errorf("the host lower changed:\n%s\nwas:\n%s", got, hostBefore)
	}
}

// TestIssue17StoreCommandsOverUpper: the store subcommands, which give a
// store no lowers, refuse one made by mount --upper, saying how it opens.
func TestIssue17StoreCommandsOverUpper(t *testing.T) {
	source, _ := upperSource(t)
	upper := filepath.Join(t.TempDir(), "upper")
	mnt := filepath.Join(t.TempDir(), "mnt")
	cmd, log := startMount(t, mnt, source, mnt, "--upper", upper)
	if err := os.Remove(filepath.Join(mnt, "a")); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	r := runChild(t, "store", "checkpoint", upper)
	if r.code == 0 || !strings.Contains(r.stderr, "mount --upper DIR SOURCE") {
		t.Errorf("store checkpoint of an upper: exit %d, stderr %q", r.code, r.stderr)
	}
}
