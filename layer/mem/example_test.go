package mem_test

import (
	"fmt"
	"io/fs"

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
