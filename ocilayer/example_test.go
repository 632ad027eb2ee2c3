package ocilayer_test

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io/fs"
	"log"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/ocilayer"
)

func ExampleImport() {
	// The base image: a lower layer.
	base := mem.New()
	base.MkdirAll("etc", 0o755)
	base.WriteFile("etc/motd", []byte("welcome\n"), 0o644)
	base.WriteFile("etc/hostname", []byte("base\n"), 0o644)

	// An image layer that deletes etc/motd and replaces etc/hostname.
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "etc/.wh.motd", Mode: 0o644})
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "etc/hostname", Mode: 0o644, Size: 4})
	tw.Write([]byte("app\n"))
	tw.Close()

	upper := mem.New()
	if err := ocilayer.Import(&buf, upper); err != nil {
		log.Fatal(err)
	}
	union := packfs.New(upper, base.Snapshot())
	entries, _ := fs.ReadDir(union, "etc")
	for _, e := range entries {
		data, _ := fs.ReadFile(union, "etc/"+e.Name())
		fmt.Printf("%s: %s", e.Name(), data)
	}
	// Output: hostname: app
}

func ExampleExport() {
	upper := mem.New()
	upper.MkdirAll("app", 0o755)
	layer.MarkOpaque(upper, "app")
	upper.WriteFile("app/main", []byte("v2"), 0o755)
	upper.Whiteout("old.conf")

	var buf bytes.Buffer
	if err := ocilayer.Export(&buf, upper.Snapshot()); err != nil {
		log.Fatal(err)
	}
	tr := tar.NewReader(&buf)
	for h, err := tr.Next(); err == nil; h, err = tr.Next() {
		fmt.Println(h.Name)
	}
	// Output:
	// app/
	// app/.wh..wh..opq
	// app/main
	// .wh.old.conf
}
