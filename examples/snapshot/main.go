// Command snapshot shows PackFS's in-memory layer at work: it writes a small
// tree, takes a snapshot, keeps writing, and checks that the snapshot is
// unchanged and passes testing/fstest.TestFS. It exits non-zero if any check
// fails.
package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"testing/fstest"

	"github.com/packfs/packfs/layer/mem"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "snapshot:", err)
		os.Exit(1)
	}
}

// tree is the embedded default the example writes.
var tree = map[string]string{
	"README.md":           "# demo\n",
	"src/main.go":         "package main\n\nfunc main() {}\n",
	"src/util/strings.go": "package util\n",
	"docs/guide/intro.md": "Welcome.\n",
	"docs/guide/usage.md": "Run it.\n",
	"data/empty":          "",
}

func run() error {
	fsys := mem.New()
	for name, body := range tree {
		if err := fsys.MkdirAll(dir(name), 0o755); err != nil {
			return err
		}
		if err := fsys.WriteFile(name, []byte(body), 0o644); err != nil {
			return err
		}
	}
	if err := fsys.Symlink("data", "shortcut"); err != nil {
		return err
	}
	before := listing(fsys)
	snap := fsys.Snapshot()
	fmt.Printf("wrote %d files; snapshot taken:\n%s\n", len(tree), before)

	// Keep writing: change, append, remove, rename, add.
	steps := []func() error{
		func() error { return fsys.WriteFile("README.md", []byte("# changed\n"), 0o600) },
		func() error {
			f, err := fsys.OpenFile("src/main.go", os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return err
			}
			if _, err := f.WriteString("// more\n"); err != nil {
				return err
			}
			return f.Close()
		},
		func() error { return fsys.RemoveAll("docs") },
		func() error { return fsys.Rename("src", "lib") },
		func() error { return fsys.WriteFile("new.txt", []byte("new\n"), 0o644) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	fmt.Printf("after more writes, the live layer:\n%s\n", listing(fsys))

	if after := listing(snap); after != before {
		return fmt.Errorf("snapshot changed:\n%s", after)
	}
	for name, body := range tree {
		got, err := fs.ReadFile(snap, name)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, []byte(body)) {
			return fmt.Errorf("snapshot %s = %q, want %q", name, got, body)
		}
	}
	if err := fstest.TestFS(snap, "README.md", "src/main.go", "docs/guide/usage.md"); err != nil {
		return err
	}
	if err := fstest.TestFS(fsys, "README.md", "lib/main.go", "new.txt"); err != nil {
		return err
	}
	fmt.Println("the snapshot is unchanged and passes fstest.TestFS; so does the live layer")
	return nil
}

func dir(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			return name[:i]
		}
	}
	return "."
}

// listing prints every entry of fsys with its mode and size.
func listing(fsys fs.FS) string {
	var b bytes.Buffer
	fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			fmt.Fprintf(&b, "  %s: %v\n", name, err)
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "  %v %5d %s\n", info.Mode(), info.Size(), name)
		return nil
	})
	return b.String()
}
