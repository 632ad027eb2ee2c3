package fusefs_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/packfs/packfs/fusefs"
	"github.com/packfs/packfs/layer/mem"
)

// Mount an in-memory layer, write to it with package os and read the
// layer. The example needs /dev/fuse and root, so it has no Output
// comment and is compiled, not run, by go test.
func ExampleMount() {
	dir, err := os.MkdirTemp("", "mnt")
	if err != nil {
		log.Fatal(err)
	}
	defer os.Remove(dir)
	tree := mem.New()
	srv, err := fusefs.Mount(dir, tree, nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hello"), []byte("hello, kernel\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := srv.Unmount(); err != nil {
		log.Fatal(err)
	}
	srv.Wait()
	data, _ := tree.ReadFile("hello")
	fmt.Print(string(data))
}
