package packfs

import (
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"testing"

	"github.com/packfs/packfs/internal/testsize"
)

// TestHandleListOpenClose: the store's list of open files holds exactly
// the files not yet closed, whatever order they close in, a file closed
// twice included; and a checkpoint moves every one of them, so that each
// reads what was written after it opened.
func TestHandleListOpenClose(t *testing.T) {
	s, err := Open(t.TempDir(), &Options{Sync: SyncNone, CheckpointBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.WriteFile("f", []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	open := map[*storeFile]bool{}
	count := func() int {
		s.hmu.Lock()
		defer s.hmu.Unlock()
		n := 0
		for h := range s.handles.all() {
			if !open[h] {
				t.Fatalf("a closed or unknown file on the list")
			}
			n++
		}
		if n != s.handles.len() {
			t.Fatalf("list has %d files, len says %d", n, s.handles.len())
		}
		return n
	}
	var files []*storeFile
	for range 2000 {
		if len(files) == 0 || r.IntN(3) > 0 {
			f, err := s.OpenFile("f", os.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			h := f.(*storeFile)
			open[h] = true
			files = append(files, h)
			continue
		}
		i := r.IntN(len(files))
		h := files[i]
		files = append(files[:i], files[i+1:]...)
		delete(open, h)
		h.Close()
		if r.IntN(4) == 0 {
			h.Close() // a second close takes nothing else off the list
		}
	}
	if n := count(); n != len(files) {
		t.Fatalf("%d files on the list, %d open", n, len(files))
	}
	if err := s.WriteFile("f", []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	for _, h := range files {
		b, err := io.ReadAll(h)
		if err != nil || string(b) != "two" {
			t.Fatalf("a file open across the checkpoint read %q, %v", b, err)
		}
		h.Close()
	}
	if n := count(); n != 0 {
		t.Fatalf("%d files on the list after every close", n)
	}
}

// TestHandleListBesideCheckpoints opens and closes files on several
// goroutines while checkpoints move them (run it with -race).
func TestHandleListBesideCheckpoints(t *testing.T) {
	s, err := Open(t.TempDir(), &Options{Sync: SyncNone, CheckpointBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.WriteFile("f", []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				f, err := s.Open("f")
				if err != nil {
					t.Error(err)
					return
				}
				b, err := io.ReadAll(f)
				f.Close()
				if err != nil || string(b) != "data" {
					t.Errorf("read %q, %v", b, err)
					return
				}
			}
		})
	}
	rounds := 20
	if testsize.Short() {
		rounds = 6
	}
	for range rounds {
		if err := s.Checkpoint(); err != nil {
			t.Error(err)
			break
		}
	}
	close(stop)
	wg.Wait()
	s.hmu.Lock()
	n := s.handles.len()
	s.hmu.Unlock()
	if n != 0 {
		t.Fatalf("%d files left on the list", n)
	}
}
