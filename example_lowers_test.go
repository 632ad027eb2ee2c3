package packfs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// A store over a read-only pack, as overlayfs puts an upperdir over a
// lowerdir: removing a name of the pack is the store's change, durable
// like any other, and the pack itself never changes.
func ExampleOptions_lowers() {
	dir, err := os.MkdirTemp("", "packfs-lowers")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// A pack of a small tree, the lower.
	tree := mem.New()
	tree.WriteFile("motd", []byte("hello\n"), 0o644)
	tree.WriteFile("issue", []byte("PackFS\n"), 0o644)
	f, err := os.Create(filepath.Join(dir, "base.pack"))
	if err != nil {
		log.Fatal(err)
	}
	if err := packwriter.Write(f, tree.Snapshot()); err != nil {
		log.Fatal(err)
	}
	f.Close()
	base, err := packreader.Open(filepath.Join(dir, "base.pack"))
	if err != nil {
		log.Fatal(err)
	}
	defer base.Close()

	opts := &packfs.Options{Lowers: []fs.FS{base}}
	s, err := packfs.Open(filepath.Join(dir, "store"), opts)
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Remove("issue"); err != nil {
		log.Fatal(err)
	}
	if err := s.Close(); err != nil {
		log.Fatal(err)
	}

	// Opened again over the same pack, the removal holds.
	s, err = packfs.Open(filepath.Join(dir, "store"), opts)
	if err != nil {
		log.Fatal(err)
	}
	ents, _ := s.ReadDir(".")
	for _, e := range ents {
		fmt.Println(e.Name())
	}
	s.Close()
	in, _ := fs.ReadDir(base, ".")
	fmt.Println("the pack still holds", len(in))

	// Without its lowers the store refuses to open.
	_, err = packfs.Open(filepath.Join(dir, "store"), nil)
	fmt.Println(errors.Is(err, packfs.ErrLowers))
	// Output:
	// motd
	// the pack still holds 2
	// true
}
