package pathwalk

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

func TestNext(t *testing.T) {
	w := New("a/./../b")
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
	w := New("l/x")
	w.Next()
	if abs, err := w.Follow("/d/e", false); !abs || err != nil {
		t.Fatalf("Follow = %v, %v", abs, err)
	}
	var got []string
	for {
		elem, _, last := w.Next()
		got = append(got, elem)
		if last {
			break
		}
	}
	if s := strings.Join(got, "/"); s != "d/e/x" {
		t.Errorf("after Follow: %s", s)
	}
	w = New("l")
	for i := range MaxSymlinks + 1 {
		w.Next()
		_, err := w.Follow("l", true)
		if i < MaxSymlinks && err != nil || i == MaxSymlinks && !errors.Is(err, syscall.ELOOP) {
			t.Fatalf("hop %d: %v", i+1, err)
		}
	}
	w = New("l")
	w.Next()
	if _, err := w.Follow("", true); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("empty target: %v", err)
	}
}
