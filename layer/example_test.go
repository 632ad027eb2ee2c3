package layer_test

import (
	"fmt"
	"io/fs"

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
