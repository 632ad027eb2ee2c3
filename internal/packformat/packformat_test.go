package packformat_test

import (
	"bytes"
	"testing"
	"testing/fstest"

	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/packwriter"
)

// TestCheckTable finds the check table of packs of both versions, and
// refuses what is not a pack or has its footer cut off.
func TestCheckTable(t *testing.T) {
	tree := fstest.MapFS{"a": {Data: []byte("x")}, "d/b": {Data: []byte("y")}}
	for _, opts := range [][]packwriter.Option{{packwriter.WithFormat(2)}, nil, {packwriter.WithCompression(3)}} {
		var buf bytes.Buffer
		if err := packwriter.Write(&buf, tree, opts...); err != nil {
			t.Fatal(err)
		}
		data := buf.Bytes()
		foot := packformat.FooterSize
		if data[8] == packformat.Version3 {
			foot = packformat.FooterSize3
		}
		off, n, ok, err := packformat.CheckTable(bytes.NewReader(data), int64(len(data)))
		if err != nil || !ok || off+n != uint64(len(data)-foot) || n == 0 {
			t.Errorf("version %d: table at %d, %d bytes, %v %v; pack of %d bytes", data[8], off, n, ok, err, len(data))
		}
		if _, _, ok, _ := packformat.CheckTable(bytes.NewReader(data[:len(data)-1]), int64(len(data)-1)); ok {
			t.Errorf("version %d: a pack cut short has a check table", data[8])
		}
	}
	junk := bytes.Repeat([]byte("not a pack"), 50)
	if _, _, ok, err := packformat.CheckTable(bytes.NewReader(junk), int64(len(junk))); ok || err != nil {
		t.Errorf("junk: %v %v", ok, err)
	}
}
