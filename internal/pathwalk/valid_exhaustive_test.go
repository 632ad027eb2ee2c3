package pathwalk

import (
	"io/fs"
	"testing"
)

// TestValidPathExhaustive: ValidPath and ValidElem agree with fs.ValidPath
// on every name of up to 7 bytes over an alphabet of the bytes that
// matter: a letter, '.', '/', NUL, a two-byte UTF-8 sequence's halves
// (valid together, invalid apart) and a byte never valid in UTF-8.
func TestValidPathExhaustive(t *testing.T) {
	alphabet := []byte{'a', '.', '/', 0, 0xc3, 0xa9, 0xff}
	name := make([]byte, 0, 7)
	n := 0
	var walk func()
	walk = func() {
		n++
		s := string(name)
		if got, want := ValidPath(s), fs.ValidPath(s); got != want {
			t.Fatalf("ValidPath(%q) = %v, fs.ValidPath says %v", s, got, want)
		}
		wantElem := fs.ValidPath(s) && s != "." && !containsSlash(s)
		if got := ValidElem(s); got != wantElem {
			t.Fatalf("ValidElem(%q) = %v, want %v", s, got, wantElem)
		}
		if len(name) == cap(name) {
			return
		}
		for _, c := range alphabet {
			name = append(name, c)
			walk()
			name = name[:len(name)-1]
		}
	}
	walk()
	if n != 960800 { // 7^0 + ... + 7^7
		t.Fatalf("%d names checked", n)
	}
}

func containsSlash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return true
		}
	}
	return false
}
