package wal

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/packfs/packfs/vfs"
	"github.com/packfs/packfs/vfs/vfstest"
)

// TestAppendMapped: a large entry's data comes back as the segment's
// mapped pages, equal to what was appended; a small one, one that
// straddles a window and one on a file system that cannot map come back
// without a view; a view stays readable after its segment is rotated
// away, dropped and the log closed; and replay gives every entry.
func TestAppendMapped(t *testing.T) {
	dir, err := vfs.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l, _, err := replayAll(t, dir, Options{Preallocate: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var want []unit
	type kept struct {
		view, data []byte
		m          *Mapping
	}
	var views []kept
	for i := range 12 {
		head := []byte{'h', byte(i)}
		data := bytes.Repeat([]byte{byte(i), 'd'}, 20<<10+i*1000) // 40 KiB and more
		if i%4 == 3 {
			data = data[:100] // small: buffered, no view
		}
		want = append(want, unit{append(bytes.Clone(head), data...)})
		p, view, m, err := l.AppendMapped(head, data)
		if err != nil {
			t.Fatal(err)
		}
		if p != l.End() {
			t.Fatalf("entry %d: position %x, the log ends at %x", i, p, l.End())
		}
		switch {
		case len(data) < directMin && (view != nil || m != nil):
			t.Fatalf("entry %d of %d bytes: a view of a buffered entry", i, len(data))
		case len(data) >= directMin && (m == nil || !bytes.Equal(view, data) || cap(view) != len(view)):
			t.Fatalf("entry %d of %d bytes: view of %d bytes (cap %d), mapping %v", i, len(data), len(view), cap(view), m)
		case m != nil:
			views = append(views, kept{view, bytes.Clone(data), m})
		}
		clear(data) // the caller's buffer is reused: the view is the log's
		if i == 5 {
			if err := l.Sync(p); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
	}
	first := l.End().Segment()
	if err := l.Drop(first); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	runtime.GC() // the log's own pointers to its windows are weak
	for i, v := range views {
		if !bytes.Equal(v.view, v.data) {
			t.Fatalf("view %d changed after its segment was dropped and the log closed", i)
		}
	}
	_, got, err := replayAll(t, dir, Options{ReadOnly: true, First: first})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want)-6 { // the first six were dropped
		t.Fatalf("replay gave %d units, want %d", len(got), len(want)-6)
	}
	for i, u := range got {
		if !bytes.Equal(u[0], want[i+6][0]) {
			t.Fatalf("unit %d differs", i)
		}
	}

	// A window's edge: the view would straddle two mappings.
	if v, m := l.view(l.id, mapWindow-10, 20); v != nil || m != nil {
		t.Fatal("a view across a window's edge")
	}

	// A file system that cannot map: no view, the entry logged all the
	// same.
	ml, _, err := replayAll(t, vfstest.NewMemFS(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte{1}, directMin)
	if _, view, m, err := ml.AppendMapped([]byte("h"), data); err != nil || view != nil || m != nil {
		t.Fatalf("on a file system without mmap: view %d bytes, mapping %v, %v", len(view), m, err)
	}
	ml.Close()
}

// TestMappingUnmapped: once no Mapping of a window is reachable, the
// garbage collector unmaps it and the log maps it again for the next view.
func TestMappingUnmapped(t *testing.T) {
	dir, err := vfs.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l, _, err := replayAll(t, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	data := bytes.Repeat([]byte{3}, directMin)
	_, _, m, err := l.AppendMapped(nil, data)
	if err != nil || m == nil {
		t.Fatalf("no mapping: %v", err)
	}
	m = nil
	for range 5 {
		runtime.GC()
	}
	k := windowKey{l.id, 0}
	l.mapMu.Lock()
	gone := l.windows[k].Value() == nil
	l.mapMu.Unlock()
	if !gone {
		t.Fatal("the window is still mapped with no Mapping of it reachable")
	}
	_, view, m2, err := l.AppendMapped(nil, data)
	if err != nil || m2 == nil || !bytes.Equal(view, data) {
		t.Fatalf("mapping again: %v", err)
	}
}
