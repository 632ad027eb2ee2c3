package packwriter_test

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

// A tree with an entry a pack cannot hold (a FIFO) and one the caller
// leaves out: WithSkip reports the first and goes on, WithFilter drops the
// second.
func ExampleWithSkip() {
	tree := fstest.MapFS{
		"a.txt":     {Data: []byte("alpha\n")},
		"pipe":      {Mode: fs.ModeNamedPipe},
		"build/x":   {Data: []byte("object\n")},
		"docs/b.md": {Data: []byte("bravo\n")},
	}
	var buf bytes.Buffer
	err := packwriter.Write(&buf, tree,
		packwriter.WithSkip(func(p string, err error) error {
			fmt.Println("skipped:", err)
			return nil
		}),
		packwriter.WithFilter(func(p string, _ fs.FileInfo) bool { return p != "build" }),
	)
	if err != nil {
		log.Fatal(err)
	}
	r, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	_ = fs.WalkDir(r, ".", func(p string, _ fs.DirEntry, err error) error {
		fmt.Println(p)
		return err
	})
	// Output:
	// skipped: pack pipe: a FIFO: packs hold regular files, directories, symlinks and whiteouts
	// .
	// a.txt
	// docs
	// docs/b.md
}

func ExampleWithCompression() {
	tree := fstest.MapFS{}
	for i := range 100 {
		tree[fmt.Sprintf("src/f%02d.go", i)] = &fstest.MapFile{Data: []byte(fmt.Sprintf("package src\n\n// F%d returns %d.\nfunc F%d() int { return %d }\n", i, i, i, i))}
	}
	var raw, small bytes.Buffer
	if err := packwriter.Write(&raw, tree); err != nil {
		log.Fatal(err)
	}
	if err := packwriter.Write(&small, tree, packwriter.WithCompression(3)); err != nil {
		log.Fatal(err)
	}
	r, err := packreader.OpenReaderAt(bytes.NewReader(small.Bytes()), int64(small.Len()))
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	data, _ := r.ReadFile("src/f42.go")
	fmt.Println(r.Version(), r.Compressed(), small.Len() < raw.Len())
	fmt.Printf("%s", data[len(data)-29:])
	// Output:
	// 3 true true
	// func F42() int { return 42 }
}

func ExampleWithFormat() {
	var buf bytes.Buffer
	tree := fstest.MapFS{"a.txt": {Data: []byte("A\n")}}
	if err := packwriter.Write(&buf, tree, packwriter.WithFormat(2)); err != nil {
		log.Fatal(err)
	}
	r, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	fmt.Println(r.Version())
	// Output: 2
}
