package packreader_test

import (
	"bytes"
	"fmt"
	"io"
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

func ExampleWithCacheSize() {
	tree := fstest.MapFS{"big.txt": {Data: bytes.Repeat([]byte("a line of text\n"), 100000)}}
	var buf bytes.Buffer
	if err := packwriter.Write(&buf, tree, packwriter.WithCompression(3)); err != nil {
		log.Fatal(err)
	}
	// Keep at most 4 decompressed frames of 1 MiB.
	r, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()), packreader.WithCacheSize(4<<20))
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	f, _ := r.Open("big.txt")
	defer f.Close()
	line := make([]byte, 15)
	f.(io.ReaderAt).ReadAt(line, 15*50000) // decompresses one frame
	fmt.Printf("%q, %d bytes in a pack under 10 kB: %v\n", line, len(tree["big.txt"].Data), buf.Len() < 10000)
	// Output: "a line of text\n", 1500000 bytes in a pack under 10 kB: true
}
