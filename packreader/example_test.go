package packreader_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"testing/fstest"

	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	name := filepath.Join(dir, "site.pack")
	tree := fstest.MapFS{
		"index.html":     {Data: []byte("<h1>hi</h1>\n")},
		"static/app.css": {Data: []byte("body{}\n")},
	}
	if err := packwriter.WriteFile(name, tree); err != nil {
		log.Fatal(err)
	}

	r, err := packreader.Open(name)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	_ = fs.WalkDir(r, ".", func(p string, d fs.DirEntry, err error) error {
		fmt.Println(p)
		return err
	})
	// Output:
	// .
	// index.html
	// static
	// static/app.css
}

func ExampleOpenReaderAt() {
	var buf bytes.Buffer
	if err := packwriter.Write(&buf, fstest.MapFS{"a.txt": {Data: []byte("A\n")}}); err != nil {
		log.Fatal(err)
	}
	r, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	data, err := r.ReadFile("a.txt")
	fmt.Printf("%q %v\n", data, err)
	// Output: "A\n" <nil>
}
