package dirfs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"

	"github.com/packfs/packfs/dirfs"
)

func ExampleNew() {
	dir, err := os.MkdirTemp("", "dirfs-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	fsys, err := dirfs.New(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer fsys.Close()

	if err := fsys.MkdirAll("etc/app", 0o755); err != nil {
		log.Fatal(err)
	}
	if err := fsys.WriteFile("etc/app/config", []byte("debug=true\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	data, _ := fs.ReadFile(fsys, "etc/app/config")
	fmt.Printf("%s", data)

	// A symlink is stored as given, but following it out of the root fails.
	fsys.Symlink("/etc/passwd", "etc/passwd")
	_, err = fsys.ReadFile("etc/passwd")
	fmt.Println(errors.Is(err, dirfs.ErrEscapes))
	_, err = fsys.Open("../outside")
	fmt.Println(errors.Is(err, dirfs.ErrEscapes))
	// Output:
	// debug=true
	// true
	// true
}
