package aferoadapter_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
	"github.com/spf13/afero"
)

// TestWatch checks that the adapter reports the changes of the layer it
// wraps, made through it, under io/fs names.
func TestWatch(t *testing.T) {
	a := aferoadapter.New(mem.New()).(*aferoadapter.Fs)
	w, err := a.Watch(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := afero.WriteFile(a, "/./f", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := w.Changes(); !slices.Equal(got, []layer.Change{{Op: layer.OpCreate, Name: "f"}, {Op: layer.OpWrite, Name: "f"}}) {
		t.Fatalf("changes %v", got)
	}
	ro := aferoadapter.New(mem.New().Snapshot()).(*aferoadapter.Fs)
	if _, err := ro.Watch(nil); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Watch of a snapshot: %v", err)
	}
}
