package mem_test

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

func ExampleNew() {
	fsys := mem.New()
	if err := fsys.MkdirAll("docs/guide", 0o755); err != nil {
		panic(err)
	}
	if err := fsys.WriteFile("docs/guide/intro.md", []byte("# Intro\n"), 0o644); err != nil {
		panic(err)
	}
	fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		fmt.Println(name, d.IsDir())
		return err
	})
	// Output:
	// . true
	// docs true
	// docs/guide true
	// docs/guide/intro.md false
}

func ExampleFS_Snapshot() {
	fsys := mem.New()
	fsys.WriteFile("config", []byte("v1"), 0o644)
	snap := fsys.Snapshot()
	fsys.WriteFile("config", []byte("v2"), 0o644)
	fsys.Remove("config")

	old, _ := fs.ReadFile(snap, "config")
	_, err := fs.Stat(fsys, "config")
	fmt.Printf("snapshot: %s; now: %v\n", old, err)
	// Output: snapshot: v1; now: stat config: no such file or directory
}

// Watch reports each change under the name the file has once it is
// made: the write through a handle opened before the rename names the
// file where it now is.
func ExampleFS_Watch() {
	fsys := mem.New()
	w, _ := fsys.Watch(nil)
	defer w.Close()
	fsys.WriteFile("draft", []byte("v1"), 0o644)
	f, _ := fsys.OpenFile("draft", os.O_WRONLY, 0)
	fsys.Rename("draft", "final")
	f.Write([]byte("v2"))
	f.Close()
	for _, c := range w.Changes() {
		switch c.Op {
		case layer.OpCreate:
			fmt.Println("made", c.Name)
		case layer.OpRename:
			fmt.Println("renamed", c.Name, "to", c.NewName)
		case layer.OpWrite:
			fmt.Println("wrote", c.Name)
		}
	}
	// Output:
	// made draft
	// renamed draft to final
	// wrote final
}
