package pathwalk

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

func walker(t *testing.T, name string) Walker {
	t.Helper()
	w, err := New(name)
	if err != nil {
		t.Fatalf("New(%q): %v", name, err)
	}
	return w
}

// elems reads the rest of w's elements.
func elems(w *Walker) []string {
	var got []string
	for {
		elem, _, last := w.Next()
		got = append(got, elem)
		if last {
			return got
		}
	}
}

func TestNext(t *testing.T) {
	w := walker(t, "a/./../b")
	var got []string
	for {
		elem, step, last := w.Next()
		got = append(got, elem+":"+[]string{"stay", "up", "down"}[step])
		if last {
			break
		}
	}
	if s := strings.Join(got, " "); s != "a:down .:stay ..:up b:down" {
		t.Errorf("elements: %s", s)
	}
}

func TestFollow(t *testing.T) {
	w := walker(t, "l/x")
	w.Next()
	if abs, err := w.Follow("/d/e", false); !abs || err != nil {
		t.Fatalf("Follow = %v, %v", abs, err)
	}
	if s := strings.Join(elems(&w), "/"); s != "d/e/x" {
		t.Errorf("after Follow: %s", s)
	}
	w = walker(t, "l")
	for i := range MaxSymlinks + 1 {
		w.Next()
		_, err := w.Follow("l", true)
		if i < MaxSymlinks && err != nil || i == MaxSymlinks && !errors.Is(err, syscall.ELOOP) {
			t.Fatalf("hop %d: %v", i+1, err)
		}
	}
	w = walker(t, "l")
	w.Next()
	if _, err := w.Follow("", true); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("empty target: %v", err)
	}
}

// Targets nest: a link inside a target is read before the rest of that
// target, which is read before the rest of the path.
func TestFollowNested(t *testing.T) {
	w := walker(t, "a/l/z")
	w.Next() // a
	w.Next() // l
	if _, err := w.Follow("b/m/y/", false); err != nil {
		t.Fatal(err)
	}
	w.Next() // b
	w.Next() // m
	if _, err := w.Follow("c/d", false); err != nil {
		t.Fatal(err)
	}
	if s := strings.Join(elems(&w), "/"); s != "c/d/y/z" {
		t.Errorf("nested: %s", s)
	}
	// A target with a trailing slash, last in the path, ends there.
	w = walker(t, "l")
	w.Next()
	if _, err := w.Follow("d/", true); err != nil {
		t.Fatal(err)
	}
	if s := strings.Join(elems(&w), ","); s != "d" {
		t.Errorf("trailing slash: %s", s)
	}
}

// TestIssue14PathMax: Linux's PATH_MAX bounds paths and targets.
func TestIssue14PathMax(t *testing.T) {
	long := strings.Repeat("a/", MaxPath/2)
	if _, err := New(long[:MaxPath]); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Errorf("New of %d bytes: %v", MaxPath, err)
	}
	if _, err := New(long[:MaxPath-1]); err != nil {
		t.Errorf("New of %d bytes: %v", MaxPath-1, err)
	}
	w := walker(t, "l/x")
	w.Next()
	if _, err := w.Follow(long[:MaxPath], false); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Errorf("Follow of %d bytes: %v", MaxPath, err)
	}
}

// TestIssue14FollowLinear: following a link leaves what is left of the
// path where it is, so 40 hops through "l/" + "./"×N cost no copies of it.
func TestIssue14FollowLinear(t *testing.T) {
	target := "l/" + strings.Repeat("./", MaxPath/2-2)
	allocs := testing.AllocsPerRun(10, func() {
		w, _ := New("l")
		var err error
		for err == nil {
			elem, _, last := w.Next()
			if elem == "l" {
				_, err = w.Follow(target, last)
			}
		}
		if !errors.Is(err, syscall.ELOOP) {
			t.Fatalf("err = %v", err)
		}
	})
	// The pending stack grows by doubling: a handful of allocations.
	if allocs > 10 {
		t.Errorf("%v allocations for 40 hops", allocs)
	}
}
