package fusefs_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/packfs/packfs"
	"github.com/packfs/packfs/internal/testsize"
)

// Real programs run inside a mounted store and, the same way, in a tmpfs
// (or temporary) directory; their results must agree.

// twoDirs returns a directory in a mounted store and one on the host.
func twoDirs(t *testing.T) (mnt, host string) {
	s, err := packfs.Open(filepath.Join(t.TempDir(), "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	mnt, _ = mountT(t, s, nil)
	host, err = os.MkdirTemp("/dev/shm", "fusefs-programs-")
	if err != nil {
		host = t.TempDir()
	} else {
		t.Cleanup(func() { os.RemoveAll(host) })
	}
	return mnt, host
}

// sh runs a command in dir and returns its standard output.
func sh(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s in %s: %v\n%s", name, strings.Join(args, " "), dir, err, errb.String())
	}
	return out.String()
}

// treeOf describes every entry below dir: type and permissions, size,
// content hash or symlink target, and a file's modification time when
// withTimes.
func treeOf(t *testing.T, dir string, withTimes bool) map[string]string {
	t.Helper()
	tree := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil // the two roots are made differently
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		desc := fi.Mode().String()
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %d %x", fi.Size(), sha256.Sum256(b))
			if withTimes {
				desc += " " + fi.ModTime().UTC().String()
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		}
		tree[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

func sameTrees(t *testing.T, what string, host, mnt map[string]string) {
	t.Helper()
	if len(host) == 0 {
		t.Fatalf("%s: empty tree", what)
	}
	if diff := cmp.Diff(host, mnt); diff != "" {
		t.Errorf("%s differs (-tmpfs +mount):\n%s", what, diff)
	}
}

// goroot returns the Go installation's root, where its source tree and
// the go command are.
func goroot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestIssue17Programs runs tar, git, rsync and go build in a mounted
// store and on tmpfs. The quick run extracts one package's sources; with
// PACKFS_LONG=1, the whole Go source tree (one package's under -race),
// and it builds a module.
func TestIssue17Programs(t *testing.T) {
	needFuse(t)
	root := goroot(t)
	src := filepath.Join(root, "src")
	small := testsize.Short() || raceEnabled
	if small {
		src = filepath.Join(src, "io")
	}
	tarball := filepath.Join(t.TempDir(), "src.tar")
	sh(t, filepath.Dir(src), nil, "tar", "cf", tarball, filepath.Base(src))
	// git commits a smaller tree: its cost is in hashing, not in the mount.
	gitTree := filepath.Join(root, "src", "net")
	if small {
		gitTree = src
	}
	gitTar := filepath.Join(t.TempDir(), "git.tar")
	sh(t, filepath.Dir(gitTree), nil, "tar", "cf", gitTar, filepath.Base(gitTree))

	t.Run("tar", func(t *testing.T) {
		mnt, host := twoDirs(t)
		for _, dir := range []string{host, mnt} {
			sh(t, dir, nil, "tar", "xf", tarball)
		}
		sameTrees(t, "tar x", treeOf(t, host, true), treeOf(t, mnt, true))
		// And back out: tar c lists the same members, modes and times.
		list := func(dir string) string {
			return sh(t, dir, nil, "sh", "-c", "tar cf - --sort=name "+filepath.Base(src)+" | tar tvf - --numeric-owner")
		}
		if a, b := list(host), list(mnt); a != b {
			t.Errorf("tar c differs:\n%s", cmp.Diff(a, b))
		}
	})

	t.Run("git", func(t *testing.T) {
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("git is not installed")
		}
		mnt, host := twoDirs(t)
		env := []string{
			"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z",
			"GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.com", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z",
			"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			// No gc or maintenance left running in the background, which
			// would keep the mount busy.
			"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=gc.auto", "GIT_CONFIG_VALUE_0=0",
			"GIT_CONFIG_KEY_1=maintenance.auto", "GIT_CONFIG_VALUE_1=false",
		}
		heads := map[string]string{}
		for _, dir := range []string{host, mnt} {
			sh(t, dir, nil, "tar", "xf", gitTar)
			sh(t, dir, env, "git", "init", "-q", "-b", "main")
			sh(t, dir, env, "git", "add", ".")
			sh(t, dir, env, "git", "commit", "-q", "-m", "import")
			if err := os.WriteFile(filepath.Join(dir, "NEW"), []byte("second\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			sh(t, dir, env, "git", "add", "NEW")
			sh(t, dir, env, "git", "commit", "-q", "-m", "second")
			sh(t, dir, env, "git", "fsck", "--strict")
			heads[dir] = sh(t, dir, env, "git", "rev-parse", "HEAD")
			if st := sh(t, dir, env, "git", "status", "--porcelain"); st != "" {
				t.Errorf("git status in %s after commit:\n%s", dir, st)
			}
		}
		if heads[host] != heads[mnt] {
			t.Errorf("HEAD is %s on tmpfs, %s in the mount", heads[host], heads[mnt])
		}
	})

	t.Run("rsync", func(t *testing.T) {
		if _, err := exec.LookPath("rsync"); err != nil {
			t.Skip("rsync is not installed")
		}
		mnt, host := twoDirs(t)
		orig := filepath.Join(host, "orig")
		if err := os.Mkdir(orig, 0o755); err != nil {
			t.Fatal(err)
		}
		sh(t, orig, nil, "tar", "xf", tarball)
		if err := os.Symlink(filepath.Base(src), filepath.Join(orig, "link")); err != nil {
			t.Fatal(err)
		}
		sh(t, host, nil, "rsync", "-a", orig+"/", mnt+"/in/")
		back := filepath.Join(host, "back")
		sh(t, host, nil, "rsync", "-a", mnt+"/in/", back+"/")
		want := treeOf(t, orig, true)
		sameTrees(t, "rsync -a in", want, treeOf(t, filepath.Join(mnt, "in"), true))
		sameTrees(t, "rsync -a out", want, treeOf(t, back, true))
		// A second run finds nothing to do.
		if out := sh(t, host, nil, "rsync", "-ai", orig+"/", mnt+"/in/"); out != "" {
			t.Errorf("rsync -a again changed:\n%s", out)
		}
	})

	t.Run("go build", func(t *testing.T) {
		if testsize.Short() {
			t.Skip("builds only with " + testsize.Env + "=1")
		}
		mnt, host := twoDirs(t)
		goBin := filepath.Join(root, "bin", "go")
		outs := map[string]string{}
		for _, dir := range []string{host, mnt} {
			files := map[string]string{
				"go.mod":         "module example.com/hello\n\ngo 1.22\n",
				"main.go":        "package main\n\nimport (\n\t\"fmt\"\n\t\"example.com/hello/greet\"\n)\n\nfunc main() { fmt.Println(greet.Hello(\"fuse\")) }\n",
				"greet/greet.go": "package greet\n\nimport \"strings\"\n\n// Hello greets.\nfunc Hello(s string) string { return \"hello, \" + strings.ToUpper(s) }\n",
			}
			for name, data := range files {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			env := []string{"GOCACHE=" + filepath.Join(dir, ".cache"), "GOFLAGS=-trimpath -buildvcs=false", "GOPROXY=off"}
			sh(t, dir, env, goBin, "vet", "./...")
			sh(t, dir, env, goBin, "build", "-o", "hello", ".")
			// The program is started by a shell, not by this process: a
			// child this process forks (sharing its memory until exec)
			// that execs a file of the mount this process serves hung
			// once under the race detector, waiting for the OPEN.
			outs[dir] = sh(t, dir, nil, "/bin/sh", "-c", `exec "$0"`, filepath.Join(dir, "hello"))
		}
		if outs[host] != "hello, FUSE\n" || outs[mnt] != outs[host] {
			t.Errorf("outputs: tmpfs %q, mount %q", outs[host], outs[mnt])
		}
		a, _ := os.ReadFile(filepath.Join(host, "hello"))
		b, _ := os.ReadFile(filepath.Join(mnt, "hello"))
		if !bytes.Equal(a, b) {
			t.Errorf("the binaries differ: %d and %d bytes", len(a), len(b))
		}
	})
}
