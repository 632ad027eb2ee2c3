package pathwalk

import (
	"io/fs"
	"strings"
	"testing"
)

// validCases are decorated names of every kind that fs.ValidPath tells
// apart: empty and dot elements at each end, doubled and trailing
// slashes, bytes that are not UTF-8, and names at the length limits.
var validCases = []string{
	"", ".", "..", "/", "//", "a", "a/", "/a", "a//b", "a/./b", "a/../b",
	"./a", "a/.", "../a", "a/..", ".a", "..a", "a.", "a..", "...", "a/.../b",
	"a/b/c", "é", "a/é/b", "\xff", "a/\xff", "\xc3", "a\x00b", "a\\b",
	strings.Repeat("a", MaxName), strings.Repeat("a/", 2000) + "a",
	strings.Repeat("é", 300), strings.Repeat("x", MaxPath),
}

func TestValidPathAsFS(t *testing.T) {
	for _, name := range validCases {
		if got, want := ValidPath(name), fs.ValidPath(name); got != want {
			t.Errorf("ValidPath(%q) = %v, fs.ValidPath says %v", name, got, want)
		}
		want := fs.ValidPath(name) && name != "." && !strings.Contains(name, "/")
		if got := ValidElem(name); got != want {
			t.Errorf("ValidElem(%q) = %v, want %v", name, got, want)
		}
	}
}

func FuzzValidPath(f *testing.F) {
	for _, name := range validCases {
		f.Add(name)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if got, want := ValidPath(name), fs.ValidPath(name); got != want {
			t.Fatalf("ValidPath(%q) = %v, fs.ValidPath says %v", name, got, want)
		}
		want := fs.ValidPath(name) && name != "." && !strings.Contains(name, "/")
		if got := ValidElem(name); got != want {
			t.Fatalf("ValidElem(%q) = %v, want %v", name, got, want)
		}
	})
}

func BenchmarkValidPath(b *testing.B) {
	const name = "run/f0000123"
	b.Run("pathwalk", func(b *testing.B) {
		for b.Loop() {
			ValidPath(name)
		}
	})
	b.Run("fs", func(b *testing.B) {
		for b.Loop() {
			fs.ValidPath(name)
		}
	})
}
