package packfs_test

import (
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer"
)

type recordingPublisher struct {
	fail bool
	got  []*packfs.Checkpoint
	data [][]byte // the top pack's bytes, as read through Open
}

var errPublish = errors.New("publish refused")

func (p *recordingPublisher) PublishCheckpoint(c *packfs.Checkpoint) error {
	if p.fail {
		return errPublish
	}
	f, err := c.Packs[0].Open()
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, 0, c.Packs[0].Size))
	if err != nil {
		return err
	}
	p.got = append(p.got, c)
	p.data = append(p.data, b)
	return nil
}

// TestIssue18Publisher: the store hands each checkpoint to its Publisher
// before its manifest names the pack; a refusal fails the checkpoint and
// loses nothing, and the next one takes a new generation.
func TestIssue18Publisher(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	pub := &recordingPublisher{}
	s, err := packfs.Open(dir, &packfs.Options{Publisher: pub, CheckpointBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := layer.WriteFile(s, "a", []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if len(pub.got) != 1 || pub.got[0].Generation != 1 || len(pub.got[0].Packs) != 1 || int64(len(pub.data[0])) != pub.got[0].Packs[0].Size {
		t.Fatalf("published %+v", pub.got)
	}
	pub.fail = true
	if err := layer.WriteFile(s, "b", []byte("2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(); !errors.Is(err, errPublish) {
		t.Fatalf("checkpoint with a refusing publisher: %v", err)
	}
	pub.fail = false
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	c := pub.got[len(pub.got)-1]
	if c.Generation != 3 || len(c.Packs) != 2 || c.Packs[1].Name != pub.got[0].Packs[0].Name {
		t.Fatalf("after a refusal: generation %d, packs %+v", c.Generation, c.Packs)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = packfs.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, want := range map[string]string{"a": "1", "b": "2"} {
		if got, err := s.ReadFile(name); err != nil || string(got) != want {
			t.Fatalf("%s after reopen: %q, %v", name, got, err)
		}
	}
}
