package layer_test

import (
	"fmt"
	"io/fs"
	"time"

	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// The helpers take any fs.FS and use what it can do.
func ExampleWriteFile() {
	fsys := mem.New()
	if err := layer.MkdirAll(fsys, "etc/app", 0o755); err != nil {
		panic(err)
	}
	if err := layer.WriteFile(fsys, "etc/app/config", []byte("debug=true\n"), 0o644); err != nil {
		panic(err)
	}
	data, _ := fs.ReadFile(fsys, "etc/app/config")
	fmt.Printf("%s", data)

	// A read-only fs.FS has no Mkdir: the helper says so.
	err := layer.Mkdir(fs.FS(fsys.Snapshot()), "tmp", 0o755)
	fmt.Println(err)
	// Output:
	// debug=true
	// mkdir tmp: unsupported operation
}

// Whiteouts are entries a union reads as "deleted here".
func ExampleIsWhiteout() {
	fsys := mem.New()
	fsys.WriteFile("old", []byte("x"), 0o644)
	if err := fsys.Whiteout("old"); err != nil {
		panic(err)
	}
	fi, _ := fs.Lstat(fsys, "old")
	fmt.Println(layer.IsWhiteout(fi.Mode()))
	// Output: true
}

// Owners through any layer: Lchown changes a link itself, Chown what it
// points to, and OwnerOf reads the result from FileInfo.Sys.
func ExampleOwnerOf() {
	fsys := mem.New()
	if err := layer.WriteFile(fsys, "bin-tool", nil, 0o755|fs.ModeSetuid); err != nil {
		panic(err)
	}
	if err := layer.Symlink(fsys, "bin-tool", "tool"); err != nil {
		panic(err)
	}
	if err := layer.Chown(fsys, "tool", 1000, 100); err != nil {
		panic(err)
	}
	if err := layer.Lchown(fsys, "tool", 0, -1); err != nil {
		panic(err)
	}
	for _, name := range []string{"bin-tool", "tool"} {
		fi, _ := fs.Lstat(fsys, name)
		uid, gid, _ := layer.OwnerOf(fi)
		if gid == layer.NoOwner {
			fmt.Printf("%s %v %d:none\n", name, fi.Mode(), uid)
			continue
		}
		fmt.Printf("%s %v %d:%d\n", name, fi.Mode(), uid, gid)
	}
	// Output:
	// bin-tool -rwxr-xr-x 1000:100
	// tool Lrwxrwxrwx 0:none
}

// Lchtimes sets a symlink's own modification time; Chtimes would set its
// target's.
func ExampleLchtimes() {
	fsys := mem.New()
	if err := layer.Symlink(fsys, "missing", "dangling"); err != nil {
		panic(err)
	}
	t := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	if err := layer.Lchtimes(fsys, "dangling", time.Time{}, t); err != nil {
		panic(err)
	}
	fi, _ := fs.Lstat(fsys, "dangling")
	fmt.Println(fi.ModTime().UTC())
	fmt.Println(layer.Chtimes(fsys, "dangling", time.Time{}, t) != nil)
	// Output:
	// 2001-02-03 04:05:06 +0000 UTC
	// true
}
