package fusefs_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

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

// A change made beside the mount, by the program that serves it, shows
// through the mount at once: the in-memory layer reports its changes
// (layer.WatchFS), and the mount tells the kernel to drop what it
// cached of them, however long its timeouts. Like ExampleMount, it needs
// /dev/fuse and root and is compiled, not run.
func ExampleMount_changesBeside() {
	dir, err := os.MkdirTemp("", "mnt")
	if err != nil {
		log.Fatal(err)
	}
	defer os.Remove(dir)
	tree := mem.New()
	tree.WriteFile("motd", []byte("hello\n"), 0o644)
	srv, err := fusefs.Mount(dir, tree, &fusefs.Options{AttrTimeout: time.Hour, EntryTimeout: time.Hour})
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		srv.Unmount()
		srv.Wait()
	}()
	data, _ := os.ReadFile(filepath.Join(dir, "motd"))
	fmt.Print(string(data))
	tree.WriteFile("motd", []byte("hello again\n"), 0o644)
	// The notification goes out from a goroutine of the mount's, a
	// moment after WriteFile returns.
	for range 1000 {
		if data, _ = os.ReadFile(filepath.Join(dir, "motd")); string(data) == "hello again\n" {
			break
		}
		time.Sleep(time.Millisecond)
	}
	fmt.Print(string(data))
}
