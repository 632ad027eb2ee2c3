package packfs_test

import (
	"fmt"
	"io/fs"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer/mem"
)

// A writable layer over a read-only base: changes go to the upper layer,
// the base stays as it was.
func ExampleNew() {
	base := mem.New()
	base.MkdirAll("etc", 0o755)
	base.WriteFile("etc/hosts", []byte("127.0.0.1 localhost\n"), 0o644)
	base.WriteFile("etc/motd", []byte("hello\n"), 0o644)

	fsys := packfs.New(mem.New(), base.Snapshot())
	fsys.WriteFile("etc/motd", []byte("changed\n"), 0o644) // copied up
	fsys.Remove("etc/hosts")                               // a whiteout
	fsys.WriteFile("etc/new", []byte("new\n"), 0o644)

	fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		fmt.Println(name)
		return err
	})
	motd, _ := fs.ReadFile(fsys, "etc/motd")
	orig, _ := fs.ReadFile(base, "etc/motd")
	fmt.Printf("union: %sbase: %s", motd, orig)
	// Output:
	// .
	// etc
	// etc/motd
	// etc/new
	// union: changed
	// base: hello
}
