package packsize

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/packfs/packfs/internal/testsize"
)

// TestGroupingBeatsDictionary is the measurement FORMAT.md records: the
// small files (at most 4 KiB) of Go's src compressed one by one, one by
// one with a dictionary of samples, and grouped in frames of 64 KiB as
// compressed packs group them. Grouping must win. The quick run takes the first
// 1,000 files.
func TestGroupingBeatsDictionary(t *testing.T) {
	var files [][]byte
	root := filepath.Join(goRoot(t), "src")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || testsize.Short() && len(files) >= 1000 {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.Size() <= 4096 {
			if b, err := os.ReadFile(p); err == nil {
				files = append(files, b)
			}
		}
		return nil
	})
	if err != nil || len(files) < 100 {
		t.Fatalf("%d small files under %s: %v", len(files), root, err)
	}
	level := zstd.EncoderLevelFromZstd(3)
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithEncoderCRC(false))
	if err != nil {
		t.Fatal(err)
	}
	raw, alone, grouped := 0, 0, 0
	var cur []byte
	for _, f := range files {
		raw += len(f)
		alone += len(enc.EncodeAll(f, nil))
		if len(cur)+len(f) > 64<<10 {
			grouped += len(enc.EncodeAll(cur, nil))
			cur = cur[:0]
		}
		cur = append(cur, f...)
	}
	grouped += len(enc.EncodeAll(cur, nil))
	var hist []byte
	var samples [][]byte
	for i := 0; i < len(files); i += 20 {
		samples = append(samples, files[i])
		if len(hist) < 110<<10 {
			hist = append(hist, files[i]...)
		}
	}
	dict, err := zstd.BuildDict(zstd.BuildDictOptions{ID: 1, Contents: samples, History: hist, Offsets: [3]int{1, 4, 8}, Level: level})
	if err != nil {
		t.Fatal(err)
	}
	denc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithEncoderCRC(false), zstd.WithEncoderDict(dict))
	if err != nil {
		t.Fatal(err)
	}
	withDict := 0
	for _, f := range files {
		withDict += len(denc.EncodeAll(f, nil))
	}
	t.Logf("%d files, %d bytes: alone %d, with a %d-byte dictionary %d (plus the dictionary), grouped %d",
		len(files), raw, alone, len(dict), withDict, grouped)
	if grouped >= withDict || withDict >= alone {
		t.Errorf("grouped %d, dictionary %d, alone %d: want grouped < dictionary < alone", grouped, withDict, alone)
	}
}
