package aferoadapter_test

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/layer/mem"
	"github.com/spf13/afero"
)

// saveReport is a typical afero program: it takes the Fs as a parameter.
func saveReport(fsys afero.Fs, name string, data []byte) error {
	if err := fsys.MkdirAll("/reports", 0o755); err != nil {
		return err
	}
	return afero.WriteFile(fsys, "/reports/"+name, data, 0o644)
}

// Swapping afero.NewMemMapFs() for aferoadapter.New(mem.New()) is the
// whole migration; the program then sees what it would see on the OS.
func Example() {
	// fsys := afero.NewMemMapFs()
	fsys := aferoadapter.New(mem.New())

	if err := saveReport(fsys, "q1.txt", []byte("revenue: 42\n")); err != nil {
		panic(err)
	}
	data, _ := afero.ReadFile(fsys, "/reports/q1.txt")
	fmt.Printf("%s", data)

	// As on the OS, and unlike MemMapFs: no parents made silently, and
	// no removal of a directory that is not empty.
	_, err := fsys.Create("/missing/dir/file")
	fmt.Println(errors.Is(err, fs.ErrNotExist), err)
	err = fsys.Remove("/reports")
	fmt.Println(err)
	// Output:
	// revenue: 42
	// true open /missing/dir/file: no such file or directory
	// remove /reports: directory not empty
}

// Layer stacks an afero backend under PackFS code written for io/fs.
func ExampleLayer() {
	base := afero.NewMemMapFs()
	afero.WriteFile(base, "/etc/motd", []byte("hello\n"), 0o644)

	l := aferoadapter.Layer(base)
	data, err := fs.ReadFile(l, "etc/motd")
	fmt.Printf("%s%v\n", data, err)
	_, err = l.Stat("etc/nothing")
	fmt.Println(err)
	err = l.Whiteout("etc/motd")
	fmt.Println(errors.Is(err, errors.ErrUnsupported))
	// Output:
	// hello
	// <nil>
	// open etc/nothing: file does not exist
	// true
}
