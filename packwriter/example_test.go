package packwriter_test

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"testing/fstest"

	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

func ExampleWrite() {
	tree := fstest.MapFS{
		"hello.txt":    {Data: []byte("hello\n")},
		"docs/hi.txt":  {Data: []byte("hello\n")}, // stored once
		"docs/bye.txt": {Data: []byte("bye\n")},
	}
	var buf bytes.Buffer
	if err := packwriter.Write(&buf, tree); err != nil {
		log.Fatal(err)
	}
	r, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	data, _ := r.ReadFile("docs/hi.txt")
	fmt.Printf("%s", data)
	// Output: hello
}

func ExampleWriteFile() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	name := filepath.Join(dir, "tree.pack")
	tree := fstest.MapFS{"a/b.txt": {Data: []byte("b\n")}}
	var entries int
	progress := packwriter.WithProgress(func(p packwriter.Progress) { entries = p.Entries })
	if err := packwriter.WriteFile(name, tree, progress); err != nil {
		log.Fatal(err)
	}
	fmt.Println("entries written:", entries)
	// Output: entries written: 3
}
