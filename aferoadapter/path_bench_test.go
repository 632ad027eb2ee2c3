package aferoadapter_test

import (
	"strconv"
	"testing"

	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/layer/mem"
	"github.com/spf13/afero"
)

// BenchmarkPaths measures what the adapter adds per call on plain names
// (the fast path, which must cost what it did before resolution existed)
// and on decorated ones, over 1,000 files in a mem layer.
func BenchmarkPaths(b *testing.B) {
	fsys := aferoadapter.New(mem.New())
	fsys.Mkdir("/d", 0o755)
	var names []string
	for i := range 1000 {
		n := "/d/f" + strconv.Itoa(i)
		names = append(names, n)
		afero.WriteFile(fsys, n, []byte("x"), 0o644)
	}
	for _, c := range []struct {
		name  string
		spell func(string) string
	}{
		{"plain", func(n string) string { return n }},
		{"decorated", func(n string) string { return "/d/." + n[2:] }},
	} {
		spelled := make([]string, len(names))
		for i, n := range names {
			spelled[i] = c.spell(n)
		}
		b.Run("Stat/"+c.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				if _, err := fsys.Stat(spelled[i%len(spelled)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run("OpenClose/"+c.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				f, err := fsys.Open(spelled[i%len(spelled)])
				if err != nil {
					b.Fatal(err)
				}
				f.Close()
				i++
			}
		})
	}
}
